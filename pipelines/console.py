"""What `kerasrnn-train` shows: TensorFlow's start-up held back, and the summary a run ends with.

TensorFlow writes its start-up messages (oneDNN, the CUDA stub, absl's
"before absl::InitializeLog()" notice, a failed `cuInit` on a machine
without a GPU) from C++ straight to file descriptor 2, before its log level
takes effect: `TF_CPP_MIN_LOG_LEVEL` hides what it logs later, not these.
So unless the user asks for them (`--verbose`, or setting
`TF_CPP_MIN_LOG_LEVEL`, which is then left as it is), kerasrnn's
`held_back_stderr` sends descriptor 2 to a temporary file while TensorFlow
and the task load and shows it only if loading fails. The LiteRT
interpreter announces its XNNPACK delegate the same way, whatever the log
level, at its first call: the steps that run it do so inside
`held_back_native_output`.

A task says what it does before each long step (`progress`): what it
trains and where its outputs go, then, after the epoch lines, each export
and the decoding of the test words, one plain line each, so that a log
file shows where a run is.

The summary is the run's headline metric beside its baseline, where its
outputs are (as its `run.json` lists them) and a command that serves each
exported model: the SavedModel with TensorFlow alone, the LiteRT model
with `ai-edge-litert` alone.
"""

import contextlib
import json
import os
import pathlib
import shlex
from collections.abc import MutableMapping
from typing import Any, TypeAlias

from kerasrnn.native_output import (
    LOG_LEVEL,
    QUIET_LOG_LEVEL,
    held_back_stderr,
    hold_back_tensorflow_start_up,
)
from kerasrnn_pipelines import run_directory as layout

#: A task's `HEADLINE_METRIC`: `(metric, baseline metric, better)`, with
#: `better` `"lower"` or `"higher"`.
Headline: TypeAlias = tuple[str, str, str]

#: The text a string input of the serving command is given.
EXAMPLE_TEXT = "hello"

#: Whether this process holds native libraries' start-up messages back, as
#: `hold_back_tensorflow` decided (file descriptor 2 is the process's).
_holding_back = False


def hold_back_tensorflow(
    verbose: bool, environ: MutableMapping[str, str] | None = None
) -> bool:
    """Whether TensorFlow's start-up is held back; if so, quiet its log.

    Call before TensorFlow is imported: it reads its log level once.

    Args:
        verbose: `--verbose`: show everything (what `import kerasrnn`
            would hold back too).
        environ: The environment; `os.environ` if None. Gains
            `TF_CPP_MIN_LOG_LEVEL=2` when the start-up is held back.

    Returns:
        False when `verbose` or when `TF_CPP_MIN_LOG_LEVEL` is already set
        (the user chose what TensorFlow shows); True otherwise.
    """
    global _holding_back
    environ = os.environ if environ is None else environ
    _holding_back = not verbose and LOG_LEVEL not in environ
    if _holding_back:
        environ[LOG_LEVEL] = QUIET_LOG_LEVEL
    if verbose:
        # Importing kerasrnn asked for the start-up held back.
        hold_back_tensorflow_start_up(False)
    return _holding_back


def held_back_native_output() -> contextlib.AbstractContextManager[None]:
    """`held_back_stderr`, enabled as `hold_back_tensorflow` last decided
    (not at all in a process that never called it)."""
    return held_back_stderr(_holding_back)


def start_tensorflow() -> None:
    """Import TensorFlow and find the devices, so that what they print
    happens now (a failed `cuInit` is printed when devices are first
    listed). Listing physical devices leaves the runtime unconfigured, as
    `MultiWorkerMirroredStrategy` needs it."""
    import tensorflow as tf

    tf.config.list_physical_devices()


def progress(line: str, chief: bool = True) -> None:
    """Print `line`, what the run does next, on standard output, flushed
    (as the epoch lines are): a log file shows it before the step starts.

    Args:
        line: One line of text.
        chief: Whether this process writes the run's outputs; the other
            workers of a multi-worker run say nothing, or every line would
            appear once per worker.
    """
    if chief:
        print(line, flush=True)


def headline_line(headline: Headline, report: dict[str, Any]) -> str:
    """`test_rmse 21.3 against the baseline's persistence_rmse 25.3 ...`."""
    name, baseline, better = headline
    verdict = (
        "worse than the baseline"
        if report.get("worse_than_baseline")
        else "at least as good as the baseline"
    )
    return (
        f"{name} {report[name]:.4g} against the baseline's {baseline} "
        f"{report[baseline]:.4g} ({better} is better): {verdict}"
    )


def serving_command(saved_model: pathlib.Path) -> str:
    """A shell command that serves one example with the SavedModel at
    `saved_model`, needing TensorFlow only; its inputs are those of the
    `serving_default` signature (text, or zeros of each input's shape with
    1 for every unknown size)."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((saved_model / "saved_model.pb").read_bytes())
    signature = saved.meta_graphs[0].signature_def["serving_default"]
    arguments = []
    for name, tensor in sorted(signature.inputs.items()):
        dtype = tf.dtypes.as_dtype(tensor.dtype)
        if dtype == tf.string:
            value = f"tf.constant([{json.dumps(EXAMPLE_TEXT)}])"
        else:
            shape = [max(dimension.size, 1) for dimension in tensor.tensor_shape.dim]
            value = f"tf.zeros({shape}, tf.{dtype.name})"
        arguments.append(f"{name}={value}")
    program = (
        "import tensorflow as tf; "
        f"serve = tf.saved_model.load({json.dumps(str(saved_model))})"
        '.signatures["serving_default"]; '
        f"print(serve({', '.join(arguments)}))"
    )
    return f"python -c {shlex.quote(program)}"


def litert_command(model: pathlib.Path) -> str:
    """A shell command that opens the LiteRT model at `model` with
    `ai-edge-litert` alone and prints its signatures."""
    program = (
        "from ai_edge_litert.interpreter import Interpreter; "
        f"print(Interpreter(model_path={json.dumps(str(model))}).get_signature_list())"
    )
    return f"python -c {shlex.quote(program)}"


def summary(
    task: str, report: dict[str, Any], headline: Headline | None, directory: pathlib.Path
) -> list[str]:
    """The lines a finished run ends with.

    Args:
        task: The task's name.
        report: What `metrics.json` holds.
        headline: The task's `HEADLINE_METRIC`, or None.
        directory: The run directory (`--out`), a `pathlib.Path`.

    Returns:
        A list of lines: the headline beside its baseline, the outputs,
        and a command per exported model.
    """
    lines = [f"kerasrnn-train {task}: done in {report['wall_time_s']:.1f} s"]
    if headline is not None:
        lines.append(f"  {headline_line(headline, report)}")
    outputs = sorted(
        name
        for name in (layout.read_record(directory) or {}).get("outputs", [])
        if isinstance(name, str) and (directory / name).exists()
    )
    shown = [name + ("/" if (directory / name).is_dir() else "") for name in outputs]
    lines.append(f"  outputs in {directory}/: {', '.join(shown)}")
    if "saved_model" in outputs:
        lines.append(
            "  serve the SavedModel (TensorFlow only): "
            + serving_command(directory / "saved_model")
        )
    if "model.tflite" in outputs:
        lines.append(
            "  run the LiteRT model (ai-edge-litert only): "
            + litert_command(directory / "model.tflite")
        )
    return lines
