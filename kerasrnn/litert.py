"""LiteRT export: recurrent Keras models as `.tflite` files with builtin ops only.

`export_litert` writes a Keras model built from recurrent layers (kerasrnn's
cells or Keras's `LSTM`/`GRU`/`SimpleRNN` in `keras.layers.RNN`, inside
`Bidirectional`, stacked, masked by `Embedding(mask_zero=True)`) as one
LiteRT flatbuffer that a client runs with NumPy and `ai_edge_litert` alone.
The conversion core below it is shared by every LiteRT exporter of kerasrnn
(`kerasrnn.seq2seq.export_litert` included):

- `check_litert_path(path)`, `check_quantize(quantize)`: argument checks
  that run before any conversion;
- `convert_concrete_functions(functions, quantize=..., model=...)`: freeze
  the variables to constants, convert with LiteRT's builtin ops only, turn an
  op without a builtin into a `ValueError` naming the op and its layer, and
  run the result once so that a model which would fail at `invoke()` is
  never returned;
- `write_atomically(path, content)`: the bytes appear at `path` whole or
  not at all.

Why each step is there (measured with TensorFlow 2.21):

- Converting the traced function as it is keeps the variables as resources
  read inside the `WHILE` body (`READ_VARIABLE`), and the model fails at
  `invoke()`; frozen to constants first
  (`convert_variables_to_constants_v2`) it converts and runs.
- Keras's `WHILE` loop keeps its per-step inputs and outputs in tensor
  lists, which LiteRT's builtins hold only with a static element shape, so a
  resizable batch dimension cannot pass, and its unrolled loop misplaces the
  zeros of masked steps when it runs backwards; the export steps the layers'
  cells through loops of its own (`_litert_inner_loop`).
- A fixed `sequence_length` unrolls the time loop: no `WHILE` at all. On a
  bidirectional layer of 16 units over 12 steps at batch 1 (ElmanCell,
  LSTMCell, GRUCell; `invoke()` in `ai_edge_litert`, best of 12 rounds on
  two shared CPU cores) a call took 5, 13 and 14 µs unrolled against 41,
  75 and 69 µs looped (4 to 8 times), where the traced Keras model took
  1.3 to 1.8 ms and `model(x)` 47 to 101 ms.
"""

import contextlib
import os
import pathlib
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import keras
import numpy as np
import tensorflow as tf
from keras import tree
from tensorflow.compiler.tf2xla.python.xla import dynamic_update_slice
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

from kerasrnn.keras_internals import (
    DropoutRNNCell,
    call_has_training_arg,
    replaced_inner_loops,
    sublayers,
)
from kerasrnn.types import TensorLike
from kerasrnn.validation import check_bool, check_choice, check_positive_int

__all__ = [
    "QUANTIZE_OPTIONS",
    "STEP_SIGNATURE",
    "check_litert_path",
    "check_quantize",
    "convert_concrete_functions",
    "count_litert_operators",
    "export_litert",
    "write_atomically",
]

#: What `quantize` accepts: `None` keeps float32 weights; `"float16"`
#: stores the weights as float16 (half the size, computed in float32);
#: `"dynamic_int8"` stores weight matrices of 1024 elements or more as int8
#: with float scales and quantizes activations on the fly (the converter's
#: dynamic-range mode; smaller weights stay float32).
QUANTIZE_OPTIONS = (None, "float16", "dynamic_int8")

#: One masked cell step, `(inputs, states, keep, previous) -> (output,
#: states)`: `keep` the step's (batch, 1) mask or None, `previous` the
#: previous output or None (zeros).
Step: TypeAlias = Callable[..., tuple[TensorLike, tuple[TensorLike, ...]]]


# ----------------------------------------------------------------- checks
def check_quantize(quantize: Any) -> str | None:
    """Return `quantize` if it is one of `QUANTIZE_OPTIONS`, else raise.

    Raises:
        ValueError: naming `quantize`, the value and the options.
    """
    if quantize is not None and not isinstance(quantize, str):
        # `check_choice` would compare an unhashable value by equality;
        # anything that is not None or a string is refused here first.
        raise ValueError(
            f"Argument `quantize` must be one of {QUANTIZE_OPTIONS}. "
            f"Received: quantize={quantize!r}"
        )
    return check_choice("quantize", quantize, QUANTIZE_OPTIONS)


def check_litert_path(path: Any) -> pathlib.Path:
    """Return `path` as a `pathlib.Path` a `.tflite` file can be written to.

    Args:
        path: `str` or `os.PathLike`, the file to write. Its parent
            directory must exist; the path itself must not be a directory.

    Returns:
        `pathlib.Path(path)`.

    Raises:
        TypeError: `path` is not a string or path.
        ValueError: `path` is empty, is a directory, or its parent does not
            exist (or is not a directory).
    """
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise TypeError(
            "Argument `path` must be a str or os.PathLike naming the file "
            f"to write. Received: path={path!r} ({type(path).__name__})"
        )
    if not os.fspath(path):
        raise ValueError("Argument `path` must name a file to write. Received: path=''")
    target = pathlib.Path(path)
    if target.is_dir():
        raise ValueError(
            "Argument `path` must name a file, not a directory. "
            f"Received: path={os.fspath(path)!r}, which is a directory"
        )
    if not target.parent.is_dir():
        raise ValueError(
            "Argument `path` must name a file in an existing directory. "
            f"Received: path={os.fspath(path)!r}, whose parent "
            f"{os.fspath(target.parent)!r} does not exist"
        )
    return target


# ------------------------------------------------------------- the core
def write_atomically(path: str | os.PathLike[str], content: bytes) -> None:
    """Write `content` to `path` so that `path` is whole or absent.

    The bytes go to a hidden temporary file in the same directory, are
    flushed to disk, and the file is renamed over `path` (atomic on one
    file system). If anything fails, the temporary file is removed and
    `path` is left as it was.

    Args:
        path: `str` or `os.PathLike`, checked with `check_litert_path`.
        content: `bytes`, the whole file.
    """
    target = check_litert_path(path)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".partial", dir=target.parent
    )
    try:
        # mkstemp creates the file readable by its owner only; give it the
        # mode any file written with open() would have (0o666 less the umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        with os.fdopen(handle, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def convert_concrete_functions(
    functions: dict[str, Any], *, quantize: str | None = None, model: Any = None
) -> bytes:
    """Convert traced TensorFlow functions to one LiteRT flatbuffer.

    Every function becomes a signature of the `.tflite` file, under its key
    in `functions`, with the input names of its `input_signature` and the
    output names of the dict it returns. Variables are frozen to constants
    first (`convert_variables_to_constants_v2`); the converter may use
    LiteRT's builtin ops only (`tf.lite.OpsSet.TFLITE_BUILTINS`), so the
    file needs no Flex delegate and no custom op. The converted model is
    then run once in TensorFlow's LiteRT interpreter on zeros, every
    dynamic dimension 1, so that a model that converts but cannot be
    invoked is refused here instead of in the client.

    Args:
        functions: `dict[str, tf.types.experimental.ConcreteFunction]`,
            signature key -> function. Each comes from a `tf.function`
            with an `input_signature` of `tf.TensorSpec`s (an input is named
            by its spec's `name`, else by its argument's name) and returns a
            `dict[str, tf.Tensor]`.
        quantize: One of `QUANTIZE_OPTIONS`.
        model: Optional `keras.layers.Layer` the functions call; its
            sublayers' names are used to say which layer an unsupported op
            comes from.

    Returns:
        `bytes`, the flatbuffer.

    Raises:
        ValueError: an op has no LiteRT builtin (the message names the op,
            the layer and the scope it was traced under), or the converted
            model fails when invoked; or an argument is malformed.
    """
    quantize = check_quantize(quantize)
    if not isinstance(functions, dict) or not functions:
        raise ValueError(
            "Argument `functions` must be a non-empty dict of signature "
            f"key -> ConcreteFunction. Received: functions={functions!r}"
        )
    named = {key: _frozen_with_names(key, function) for key, function in functions.items()}
    with tempfile.TemporaryDirectory(prefix="kerasrnn-litert-") as saved:
        # A SavedModel of variable-free functions is the converter input
        # that keeps several named signatures; `from_concrete_functions`
        # without a trackable object drops the signatures, and with one it
        # saves the variables again.
        tf.saved_model.save(tf.Module(), saved, signatures=named)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved, signature_keys=list(named))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        try:
            content = converter.convert()
        except Exception as error:  # ConverterError, and its subclasses
            raise _unsupported_ops_error(error, model) from error
    _check_invokes(content)
    return content


def _frozen_with_names(key: Any, function: Any) -> Any:
    """`function` with its variables frozen, its inputs and outputs named."""
    if not isinstance(key, str) or not key:
        raise ValueError(
            "Argument `functions` must have non-empty string keys (the "
            f"signature names). Received key: {key!r}"
        )
    if not isinstance(function, tf.types.experimental.ConcreteFunction):
        raise TypeError(
            f"Argument `functions` must map signature names to "
            f"ConcreteFunctions. Received: functions[{key!r}]={function!r}"
        )
    # TensorFlow names every spec: its `name`, or else its argument's.
    specs = tree.flatten(function.structured_input_signature)
    outputs = function.structured_outputs
    if not isinstance(outputs, dict) or not all(
        isinstance(name, str) and isinstance(tensor, tf.Tensor) for name, tensor in outputs.items()
    ):
        raise ValueError(
            f"functions[{key!r}] must return a dict of named tensors. Received outputs: {outputs!r}"
        )
    frozen = convert_variables_to_constants_v2(function, lower_control_flow=False)

    def named(*inputs: TensorLike) -> dict[str, TensorLike]:
        return tree.pack_sequence_as(outputs, frozen(*inputs))

    return tf.function(named, input_signature=specs).get_concrete_function()


def _layer_path(scope: str, layer_names: set[str]) -> list[str]:
    """The layers a traced op's name scope passes through, outermost first.

    Keras opens a name scope per layer call; TensorFlow makes a scope name
    unique in its graph by appending `_1`, `_2`, ..., so a component
    matches a layer by its name or by its name plus such a suffix.
    """
    path = []
    for component in scope.split("/"):
        if component in layer_names:
            path.append(component)
        else:
            stripped = re.sub(r"_\d+$", "", component)
            if stripped in layer_names:
                path.append(stripped)
    return path


def _unsupported_ops_error(error: Exception, model: Any) -> ValueError:
    """A `ValueError` naming each op without a builtin and its layer."""
    layer_names = set()
    if isinstance(model, keras.layers.Layer):
        layer_names = {model.name} | {layer.name for layer in sublayers(model)}
    found = []
    for data in getattr(error, "errors", []):
        op = data.operator.name
        calls = [call.name for call in data.location.call]
        if not op or op == "tf.Const" or not calls:
            continue
        scope = calls[0].split("@")[0]
        path = _layer_path(scope, layer_names)
        where = f"layer '{path[-1]}'" if path else "no named layer"
        entry = f"{op.removeprefix('tf.')} in {where} (traced as {scope!r}): {data.error_message}"
        if entry not in found:
            found.append(entry)
    if not found:
        return ValueError(
            "The model cannot be converted to LiteRT with builtin ops only. "
            f"The converter said: {error}"
        )
    return ValueError(
        "The model uses TensorFlow ops that have no LiteRT builtin, and the "
        "export allows builtin ops only (no Flex delegate): "
        + "; ".join(found)
        + ". Replace these ops in the named layers, or leave those layers "
        "out of the exported model."
    )


def _check_invokes(content: bytes) -> None:
    """Run every signature once on zeros; raise if the interpreter fails."""
    with warnings.catch_warnings():
        # Its deprecation notice is for clients; the check needs no other
        # interpreter than the one TensorFlow already holds.
        warnings.filterwarnings("ignore", "(?s).*tf.lite.Interpreter is deprecated")
        interpreter = tf.lite.Interpreter(model_content=content)
    for key in interpreter.get_signature_list():
        runner = interpreter.get_signature_runner(key)
        zeros = {
            name: np.zeros(
                [1 if size < 0 else size for size in detail["shape_signature"]],
                detail["dtype"],
            )
            for name, detail in runner.get_input_details().items()
        }
        try:
            runner(**zeros)
        except (RuntimeError, ValueError) as error:
            raise ValueError(
                f"The converted model fails when its signature {key!r} is "
                f"run (on zeros): {error}. It is not written."
            ) from error


def count_litert_operators(model: str | os.PathLike[str] | bytes) -> dict[str, dict[str, int]]:
    """The operators each signature of a LiteRT file runs, by kind.

    At batch 1 an interpreter's time per call is about its number of
    operators times a fixed cost per operator, whatever their arithmetic:
    the count is the first thing to read about a file's speed.

    Args:
        model: A `.tflite` file's path, or its bytes.

    Returns:
        Signature key -> operator name (`"FULLY_CONNECTED"`, ...) -> how
        many the signature's graph holds, most frequent first. A `WHILE`
        counts as one operator: its condition and body are graphs of their
        own, not counted.
    """
    from tensorflow.lite.python import schema_py_generated as schema

    content = model if isinstance(model, bytes) else pathlib.Path(model).read_bytes()
    parsed = schema.ModelT.InitFromPackedBuf(content, 0)
    operators = vars(schema.BuiltinOperator).items()
    names = {code: name for name, code in operators if not name.startswith("_")}

    def kind(operator: Any) -> str:
        code = parsed.operatorCodes[operator.opcodeIndex]
        # Codes past 127 live in `builtinCode` only; older files fill the
        # deprecated byte. The larger of the two is the operator's.
        return names[max(code.builtinCode, code.deprecatedBuiltinCode)]

    counts = {}
    for signature in parsed.signatureDefs or []:
        kinds = [kind(op) for op in parsed.subgraphs[signature.subgraphIndex].operators]
        tally = {name: kinds.count(name) for name in set(kinds)}
        key = signature.signatureKey
        counts[key.decode() if isinstance(key, bytes) else key] = dict(
            sorted(tally.items(), key=lambda item: (-item[1], item[0]))
        )
    return counts


# ------------------------------------------------------ recurrent models
def _recurrent_layers(model: keras.Model) -> list[keras.layers.RNN]:
    """Every `keras.layers.RNN` inside `model`, `Bidirectional`'s included."""
    return [layer for layer in sublayers(model) if isinstance(layer, keras.layers.RNN)]


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
    recurrent = _recurrent_layers(model)
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


def _input_specs(inputs: list[TensorLike], sequence_length: int | None) -> list[Any]:
    """`tf.TensorSpec`s of the model's inputs, batch dimension free."""
    specs = []
    for index, tensor in enumerate(inputs):
        shape = [None, *tensor.shape[1:]]
        if len(shape) >= 2 and sequence_length is not None:
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


def _litert_inner_loop(layer: keras.layers.RNN, steps: int | None) -> Callable[..., Any]:
    """A stand-in for `layer.inner_loop` that LiteRT runs at any batch size.

    `keras.layers.RNN.inner_loop` steps the cell through Keras's time loop;
    this steps the same cell, with the same arguments and the same masking
    (a masked step keeps the previous states and outputs the previous
    output, or zeros with `zero_output_for_mask`), through one of two loops
    LiteRT's builtins hold with a dynamic batch dimension:

    - `steps` given: unrolled, step t read with `UNPACK`, outputs stacked;
    - `steps` None: a `WHILE` loop reading step t with `GATHER` and writing
      it into row t of a (time, batch, n) tensor (`DYNAMIC_UPDATE_SLICE`).

    Keras's own loops do not serve. Its `WHILE` loop keeps the steps in
    tensor lists, which LiteRT lowers to builtins only when the element
    shape, batch included, is static. Its unrolled loop (Keras 3.15) zeroes
    the outputs of masked steps with the mask in forward order when
    `go_backwards` has reversed the outputs, so a `Bidirectional` layer
    over padded sequences returns zeros at the wrong steps.

    Args:
        layer: A `keras.layers.RNN` (LSTM, GRU and SimpleRNN included).
        steps: The fixed number of time steps, or None.

    Returns:
        A function `(sequences, initial_state, mask, training) ->
        (last_output, outputs, states)` like `keras.layers.RNN.inner_loop`.
    """

    def inner_loop(
        sequences: Any, initial_state: Any, mask: Any, training: bool = False
    ) -> tuple[TensorLike, TensorLike, Any]:
        if tree.is_nested(mask):
            mask = mask[0]
        if not tree.is_nested(initial_state):
            initial_state = [initial_state]
        cell_kwargs = {}
        if call_has_training_arg(layer.cell):
            cell_kwargs["training"] = training

        def step(
            inputs: Any, states: tuple[TensorLike, ...], keep: Any, previous: Any
        ) -> tuple[TensorLike, tuple[TensorLike, ...]]:
            """One masked cell step on flat states; `previous` None: zeros."""
            output, new_states = layer.cell(
                inputs,
                tree.pack_sequence_as(initial_state, list(states)),
                **cell_kwargs,
            )
            new_states = tuple(tree.flatten(new_states))
            if keep is None:
                return output, new_states
            if previous is None or layer.zero_output_for_mask:
                previous = tf.zeros_like(output)
            output = tf.where(keep, output, previous)
            new_states = tuple(tf.where(keep, new, old) for new, old in zip(new_states, states))
            return output, new_states

        def time_first(x: TensorLike) -> TensorLike:
            return tf.transpose(x, [1, 0, *range(2, len(x.shape))])

        sequences = tree.map_structure(time_first, sequences)
        if mask is not None:
            # (time, batch, 1), broadcast over the units by `tf.where`;
            # EXPAND_DIMS has a bool kernel, a bool STRIDED_SLICE has not.
            mask = tf.expand_dims(time_first(tf.cast(mask, tf.bool)), -1)
        if layer.go_backwards:
            sequences = tree.map_structure(lambda x: tf.reverse(x, [0]), sequences)
            if mask is not None:
                mask = tf.reverse(mask, [0])
        flat_states = tuple(tree.flatten(initial_state))
        if steps is None and not _packable(flat_states):
            raise ValueError(
                f"Layer {layer.name!r} has states "
                f"{[(tuple(s.shape), s.dtype.name) for s in flat_states]}; a "
                "looped export (sequence_length=None) carries states of shape "
                "(batch, size) and one dtype. Pass a sequence_length to unroll "
                "the layer instead."
            )
        loop = _unrolled if steps is not None else _looped
        last, outputs, states = loop(
            step,
            sequences,
            mask,
            flat_states,
            layer.return_sequences,
        )
        outputs = time_first(outputs) if outputs is not None else tf.expand_dims(last, 1)
        return last, outputs, tree.pack_sequence_as(initial_state, list(states))

    return inner_loop


def _packable(states: tuple[TensorLike, ...]) -> bool:
    """Whether `_looped` can carry `states` as one concatenated tensor."""
    return all(len(state.shape) == 2 and state.dtype == states[0].dtype for state in states)


def _unrolled(
    step: Step, sequences: Any, mask: Any, states: tuple[TensorLike, ...], keep_all: bool
) -> tuple[TensorLike, TensorLike | None, tuple[TensorLike, ...]]:
    """One `step` per time step of a fixed length, no loop op.

    Args:
        step: `(inputs, states, keep, previous) -> (output, states)`.
        sequences: Time-major inputs (nested as the layer takes them).
        mask: `(time, batch, 1)` bool, or None.
        states: Flat tuple of the initial states.
        keep_all: Whether to return every step's output.

    Returns:
        `(last_output, outputs (time, batch, n) or None, states)`.
    """
    flat = [tf.unstack(x) for x in tree.flatten(sequences)]
    steps = len(flat[0])
    keeps = tf.unstack(mask) if mask is not None else [None] * steps
    outputs, output = [], None
    for time in range(steps):
        inputs = tree.pack_sequence_as(sequences, [x[time] for x in flat])
        output, states = step(inputs, states, keeps[time], output)
        outputs.append(output)
    return output, tf.stack(outputs) if keep_all else None, states


def _looped(
    step: Step, sequences: Any, mask: Any, states: tuple[TensorLike, ...], keep_all: bool
) -> tuple[TensorLike, TensorLike | None, tuple[TensorLike, ...]]:
    """`step` in a `WHILE` loop over a dynamic number of time steps.

    Arguments and result as `_unrolled`. Step t's inputs are read with
    `GATHER`; with `keep_all` its output is written into row t of a
    (time, batch, n) tensor by XLA's dynamic-update-slice op, which
    TensorFlow runs only under XLA but LiteRT has as the builtin
    `DYNAMIC_UPDATE_SLICE` (the traced graph is only ever converted). Its
    alternatives measured worse: `tf.tensor_scatter_nd_update` becomes a
    whole-tensor `SCATTER_ND` and `SELECT` per step (2 to 5 times slower
    from 12 to 100 steps), and a loop variable growing by concatenation
    converts but fails when the interpreter runs it.
    """
    flat = tree.flatten(sequences)
    steps = tf.shape(flat[0])[0]

    def inputs_at(time: TensorLike) -> Any:
        return tree.pack_sequence_as(sequences, [tf.gather(x, time) for x in flat])

    # Traced once for the output's shape and dtype, as Keras's loop does;
    # the converter prunes it.
    first, _ = step(inputs_at(0), states, None, None)
    history = tf.zeros(
        tf.concat([[steps if keep_all else 0], tf.shape(first)], 0),
        first.dtype,
    )

    # The states travel as one (batch, Σ sizes) tensor: a cell that passes
    # a state through unchanged (TemporalSkipCell's h_{t-1} becomes its
    # h_{t-2}) would otherwise make one body output the same tensor as
    # another body input, and LiteRT's WHILE copies the outputs back one by
    # one, so the pass-through would read the value already overwritten.
    sizes = [state.shape[-1] for state in states]

    def body(
        time: TensorLike, previous: TensorLike, history: TensorLike, packed: TensorLike
    ) -> tuple[TensorLike, ...]:
        states = tuple(tf.split(packed, sizes, axis=-1))
        keep = tf.gather(mask, time) if mask is not None else None
        output, states = step(inputs_at(time), states, keep, previous)
        if keep_all:
            start = tf.stack([time, *[0] * len(first.shape)])
            history = dynamic_update_slice(history, output[None], start)
        return (time + 1, output, history, tf.concat(states, axis=-1))

    packed = tf.concat(states, axis=-1)
    invariants = (
        tf.TensorShape([]),
        first.shape,
        tf.TensorShape([None]).concatenate(first.shape),
        packed.shape,
    )
    _, last, history, packed = tf.while_loop(
        lambda time, *_: time < steps,
        body,
        (tf.constant(0), tf.zeros_like(first), history, packed),
        shape_invariants=invariants,
    )
    states = tf.split(packed, sizes, axis=-1)
    return last, history if keep_all else None, tuple(states)


@contextlib.contextmanager
def _traceable_for_litert(recurrent: list[keras.layers.RNN], steps: int | None) -> Iterator[None]:
    """Step the recurrent layers through `_litert_inner_loop` with their
    dropout off, then restore both.

    `keras.layers.RNN` draws its cell's dropout masks before its loop even
    when `training` is False (they go unused), and drawing advances the
    cell's seed generator: an assignment to a variable, which the freezing
    of variables into constants cannot hold (TensorFlow's graph import
    refuses it). Dropout changes nothing at inference, so the trace sees
    rates of 0 and draws nothing.

    The layers are the caller's: the stand-in is removed and the rates are
    put back when the trace ends, however it ends.
    """
    loops = [(layer, _litert_inner_loop(layer, steps)) for layer in recurrent]
    with _dropout_off(recurrent), replaced_inner_loops(loops):
        yield


@contextlib.contextmanager
def _dropout_off(recurrent: list[keras.layers.RNN]) -> Iterator[None]:
    """The recurrent layers' cells at dropout rates of 0, then restored
    (see `_traceable_for_litert` for why)."""
    cells = [
        cell
        for layer in recurrent
        for cell in sublayers(layer)
        if isinstance(cell, DropoutRNNCell)
    ]
    rates = [(cell, cell.dropout, cell.recurrent_dropout) for cell in cells]
    try:
        for cell in cells:
            cell.dropout = cell.recurrent_dropout = 0.0
        yield
    finally:
        for cell, dropout, recurrent_dropout in rates:
            cell.dropout, cell.recurrent_dropout = dropout, recurrent_dropout


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

    Each recurrent layer runs one step of `_litert_inner_loop` from the
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
    with _dropout_off(recurrent):
        function = tf.function(step, input_signature=signature)
        concrete = function.get_concrete_function()
    _check_steps_match(model, concrete, spec, state_specs, sequence_output)
    return concrete


def _fed_inner_loop(
    layer: keras.layers.RNN,
    fed: list[TensorLike],
    sink: dict[int, list[TensorLike]],
    index: int,
) -> Callable[..., Any]:
    """`_litert_inner_loop` over one step, from the `fed` states, its new
    states put in `sink[index]`."""
    loop = _litert_inner_loop(layer, 1)

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
        last, outputs, new = loop(
            sequences, tree.pack_sequence_as(structure, states), mask, training
        )
        sink[index] = [tf.cast(state, tf.float32) for state in tree.flatten(new)]
        return last, outputs, new

    return inner_loop


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
            "over time). Received: streaming=True"
        )


def export_litert(
    model: keras.Model,
    path: str | os.PathLike[str],
    *,
    sequence_length: int | None = None,
    quantize: str | None = None,
    streaming: bool = False,
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
      with `time` dynamic when `sequence_length` is None);
    - outputs: named as the model's outputs (its output layers' names, or
      a dict output's keys; `output_0`, ... where those are not unique),
      float32, the model's output shapes with a `batch` first dimension.

    The batch dimension (and, without `sequence_length`, the time
    dimension) is dynamic: `Interpreter.resize_tensor_input` then
    `allocate_tensors` sets it, or a `get_signature_runner(
    "serving_default")` call resizes to the arrays it is given.

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
    path, 4 to 8 times faster per call than the loop on a small
    bidirectional model (the module's docstring has the figures); a
    client pads shorter sequences to that length, which only a model that
    masks its padding ignores. `None` keeps a `WHILE` loop that runs for
    any length.

    Args:
        model: A built `keras.Model` with at least one recurrent layer and
            none stateful.
        path: `str` or `os.PathLike`, the `.tflite` file to write; its
            directory must exist. Written atomically: a failed export leaves
            whatever was at `path` before.
        sequence_length: Positive integer T, the fixed number of steps, or
            `None` for any number.
        quantize: `None` (float32), `"float16"` or `"dynamic_int8"`; see
            `QUANTIZE_OPTIONS`.
        streaming: Whether to add the `step` signature described above.

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
        sequence_length = check_positive_int("sequence_length", sequence_length)
    quantize = check_quantize(quantize)
    streaming = check_bool("streaming", streaming)
    target = check_litert_path(path)
    specs = _input_specs(inputs, sequence_length)
    _check_unrollable(recurrent, specs)
    if streaming:
        _check_streamable(model, inputs, recurrent)

    def serve(*arguments: TensorLike) -> dict[str, TensorLike]:
        structure = arguments[0] if len(arguments) == 1 else list(arguments)
        return _named_outputs(model, model(structure, training=False))

    functions = {}
    with _traceable_for_litert(recurrent, sequence_length):
        function = tf.function(serve, input_signature=specs)
        functions["serving_default"] = function.get_concrete_function()
    if streaming:
        functions[STEP_SIGNATURE] = _step_function(model, specs[0], recurrent)
    content = convert_concrete_functions(functions, quantize=quantize, model=model)
    write_atomically(target, content)
    return target
