"""Output that native code writes straight to file descriptor 2, held back.

TensorFlow's C++ (its start-up notices, the LiteRT converter's log lines)
and the LiteRT interpreter (its XNNPACK notice, printed at its first call
whatever the log level) write to descriptor 2 directly, where Python's
`sys.stderr` redirection and logging settings do not reach. A step that
runs them for its own purposes, not the user's, holds that output back and
shows it only if the step fails.

`kerasrnn-train` holds back TensorFlow's start-up the same way with a
function of its own (`kerasrnn_pipelines.console.held_back_stderr`): it must
do so before TensorFlow loads, and importing anything of kerasrnn loads
Keras and with it TensorFlow.
"""

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["held_back_stderr"]

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
