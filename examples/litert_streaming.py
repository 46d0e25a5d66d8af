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
"""

import argparse
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter

STEP = "step"


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a .tflite file written with streaming=True")
    parser.add_argument("sequence", help=".npy file: [time, *features] or [batch, time, *features]")
    parser.add_argument("outputs", help=".npy file to write: [batch, time, *output]")
    arguments = parser.parse_args(argv)
    try:
        interpreter = Interpreter(model_path=arguments.model)
        signatures = interpreter.get_signature_list()
        sequence = np.load(arguments.sequence)
    except (OSError, ValueError) as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 1
    if STEP not in signatures:
        print(
            f"{parser.prog}: {arguments.model} has no '{STEP}' signature (it has "
            f"{sorted(signatures)}): export it with streaming=True",
            file=sys.stderr,
        )
        return 1
    step_input = interpreter.get_signature_runner(STEP).get_input_details()["inputs"]
    features = len(step_input["shape_signature"]) - 1
    if sequence.ndim == features + 1:
        sequence = sequence[None]
    if sequence.ndim != features + 2:
        print(
            f"{parser.prog}: {arguments.sequence} has shape {sequence.shape}; the "
            f"model takes steps of shape {step_input['shape_signature'].tolist()}, "
            "so a sequence is [time, *features] or [batch, time, *features]",
            file=sys.stderr,
        )
        return 1
    sequence = sequence.astype(step_input["dtype"])
    outputs = np.stack(list(stream(arguments.model, sequence)), axis=1)
    np.save(arguments.outputs, outputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
