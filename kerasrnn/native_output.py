"""Output that native code writes straight to file descriptor 2, held back.

TensorFlow's C++ (its start-up notices, the LiteRT converter's log lines)
and the LiteRT interpreter (its XNNPACK notice, printed at its first call
whatever the log level) write to descriptor 2 directly, where Python's
`sys.stderr` redirection and logging settings do not reach. A step that
runs them for its own purposes, not the user's, holds that output back and
shows it only if the step fails.

TensorFlow prints its start-up notices (oneDNN, the CUDA stub, absl's
"before absl::InitializeLog()" notice, a failed `cuInit` on a machine
without a GPU) as it loads, before any log level of the program applies.
`import kerasrnn` calls `hold_back_tensorflow_start_up`: when TensorFlow
loads later in the process, whatever imports it, they are held back and
shown only if loading fails. `kerasrnn-train` holds them back itself
unless `--verbose`. This module imports nothing of TensorFlow or Keras, so
that both can use it before TensorFlow loads.
"""

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

from kerasrnn.first_import import around_first_import

__all__ = ["LOG_LEVEL", "QUIET_LOG_LEVEL", "held_back_stderr", "hold_back_tensorflow_start_up"]

#: The environment variable TensorFlow reads its C++ log level from, once,
#: as it loads. A program that sets it has chosen what TensorFlow shows:
#: nothing is held back from it.
LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"

#: Errors only: TensorFlow's informational lines and warnings are hidden.
QUIET_LOG_LEVEL = "2"

#: Whether `hold_back_tensorflow_start_up` last asked for the start-up held
#: back, and whether it has put its finder in `sys.meta_path`.
_start_up_held_back = False
_finder_installed = False


@contextlib.contextmanager
def held_back_stderr(enabled: bool) -> Iterator[None]:
    """Inside the block, file descriptor 2 (C++ included) goes to a
    temporary file, written out to the real stderr only if the block
    raises; with `enabled` False the block runs untouched."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    held = tempfile.TemporaryFile()
    os.dup2(held.fileno(), 2)
    failed = True
    try:
        yield
        failed = False
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        if failed:
            held.seek(0)
            os.write(2, held.read())
        held.close()


def hold_back_tensorflow_start_up(enabled: bool = True) -> None:
    """Hold back TensorFlow's start-up notices when it loads in this process.

    From this call on, the first import of TensorFlow (by Keras, by
    kerasrnn or by the program) runs inside `held_back_stderr`, and lists
    the devices there, since a failed `cuInit` is printed when devices are
    first listed (listing leaves the runtime unconfigured). Nothing is held
    back if `TF_CPP_MIN_LOG_LEVEL` is set when TensorFlow loads, and the log
    level is left as it is: setting it here would quiet TensorFlow's later
    warnings in the whole process. Nothing happens once TensorFlow is loaded.

    Args:
        enabled: False shows the notices after all (`kerasrnn-train
            --verbose`).
    """
    global _start_up_held_back, _finder_installed
    _start_up_held_back = enabled
    if enabled and not _finder_installed:
        around_first_import("tensorflow", _tensorflow_start_up)
        _finder_installed = True


@contextlib.contextmanager
def _tensorflow_start_up() -> Iterator[None]:
    """Around TensorFlow's loading: its notices held back, as
    `hold_back_tensorflow_start_up` and the environment then say."""
    enabled = _start_up_held_back and LOG_LEVEL not in os.environ
    with held_back_stderr(enabled):
        yield
        if enabled:
            sys.modules["tensorflow"].config.list_physical_devices()
