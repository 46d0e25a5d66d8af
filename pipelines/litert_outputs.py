"""`model.tflite` of the cell tasks (forecast, classify, tag), and its metrics.

`write_litert` exports the trained model with `kerasrnn.export_litert` into
the run's staged outputs, beside `saved_model/`: `run_task` renames it into
place with the others before `metrics.json`, so a run killed before then
writes it again when it resumes. `litert_metrics` runs the file through the
LiteRT interpreter (`ai_edge_litert`, what a client without TensorFlow
uses) and records its size, `litert_bytes`, its operators per signature,
`litert_operators`, and its weights' precision, `litert_quantize`
(`--litert-quantize`), beside what the task computes from its answers
(`litert_test_rmse`, ...): what the precision costs, set against the
Keras model's own scores.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import keras
import numpy as np

import kerasrnn
from kerasrnn_pipelines.console import held_back_native_output

if TYPE_CHECKING:
    from kerasrnn_pipelines.training import RunContext

#: The run's LiteRT file.
LITERT_FILE = "model.tflite"

#: Examples per interpreter call when a run evaluates the file.
LITERT_BATCH = 256

#: A model's answers as a function: inputs `(examples, ...)` in, outputs
#: `(examples, ...)` out (`litert_predictor`'s, or a Keras model's).
Predict: TypeAlias = Callable[[np.ndarray], np.ndarray]


def exporter_quantize(litert_quantize: str) -> str | None:
    """`--litert-quantize` as the exporters' `quantize` takes it
    (`kerasrnn.export.converter.QUANTIZE_OPTIONS`): float32 is None."""
    return None if litert_quantize == "float32" else litert_quantize


def export_among_outputs(
    context: RunContext, export: Callable[[pathlib.Path], object]
) -> pathlib.Path | None:
    """Call `export(path)` for the run's `model.tflite` among its outputs.

    Args:
        context: The task's `RunContext`; only the chief writes.
        export: A function that writes the LiteRT file at the path given.

    Returns:
        The path written, or None on a worker that writes no outputs.
    """
    if not context.is_chief:
        return None
    path = context.write_dir / LITERT_FILE
    # The export runs the file once in the interpreter, which announces itself.
    with held_back_native_output():
        export(path)
    return path


def write_litert(
    context: RunContext,
    model: keras.Model,
    sequence_length: int | None = None,
    *,
    litert_quantize: str,
) -> pathlib.Path | None:
    """Export `model` as `model.tflite` among the run's outputs.

    Args:
        context: The task's `RunContext`; only the chief writes.
        model: The trained Keras model.
        sequence_length: The task's fixed number of steps (the time loop is
            unrolled), or None for sequences of any length (a `WHILE` loop).
        litert_quantize: `--litert-quantize`, the precision of the file's
            weights (`kerasrnn_pipelines.options.LITERT_QUANTIZE`).

    Returns:
        The path written, or None on a worker that writes no outputs.
    """
    return export_among_outputs(
        context,
        lambda path: kerasrnn.export_litert(
            model,
            path,
            sequence_length=sequence_length,
            quantize=exporter_quantize(litert_quantize),
        ),
    )


def litert_predictor(path: pathlib.Path) -> Predict:
    """A function `inputs -> outputs` through the file's `serving_default`.

    Args:
        path: A `.tflite` file with one input and one output.

    Returns:
        `predict(inputs)`: `inputs` an array `(examples, ...)`, cast to the
        input's dtype and run `LITERT_BATCH` examples per call (the batch
        dimension resized to each); the outputs concatenated, `(examples,
        ...)`.

    Raises:
        ImportError: `ai_edge_litert` is not installed.
    """
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner("serving_default")
    ((input_name, detail),) = runner.get_input_details().items()
    (output_name,) = runner.get_output_details()

    def predict(inputs: np.ndarray) -> np.ndarray:
        inputs = np.asarray(inputs, detail["dtype"])
        return np.concatenate(
            [
                # A copy: the runner's array is the interpreter's buffer,
                # which the next call overwrites.
                np.array(runner(**{input_name: inputs[start : start + LITERT_BATCH]})[output_name])
                for start in range(0, len(inputs), LITERT_BATCH)
            ]
        )

    return predict


def litert_file_metrics(path: pathlib.Path, litert_quantize: str) -> dict[str, Any]:
    """What `metrics.json` says of the file itself: `litert_quantize`, the
    precision of its weights as `--litert-quantize` asked for it,
    `litert_bytes`, its size, `litert_operators`, signature -> the number
    of interpreter operators it holds (`kerasrnn.count_litert_operators`),
    and `litert_loop_operators`, signature -> those of its `WHILE` loops,
    run once per step (`kerasrnn.count_litert_loop_operators`; 0 for a
    signature without a loop)."""
    operators = kerasrnn.count_litert_operators(path)
    loops = kerasrnn.count_litert_loop_operators(path)
    return {
        "litert_quantize": litert_quantize,
        "litert_bytes": path.stat().st_size,
        "litert_operators": {key: sum(kinds.values()) for key, kinds in operators.items()},
        "litert_loop_operators": {key: sum(kinds.values()) for key, kinds in loops.items()},
    }


def litert_metrics(
    path: pathlib.Path | None,
    litert_quantize: str,
    evaluate: Callable[[Predict], dict[str, Any]],
) -> dict[str, Any]:
    """`litert_file_metrics` and the metrics `evaluate` computes through
    the file.

    Args:
        path: What `write_litert` returned (None on a worker: no metrics).
        litert_quantize: The precision `write_litert` was given.
        evaluate: `evaluate(predict) -> dict`, the task's metrics from the
            answers of `litert_predictor(path)`.

    Returns:
        A dict of metrics; only `litert_file_metrics`, with a note printed,
        where `ai_edge_litert` is not installed.
    """
    if path is None:
        return {}
    metrics = litert_file_metrics(path, litert_quantize)
    try:
        predict = litert_predictor(path)
    except ImportError:
        print("ai-edge-litert is not installed: model.tflite is written but not evaluated")
        return metrics
    with held_back_native_output():
        return {**metrics, **evaluate(predict)}
