"""Run a recurrent LiteRT model one time step at a time, at constant memory.

    python examples/litert_streaming.py MODEL.tflite SEQUENCE.npy OUTPUTS.npy

reads a sequence (`[time, *features]`, or `[batch, time, *features]`) from
a NumPy file, feeds it to the `step` signature of a file written by
`kerasrnn.export_litert(model, path, streaming=True)` one step after
another, carrying the recurrent states from each call to the next, and
saves the outputs of every step as `[batch, time, *output]`. It needs only
NumPy and `ai-edge-litert`: no TensorFlow, no kerasrnn.

The contract it follows: inputs `inputs` (one step) and `state_0`,
`state_1`, ... (zeros start a sequence); outputs `outputs` and the new
`state_0`, `state_1`, ..., the same names and shapes. A device streaming
from a sensor does the same, one call per sample, and keeps only the
states between calls.

What the file cannot run is refused before the first step, in one line on
stderr that names the file and what does not match, with exit status 1
(2 for a wrong command line): a sequence without rows or time steps, steps
of another shape than the model's, another batch than a file exported
with a fixed `batch_size` takes (`fused=True` needs one), a MODEL that is
a folder or not a LiteRT file, a SEQUENCE that is not a `.npy` array of
numbers, an OUTPUTS in a folder that does not exist.
"""

import argparse
import os
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter

STEP = "step"


class Refused(Exception):
    """What the files given cannot do; the message is one line."""


def stream(model_path, sequences):
    """The `step` signature of `model_path` run over `sequences`.

    Args:
        model_path: A `.tflite` file written with `streaming=True`.
        sequences: Array `[batch, time, *features]` of the step input's dtype.

    Yields:
        Each step's `outputs`, `[batch, *output]`, in time order.
    """
    run = Interpreter(model_path=model_path).get_signature_runner(STEP)
    states = {
        name: np.zeros([len(sequences), *detail["shape_signature"][1:]], detail["dtype"])
        for name, detail in run.get_input_details().items()
        if name.startswith("state_")
    }
    for time in range(sequences.shape[1]):
        result = run(inputs=sequences[:, time], **states)
        states = {name: result[name] for name in states}
        yield result["outputs"]


def open_model(path):
    """The `Interpreter` of `path`, which must have a `step` signature."""
    if os.path.isdir(path):
        raise Refused(f"{path} is a folder; MODEL is a .tflite file")
    try:
        interpreter = Interpreter(model_path=path)
    except (ValueError, RuntimeError) as error:
        # LiteRT's message runs two sentences together without a space.
        reason = str(error).split(".The model")[0]
        raise Refused(f"{path} is not a LiteRT model it can read ({reason})") from None
    signatures = interpreter.get_signature_list()
    if STEP not in signatures:
        raise Refused(
            f"{path} has no '{STEP}' signature (it has {sorted(signatures)}): "
            "export it with streaming=True"
        )
    return interpreter


def fixed_batch(interpreter):
    """The batch size the file is fixed at, or None where it takes any:
    the first dimension of its signatures' inputs, dynamic (-1) unless the
    file was exported with a `batch_size`."""
    for name in interpreter.get_signature_list():
        details = interpreter.get_signature_runner(name).get_input_details()
        for detail in details.values():
            if detail["shape_signature"][0] != -1:
                return int(detail["shape_signature"][0])
    return None


def load_sequence(path):
    """The array in the `.npy` file at `path`: numbers, not objects."""
    try:
        sequence = np.load(path)
    except OSError as error:
        raise Refused(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError:
        # np.load takes a file that is not .npy for a pickle, and refuses it.
        raise Refused(
            f"{path} is not a NumPy .npy file (write the sequence with numpy.save)"
        ) from None
    if not isinstance(sequence, np.ndarray) or sequence.dtype.kind not in "biuf":
        raise Refused(f"{path} holds {sequence.dtype}, not numbers")
    return sequence


def check_sequence(sequence, path, step_input, batch, model_path):
    """`sequence` as `[batch, time, *features]` of the step input's dtype.

    Args:
        sequence: The array read from `path`.
        path: SEQUENCE, for the messages.
        step_input: The input details of the `step` signature's `inputs`.
        batch: The batch size the file is fixed at, or None.
        model_path: MODEL, for the messages.
    """
    step_shape = step_input["shape_signature"].tolist()
    if sequence.ndim == len(step_shape):
        sequence = sequence[None]
    if sequence.ndim != len(step_shape) + 1:
        raise Refused(
            f"{path} has shape {sequence.shape}; {model_path} takes steps of shape "
            f"{step_shape}, so a sequence is [time, *features] or [batch, time, *features]"
        )
    rows, steps, features = sequence.shape[0], sequence.shape[1], list(sequence.shape[2:])
    wanted = step_shape[1:]
    if any(size not in (-1, have) for size, have in zip(wanted, features)):
        raise Refused(
            f"{path} has steps of shape {features} (sequence shape {sequence.shape}); "
            f"{model_path} takes steps of shape {wanted}"
        )
    if rows == 0:
        raise Refused(f"{path} has no rows (shape {sequence.shape}); a batch has at least one")
    if steps == 0:
        raise Refused(
            f"{path} has no time steps (shape {sequence.shape}); a sequence has at least one"
        )
    if batch is not None and rows != batch:
        raise Refused(
            f"{model_path} is fixed at batch {batch} (exported with batch_size={batch}); "
            f"{path} has {rows} row{'' if rows == 1 else 's'}: pass {batch} rows (pad "
            "with rows of zeros), or export the model without batch_size and fused"
        )
    return sequence.astype(step_input["dtype"])


def check_outputs(path):
    """Refuse an OUTPUTS whose folder does not exist, or that is a folder."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise Refused(f"the folder {folder} of {path} does not exist; create it first")
    if os.path.isdir(path):
        raise Refused(f"{path} is a folder; OUTPUTS is a .npy file to write")


def run(arguments):
    """Check the files of `arguments`, stream and save; raise `Refused`."""
    check_outputs(arguments.outputs)
    interpreter = open_model(arguments.model)
    step_input = interpreter.get_signature_runner(STEP).get_input_details()["inputs"]
    sequence = check_sequence(
        load_sequence(arguments.sequence),
        arguments.sequence,
        step_input,
        fixed_batch(interpreter),
        arguments.model,
    )
    try:
        outputs = np.stack(list(stream(arguments.model, sequence)), axis=1)
    except RuntimeError as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise Refused(f"{arguments.model} failed on {arguments.sequence}: {first_line}") from None
    try:
        np.save(arguments.outputs, outputs)
    except OSError as error:
        raise Refused(f"cannot write {arguments.outputs}: {error.strerror or error}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a .tflite file written with streaming=True")
    parser.add_argument("sequence", help=".npy file: [time, *features] or [batch, time, *features]")
    parser.add_argument("outputs", help=".npy file to write: [batch, time, *output]")
    arguments = parser.parse_args(argv)
    try:
        run(arguments)
    except Refused as refusal:
        print(f"{parser.prog}: {refusal}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
