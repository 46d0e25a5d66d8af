"""LiteRT export of recurrent Keras models: `export_litert`.

`export_litert` writes a Keras model built from recurrent layers (kerasrnn's
cells or Keras's `LSTM`/`GRU`/`SimpleRNN` in `keras.layers.RNN`, inside
`Bidirectional`, stacked, masked by `Embedding(mask_zero=True)`) as one
LiteRT flatbuffer that a client runs with NumPy and `ai_edge_litert` alone,
its recurrences stepped through `kerasrnn.export.rnn_loop`'s loops and
converted by `kerasrnn.export.converter`; with `streaming=True` it adds a
signature that runs one time step at a time.
"""

import contextlib
import os
import pathlib
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from kerasrnn.export.converter import (
    check_litert_path,
    check_quantize,
    convert_concrete_functions,
    write_atomically,
)
from kerasrnn.export.fused_lstm import constant_weights, fused_inner_loop
from kerasrnn.export.fused_rnn import elman_unfit_reason, fused_elman_inner_loop
from kerasrnn.export.paired_lstm import lstm_unfit_reason
from kerasrnn.export.rnn_loop import (
    dropout_off,
    litert_inner_loop,
    litert_stand_ins,
    recurrent_layers,
    traceable_for_litert,
)
from kerasrnn.keras_internals import replaced_inner_loops, sublayers
from kerasrnn.types import TensorLike
from kerasrnn.validation import check_bool, check_positive_int

__all__ = ["MAX_BATCH_SIZE", "MAX_SEQUENCE_LENGTH", "STEP_SIGNATURE", "export_litert"]

#: The largest `batch_size`: the export runs the file once at its batch
#: size before writing it, and LiteRT allocates every tensor of the call,
#: batch and all.
MAX_BATCH_SIZE = 65_536

#: The largest `sequence_length`: a fixed length unrolls the loop, each step
#: adding its operators (about ten per LSTM layer and direction) to the
#: traced graph and the file; `sequence_length=None` keeps one `WHILE` loop
#: for any length.
MAX_SEQUENCE_LENGTH = 4_096

#: The most values one call's input may hold, batch and time included
#: (1 GiB of float32): the export's check call allocates them.
MAX_INPUT_VALUES = 2**28

#: The converter's dynamic-range quantization leaves a weight matrix of
#: fewer values in float32, and quantizes a fused LSTM operator only when
#: every one of its gate matrices is quantized.
QUANTIZED_MIN_VALUES = 1_024


def _check_model(model: Any) -> tuple[list[TensorLike], list[keras.layers.RNN]]:
    if not isinstance(model, keras.Model):
        raise TypeError(
            "Argument `model` must be a keras.Model with recurrent layers "
            f"(keras.layers.RNN, LSTM, GRU, SimpleRNN, Bidirectional). "
            f"Received: model={model!r} ({type(model).__name__})"
        )
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):
        inputs = None
    if not inputs:
        raise ValueError(
            "Argument `model` must have known inputs (a functional or "
            "Sequential model built on keras.Input). "
            f"Received: model={model.name!r}, which has none"
        )
    recurrent = recurrent_layers(model)
    if not recurrent:
        raise ValueError(
            "Argument `model` must contain a recurrent layer "
            "(keras.layers.RNN, LSTM, GRU, SimpleRNN, Bidirectional). "
            f"Received: model={model.name!r}, whose layers are "
            f"{[layer.name for layer in model.layers]}"
        )
    stateful = [layer.name for layer in recurrent if layer.stateful]
    if stateful:
        raise ValueError(
            "Argument `model` must not contain stateful recurrent layers: "
            "a LiteRT signature cannot carry their state from one call to "
            "the next. Rebuild them with stateful=False and copy the "
            f"weights. Received: model={model.name!r} with stateful "
            f"layers {stateful}"
        )
    return inputs, recurrent


def _is_sequence(tensor: TensorLike) -> bool:
    """Whether a model input has a time axis (its second): `(batch, time,
    *features)`, token ids `(batch, time)`, or floats `(batch, None)`. A
    `(batch, size)` input of floats of a fixed size is one vector per
    example (an initial state, say), which no recurrent layer reads as a
    sequence."""
    shape = tensor.shape
    if len(shape) >= 3:
        return True
    if len(shape) != 2:
        return False
    return shape[1] is None or not keras.backend.is_float_dtype(tensor.dtype)


def _input_specs(
    inputs: list[TensorLike], sequence_length: int | None, batch_size: int | None
) -> list[Any]:
    """`tf.TensorSpec`s of the model's inputs, batch dimension `batch_size`
    (None: free), time axis `sequence_length` where an input has one
    (`_is_sequence`)."""
    specs = []
    for index, tensor in enumerate(inputs):
        shape = [batch_size, *tensor.shape[1:]]
        if _is_sequence(tensor) and sequence_length is not None:
            declared = shape[1]
            if declared is not None and declared != sequence_length:
                raise ValueError(
                    "Argument `sequence_length` must equal the model's "
                    f"input length where the model fixes one: input "
                    f"{tensor.name!r} has shape {tuple(tensor.shape)}. "
                    f"Received: sequence_length={sequence_length}"
                )
            shape[1] = sequence_length
        name = tensor.name
        if not name or name.startswith("keras_tensor"):
            name = "inputs" if len(inputs) == 1 else f"inputs_{index}"
        specs.append(tf.TensorSpec(shape, tensor.dtype, name=name))
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        specs = [
            tf.TensorSpec(spec.shape, spec.dtype, name=f"inputs_{index}")
            for index, spec in enumerate(specs)
        ]
    return specs


def _check_input_values(specs: list[Any]) -> None:
    """Refuse inputs whose one call holds more than `MAX_INPUT_VALUES`
    values (free dimensions counted as 1, as the export's check call runs)."""
    for spec in specs:
        values = int(np.prod([1 if size is None else size for size in spec.shape]))
        if values > MAX_INPUT_VALUES:
            raise ValueError(
                "Arguments `batch_size` and `sequence_length` must leave one call's "
                f"input {spec.name!r} at most {MAX_INPUT_VALUES:,} values (1 GiB of "
                "float32), which the export allocates when it runs the file once to "
                f"check it. Received: input shape {tuple(spec.shape)}, "
                f"{values:,} values"
            )


def _check_size(name: str, value: int, largest: int, why: str) -> int:
    """`value` if it is at most `largest`, else a `ValueError` naming `name`."""
    if value > largest:
        raise ValueError(
            f"Argument `{name}` must be at most {largest:,}: {why}. Received: {name}={value}"
        )
    return value


def _model_batch_size(inputs: list[TensorLike]) -> int | None:
    """The batch size the model's inputs fix (`keras.Input(batch_size=...)`),
    or None where they leave it free or disagree."""
    sizes = {tensor.shape[0] for tensor in inputs}
    return sizes.pop() if len(sizes) == 1 else None


def _check_unrollable(recurrent: list[keras.layers.RNN], specs: list[Any]) -> None:
    """Refuse `unroll=True` layers where the export leaves time undefined.

    Keras unrolls such a layer at trace time, which needs the number of
    steps; without it the trace fails deep inside Keras with a message that
    never names the export's `sequence_length`, which is the fix.
    """
    free_time = [spec.name for spec in specs if spec.shape.rank >= 2 and spec.shape[1] is None]
    unrolled = [layer.name for layer in recurrent if layer.unroll]
    if free_time and unrolled:
        raise ValueError(
            f"Argument `sequence_length` must be given for a model with "
            f"unroll=True layers ({', '.join(repr(name) for name in unrolled)}): "
            "Keras unrolls them over a fixed number of steps, and the inputs "
            f"{free_time} have no fixed length. Received: sequence_length=None. "
            "Pass sequence_length=T (the export unrolls every layer then), or "
            "build the layers with unroll=False."
        )


def _named_outputs(model: keras.Model, outputs: Any) -> dict[str, TensorLike]:
    """The model's outputs as a dict, named as the model names them."""
    if isinstance(outputs, dict):
        return {str(name): tensor for name, tensor in outputs.items()}
    flat = tree.flatten(outputs)
    names = list(getattr(model, "output_names", None) or [])
    if len(flat) == 1 and not names and model.layers:
        names = [model.layers[-1].name]
    if len(names) != len(flat) or len(set(names)) != len(names):
        names = [f"output_{index}" for index in range(len(flat))]
    return dict(zip(names, flat))


def _quantizable(layer: keras.layers.RNN) -> bool:
    """Whether every gate matrix of the fused operator `layer` becomes, its
    input weights (units, d) and recurrent weights (units, units), holds
    `QUANTIZED_MIN_VALUES` values or more, so that a `dynamic_int8` file
    holds the operator's weights in int8."""
    units = int(layer.cell.units)
    features = int(layer.cell.kernel.shape[0])
    return min(units * features, units * units) >= QUANTIZED_MIN_VALUES


def _traceable(
    model: keras.Model,
    recurrent: list[keras.layers.RNN],
    steps: int | None,
    fused: bool,
    quantize: str | None,
) -> contextlib.AbstractContextManager[Any]:
    """`traceable_for_litert`, and with `fused` the LSTM and Elman layers
    that fit LiteRT's fused operators stepped by `fused_inner_loop` and
    `fused_elman_inner_loop` instead, traced on constant weights (see
    `kerasrnn.export.fused_lstm` and `kerasrnn.export.fused_rnn`). With
    `quantize="dynamic_int8"` a layer too small for the converter to
    quantize the operator (`_quantizable`) keeps its loop, whose weights
    are quantized."""
    if not fused:
        return traceable_for_litert(model, steps)
    loops = []
    for layer, loop in litert_stand_ins(model, steps):
        if quantize == "dynamic_int8" and not _quantizable(layer):
            pass
        elif lstm_unfit_reason(layer) is None:
            loop = fused_inner_loop(layer, fallback=loop)
        elif elman_unfit_reason(layer) is None:
            loop = fused_elman_inner_loop(layer, fallback=loop)
        loops.append((layer, loop))
    stack = contextlib.ExitStack()
    stack.enter_context(dropout_off(recurrent))
    stack.enter_context(replaced_inner_loops(loops))
    stack.enter_context(constant_weights(model))
    return stack


#: The signature `export_litert(..., streaming=True)` adds.
STEP_SIGNATURE = "step"


def _check_streamable(
    model: keras.Model, inputs: list[TensorLike], recurrent: list[keras.layers.RNN]
) -> None:
    """Refuse what a one-step signature cannot carry, naming it."""
    if len(inputs) != 1 or len(tree.flatten(model.outputs)) != 1:
        raise ValueError(
            "Argument `streaming` needs a model with one input and one output. "
            f"Received: streaming=True for model {model.name!r} with "
            f"{len(inputs)} inputs and {len(tree.flatten(model.outputs))} outputs"
        )
    if len(inputs[0].shape) < 2:
        raise ValueError(
            "Argument `streaming` needs an input with a time axis "
            f"(batch, time, ...). Received: streaming=True for input shape "
            f"{tuple(inputs[0].shape)}"
        )
    for layer in sublayers(model):
        if isinstance(layer, keras.layers.Bidirectional):
            raise ValueError(
                f"Argument `streaming` cannot step layer {layer.name!r}: a "
                "Bidirectional layer reads the sequence backwards from its end, "
                "which a step-by-step signature never sees. Received: streaming=True"
            )
    backwards = [layer.name for layer in recurrent if layer.go_backwards]
    if backwards:
        raise ValueError(
            f"Argument `streaming` cannot step layers {backwards}: they read the "
            "sequence backwards (go_backwards=True). Received: streaming=True"
        )


def _state_specs(recurrent: list[keras.layers.RNN]) -> list[list[int]]:
    """Each recurrent layer's state sizes, flat, in layer order."""
    sizes = []
    for layer in recurrent:
        flat = tree.flatten(layer.cell.state_size)
        sizes.append([int(size) for size in flat])
    return sizes


def _step_function(model: keras.Model, spec: Any, recurrent: list[keras.layers.RNN]) -> Any:
    """The `step` signature's concrete function (see `export_litert`).

    Each recurrent layer runs one step of `litert_inner_loop` from the
    states fed to the signature instead of its zeros, and hands its new
    states out. Before it is returned, the function is stepped through a
    random sequence and held to the whole-sequence model: a layer that
    mixes time steps outside the recurrences fails there, by name of the
    check, not silently in a client.
    """
    sizes = _state_specs(recurrent)
    step_shape = [None, *spec.shape[2:]]
    state_specs = [
        tf.TensorSpec([None, size], tf.float32, name=f"state_{index}")
        for index, size in enumerate(size for layer in sizes for size in layer)
    ]
    sequence_output = len(model.outputs[0].shape) >= 3

    def step(inputs: TensorLike, *states: TensorLike) -> dict[str, TensorLike]:
        new_states: dict[int, list[TensorLike]] = {}
        offsets = np.cumsum([0, *[len(layer) for layer in sizes]])
        loops = [
            (layer, _fed_inner_loop(layer, list(states[start:end]), new_states, index))
            for index, (layer, start, end) in enumerate(zip(recurrent, offsets, offsets[1:]))
        ]
        with replaced_inner_loops(loops):
            output = model(tf.expand_dims(inputs, 1), training=False)
        output = tree.flatten(output)[0]
        if sequence_output:
            output = output[:, 0]
        flat = [state for index in range(len(recurrent)) for state in new_states[index]]
        return {
            "outputs": output,
            **{f"state_{index}": state for index, state in enumerate(flat)},
        }

    signature = [tf.TensorSpec(step_shape, spec.dtype, name="inputs"), *state_specs]
    with dropout_off(recurrent):
        function = tf.function(step, input_signature=signature)
        try:
            concrete = function.get_concrete_function()
        except Exception as error:  # whatever a layer raises on one step
            failing = _failing_layer(error, model)
            if failing is None or "`streaming`" in str(error):
                raise
            raise ValueError(
                f"Argument `streaming` cannot step layer {failing.name!r} "
                f"({type(failing).__name__}): it fails on an input of one time step, "
                "which is what the step signature gives it (a layer that needs "
                "several steps at once: a cropping or a convolution over time). "
                "Received: streaming=True"
            ) from error
    _check_steps_match(model, concrete, spec, state_specs, sequence_output)
    return concrete


def _failing_layer(error: BaseException, model: keras.Model) -> keras.layers.Layer | None:
    """The innermost of `model`'s layers whose call `error` was raised in
    (read from the frames of its traceback), or None."""
    layers = {id(layer): layer for layer in sublayers(model)}
    found = None
    frames = error.__traceback__
    while frames is not None:
        owner = frames.tb_frame.f_locals.get("self")
        if id(owner) in layers:
            found = layers[id(owner)]
        frames = frames.tb_next
    return found


def _fed_inner_loop(
    layer: keras.layers.RNN,
    fed: list[TensorLike],
    sink: dict[int, list[TensorLike]],
    index: int,
) -> Callable[..., Any]:
    """`litert_inner_loop` over one step, from the `fed` states, its new
    states put in `sink[index]`."""
    loop = litert_inner_loop(layer, 1)

    def inner_loop(
        sequences: Any, initial_state: Any, mask: Any, training: bool = False
    ) -> tuple[TensorLike, TensorLike, Any]:
        if index in sink:
            raise ValueError(
                f"Argument `streaming` cannot step layer {layer.name!r}: the "
                "model calls it more than once. Received: streaming=True"
            )
        structure = initial_state if tree.is_nested(initial_state) else [initial_state]
        states = [
            tf.cast(state, zero.dtype) for state, zero in zip(fed, tree.flatten(structure))
        ]
        packed = tree.pack_sequence_as(structure, states)
        last, outputs, new = loop(sequences, packed, mask, training)
        if mask is not None and not layer.zero_output_for_mask:
            # Keras outputs the previous step's output at a masked step; a
            # single step has only the states, and the cell's output state
            # holds it (`_check_steps_match`, which steps through padding,
            # refuses a cell where it does not).
            previous = tf.cast(_output_state(layer, packed), last.dtype)
            if previous.shape[-1] == last.shape[-1]:
                kept = tf.reshape(tf.cast(tree.flatten(mask)[0], tf.bool), [-1, 1])
                last = tf.where(kept, last, previous)
                outputs = tf.where(kept[:, None], outputs, previous[:, None])
        sink[index] = [tf.cast(state, tf.float32) for state in tree.flatten(new)]
        return last, outputs, new

    return inner_loop


def _output_state(layer: keras.layers.RNN, states: Any) -> TensorLike:
    """The state that `layer`'s cell outputs, from its nested `states`: the
    first (h, for every cell of kerasrnn and Keras), of the last cell for a
    `StackedRNNCells`."""
    if isinstance(layer.cell, keras.layers.StackedRNNCells):
        states = states[-1]
    return tree.flatten(states)[0]


def _check_steps_match(
    model: keras.Model,
    step: Any,
    spec: Any,
    state_specs: list[Any],
    sequence_output: bool,
    steps: int = 4,
) -> None:
    """Step `step` through a random sequence; refuse if it is not `model`'s."""
    rng = np.random.default_rng(0)
    shape = [2, steps, *[1 if size is None else size for size in spec.shape[2:]]]
    if spec.dtype.is_integer:
        sequence = rng.integers(1, 3, size=shape).astype(spec.dtype.as_numpy_dtype)
    else:
        sequence = rng.normal(size=shape).astype(spec.dtype.as_numpy_dtype)
    # A step of padding (id 0, or zero features) inside one row and at the
    # end of the other, which a masked model skips.
    sequence[0, 1] = 0
    sequence[1, steps - 1] = 0
    whole = np.asarray(tree.flatten(model(sequence, training=False))[0])
    states = {spec_.name: tf.zeros([2, spec_.shape[1]]) for spec_ in state_specs}
    outputs = []
    for time in range(steps):
        result = step(inputs=tf.constant(sequence[:, time]), **states)
        outputs.append(result["outputs"].numpy())
        states = {name: result[name] for name in states}
    stepped = np.stack(outputs, 1) if sequence_output else outputs[-1]
    if stepped.shape != whole.shape or not np.allclose(stepped, whole, atol=1e-4, rtol=1e-4):
        raise ValueError(
            f"Argument `streaming` needs a model whose steps depend only on the "
            f"steps before them, but model {model.name!r} stepped one step at a "
            "time does not give its whole-sequence output (a layer outside the "
            "recurrences mixes time steps: pooling, attention, a convolution "
            "over time; or a masked step of a cell whose output is not its first "
            "state). Received: streaming=True"
        )


def export_litert(
    model: keras.Model,
    path: str | os.PathLike[str],
    *,
    sequence_length: int | None = None,
    quantize: str | None = None,
    streaming: bool = False,
    batch_size: int | None = None,
    fused: bool = False,
) -> pathlib.Path:
    """Write a recurrent Keras model as a LiteRT `.tflite` file.

    The model is any `keras.Model` (functional or Sequential) whose
    recurrent layers are `keras.layers.RNN` over kerasrnn cells
    (`ElmanCell`, `LSTMCell`, `GRUCell`, `LeakyCell`, ...) or Keras's own
    `LSTM`, `GRU` and `SimpleRNN`, alone, in `Bidirectional`, stacked, and
    masked (`Embedding(mask_zero=True)`: padded steps keep the state, as in
    Keras). The file computes what `model.predict` computes (float32:
    within 1e-5), with LiteRT's builtin ops only; a client needs NumPy and
    `ai_edge_litert`, not TensorFlow.

    The contract of the file, one signature `serving_default`:

    - inputs: one per model input, named as the input
      (`keras.Input(name=...)`; an unnamed single input is `inputs`), of
      the input's dtype (float32 features, or int32 token ids), shape
      `[batch, sequence_length, *features]` (`[batch, time, *features]`
      with `time` dynamic when `sequence_length` is None); a float input
      of one fixed-size vector per example (an initial state passed to a
      recurrent layer) keeps its shape `[batch, size]`;
    - outputs: named as the model's outputs (its output layers' names, or
      a dict output's keys; `output_0`, ... where those are not unique),
      float32, the model's output shapes with a `batch` first dimension.

    The batch dimension is `batch_size`, or the model's own where its
    inputs fix one (`keras.Input(batch_size=...)`), else dynamic; without
    `sequence_length` the time dimension is dynamic too. A dynamic
    dimension is set by `Interpreter.resize_tensor_input` then
    `allocate_tensors`, or by a `get_signature_runner("serving_default")`
    call, which resizes to the arrays it is given.

    The default file loads in every LiteRT runtime (`Interpreter` and
    `CompiledModel`). With `fused=True`, which needs a fixed batch size,
    every LSTM layer (kerasrnn's `LSTMCell` or Keras's `LSTM`/`LSTMCell` in
    `keras.layers.RNN`, with tanh and sigmoid, float32) becomes one LiteRT
    `UNIDIRECTIONAL_SEQUENCE_LSTM` operator, and every Elman layer
    (kerasrnn's `ElmanCell` or Keras's `SimpleRNN`/`SimpleRNNCell`, with
    tanh, float32) one `UNIDIRECTIONAL_SEQUENCE_RNN`; two for a
    `Bidirectional` layer (with a `REVERSE_V2` each way): the file's
    operator count no longer grows with `sequence_length`. Its contract:

    - the batch size is fixed: the signature's inputs have shape
      `(batch_size, ...)`, and a call of another batch size is refused by
      the interpreter (the operators' states have the batch's shape);
    - LiteRT's `Interpreter` only: the operators keep their states in
      *variable tensors*, which LiteRT's `CompiledModel` (ai-edge-litert
      2.3.0) refuses to load (a `RuntimeError`, "Failed to load model from
      file"); the file zeroes them at the start of every call, so a call
      never depends on the one before.

    A layer keeps the loop where the operator's contract does not fit: a
    mask (`Embedding(mask_zero=True)`), an initial state passed to the
    layer, an LSTM's final states that are used (`return_state=True`),
    another cell or activation, or, with `quantize="dynamic_int8"`, a gate
    matrix of fewer than 1,024 values (units x features or units x units),
    which the converter would leave in float32 while the loop's weights
    are int8.

    With `streaming=True` the file has a second signature, `step`, that
    runs the model one time step at a time at constant memory, its
    recurrent states carried by the client from one call to the next:

    - inputs: `inputs`, one step of the model's input (`[batch,
      *features]`: float32 features, or int32 token ids `[batch]`), and
      `state_0`, `state_1`, ...: every recurrent layer's state tensors, in
      the order of `model.layers` (an LSTM's h then c), float32 `[batch,
      size]`; zeros start a sequence;
    - outputs: `outputs`, the model's output for that step (a model whose
      last recurrent layer returns only its last output gives the output
      the whole sequence would give if it ended at this step), and
      `state_0`, `state_1`, ...: the new states, the same names and shapes.

    Stepping it through a sequence from zero states gives what the
    whole-sequence model gives (checked here on random inputs before the
    file is written). It needs one input and one output, and layers that
    run forwards through time: `Bidirectional` and `go_backwards` layers
    are refused, and so is a layer that mixes time steps outside the
    recurrences (a pooling over time, attention), by the check.

    A fixed `sequence_length` unrolls the time loop (no `WHILE`): the fast
    path, since a loop's turn costs more than the operators of a step; a
    client pads shorter sequences to that length, which only a model that
    masks its padding ignores. `None` keeps a `WHILE` loop that runs for
    any length.

    Args:
        model: A built `keras.Model` with at least one recurrent layer and
            none stateful.
        path: `str` or `os.PathLike`, the `.tflite` file to write; its
            directory must exist. Written atomically: a failed export leaves
            whatever was at `path` before.
        sequence_length: Positive integer T, the fixed number of steps (at
            most `MAX_SEQUENCE_LENGTH`), or `None` for any number.
        quantize: `None` (float32), `"float16"` or `"dynamic_int8"`; see
            `QUANTIZE_OPTIONS`.
        streaming: Whether to add the `step` signature described above.
        batch_size: Positive integer, the batch size `serving_default`
            takes (at most `MAX_BATCH_SIZE`; one call's input at most
            `MAX_INPUT_VALUES` values); `None`: the model's own, or any.
        fused: Whether LSTM and Elman layers become LiteRT's fused
            sequence operators (see above): needs a fixed batch size, and
            the file runs in LiteRT's `Interpreter` only. `False` (the
            default) keeps every layer's time loop.

    Returns:
        `pathlib.Path(path)`.

    Raises:
        TypeError: `model` is not a Keras model, or `path` not a path.
        ValueError: a bad argument (named, with the value and what is
            allowed), or the model uses an op with no LiteRT builtin (the
            op and its layer are named).

    Example:

    >>> inputs = keras.Input((None, 3), name="x")
    >>> hidden = keras.layers.RNN(kerasrnn.GRUCell(4))(inputs)
    >>> model = keras.Model(inputs, keras.layers.Dense(1, name="y")(hidden))
    >>> kerasrnn.export_litert(model, "gru.tflite", sequence_length=12)  # doctest: +SKIP
    PosixPath('gru.tflite')

    and a client, with NumPy and `ai_edge_litert` only:

    >>> from ai_edge_litert.interpreter import Interpreter  # doctest: +SKIP
    >>> run = Interpreter("gru.tflite").get_signature_runner("serving_default")  # doctest: +SKIP
    >>> run(x=np.zeros((2, 12, 3), "float32"))["y"].shape  # doctest: +SKIP
    (2, 1)
    """
    inputs, recurrent = _check_model(model)
    if sequence_length is not None:
        sequence_length = _check_size(
            "sequence_length",
            check_positive_int("sequence_length", sequence_length),
            MAX_SEQUENCE_LENGTH,
            "a fixed length unrolls the loop, each step adding its operators to the "
            "file; sequence_length=None keeps one WHILE loop for any length",
        )
    quantize = check_quantize(quantize)
    streaming = check_bool("streaming", streaming)
    if batch_size is not None:
        batch_size = _check_size(
            "batch_size",
            check_positive_int("batch_size", batch_size),
            MAX_BATCH_SIZE,
            "the export runs the file once at that batch size to check it, and "
            "LiteRT allocates every tensor of the call for the whole batch",
        )
    else:
        batch_size = _model_batch_size(inputs)
    fused = check_bool("fused", fused)
    if fused and batch_size is None:
        raise ValueError(
            "Argument `fused` needs a fixed batch size: LiteRT's fused sequence "
            "operators keep their states in variable tensors of the batch's shape, "
            "and only LiteRT's Interpreter runs them (its CompiledModel refuses the "
            "file). Pass batch_size=N (the file then takes batches of N only), or "
            "fused=False. Received: fused=True, batch_size=None"
        )
    target = check_litert_path(path)
    specs = _input_specs(inputs, sequence_length, batch_size)
    _check_input_values(specs)
    _check_unrollable(recurrent, specs)
    if streaming:
        _check_streamable(model, inputs, recurrent)

    def serve(*arguments: TensorLike) -> dict[str, TensorLike]:
        structure = arguments[0] if len(arguments) == 1 else list(arguments)
        return _named_outputs(model, model(structure, training=False))

    functions = {}
    with _traceable(model, recurrent, sequence_length, fused, quantize):
        function = tf.function(serve, input_signature=specs)
        functions["serving_default"] = function.get_concrete_function()
    if streaming:
        functions[STEP_SIGNATURE] = _step_function(model, specs[0], recurrent)
    content = convert_concrete_functions(functions, quantize=quantize, model=model)
    write_atomically(target, content)
    return target
