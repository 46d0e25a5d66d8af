"""The LiteRT converter as every exporter of kerasrnn uses it.

- `check_litert_path(path)`, `check_quantize(quantize)`: argument checks
  that run before any conversion;
- `convert_concrete_functions(functions, quantize=..., model=...)`: freeze
  the variables to constants, convert with LiteRT's builtin ops only, turn an
  op without a builtin into a `ValueError` naming the op and its layer,
  make kerasrnn's edits of the converted file (`kerasrnn.export.rewrites`),
  and run the result once so that a model which would fail at `invoke()`
  is never returned;
- `write_atomically(path, content)`: the bytes appear at `path` whole or
  not at all;
- `count_litert_operators(model)`: the operators each signature runs, and
  `count_litert_loop_operators(model)` those of its `WHILE` loops.

Converting a traced function as it is keeps the variables as resources
read inside a `WHILE` body (`READ_VARIABLE`), and the model fails at
`invoke()` (TensorFlow 2.21); frozen to constants first
(`convert_variables_to_constants_v2`) it converts and runs.
"""

import contextlib
import os
import pathlib
import re
import tempfile
import warnings
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from kerasrnn import litert_internals
from kerasrnn.allowed import QUANTIZE_OPTIONS
from kerasrnn.export.flatbuffer_edits import builtin
from kerasrnn.export.rewrites import rewritten
from kerasrnn.keras_internals import sublayers
from kerasrnn.litert_internals import schema
from kerasrnn.native_output import held_back_stderr
from kerasrnn.tensorflow_internals import convert_variables_to_constants_v2
from kerasrnn.types import TensorLike
from kerasrnn.validation import check_choice

__all__ = [
    "QUANTIZE_OPTIONS",
    "check_litert_path",
    "check_quantize",
    "convert_concrete_functions",
    "count_litert_loop_operators",
    "count_litert_operators",
    "write_atomically",
]


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
    # Freezing (grappler), saving and converting log from C++ whatever
    # TensorFlow's log level, and the check's interpreter announces its
    # XNNPACK delegate: the export's own steps, not the user's, so their
    # output is shown only if one fails.
    with held_back_stderr(True):
        content = rewritten(_convert(functions, quantize, model), model)
        _check_invokes(content)
    return content


def _convert(functions: dict[str, Any], quantize: str | None, model: Any) -> bytes:
    """`convert_concrete_functions`' conversion, before its check."""
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
            return converter.convert()
        except Exception as error:  # ConverterError, and its subclasses
            raise _unsupported_ops_error(error, model) from error


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
    # Freezing inlines every function the graph calls; a function traced
    # on constants (`kerasrnn.export.fused_lstm.constant_weights`) has
    # nothing to freeze and keeps the functions the converter fuses.
    frozen = (
        convert_variables_to_constants_v2(function, lower_control_flow=False)
        if function.variables
        else function
    )

    def named(*inputs: TensorLike) -> dict[str, TensorLike]:
        return tree.pack_sequence_as(outputs, tree.flatten(frozen(*inputs)))

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

    Each operator costs the interpreter a small fixed time on top of its
    arithmetic (for the default g2p model at batch 1, the same operators at
    8 units take about half the time the 128-unit file takes, the rest
    being arithmetic): many small operators make a slow file, but a file's
    weights may cost more.

    Args:
        model: A `.tflite` file's path, or its bytes.

    Returns:
        Signature key -> operator name (`"FULLY_CONNECTED"`, ...) -> how
        many the signature's graph holds, most frequent first. A `WHILE`
        counts as one operator: its condition and body are graphs of their
        own, which `count_litert_loop_operators` counts.
    """
    parsed = _parsed(model)
    return {
        key: _tally(parsed, [subgraph])
        for key, subgraph in _signature_subgraphs(parsed).items()
    }


def count_litert_loop_operators(
    model: str | os.PathLike[str] | bytes,
) -> dict[str, dict[str, int]]:
    """The operators of each signature's `WHILE` loops, by kind: what one
    more iteration of its loops runs.

    Args:
        model: A `.tflite` file's path, or its bytes.

    Returns:
        Signature key -> operator name -> how many the conditions and bodies
        of the signature's loops hold, loops inside them included (empty
        for a signature without a loop), most frequent first.
    """
    parsed = _parsed(model)
    loop_kind = schema.BuiltinOperator.WHILE
    counts = {}
    for key, subgraph in _signature_subgraphs(parsed).items():
        loops, pending = [], [subgraph]
        while pending:
            for op in pending.pop().operators:
                if builtin(parsed, op) == loop_kind:
                    options = op.builtinOptions
                    called = [parsed.subgraphs[options.condSubgraphIndex],
                              parsed.subgraphs[options.bodySubgraphIndex]]
                    loops += called
                    pending += called
        counts[key] = _tally(parsed, loops)
    return counts


def _parsed(model: str | os.PathLike[str] | bytes) -> Any:
    """The flatbuffer object tree of a `.tflite` file's path or bytes."""
    content = model if isinstance(model, bytes) else pathlib.Path(model).read_bytes()
    return litert_internals.parsed(content)


def _signature_subgraphs(parsed: Any) -> dict[str, Any]:
    """Signature key -> the subgraph it runs."""
    subgraphs = {}
    for signature in parsed.signatureDefs or []:
        key = signature.signatureKey
        key = key.decode() if isinstance(key, bytes) else key
        subgraphs[key] = parsed.subgraphs[signature.subgraphIndex]
    return subgraphs


def _tally(parsed: Any, subgraphs: list[Any]) -> dict[str, int]:
    """Operator name -> how many `subgraphs` hold, most frequent first."""
    operators = vars(schema.BuiltinOperator).items()
    names = {code: name for name, code in operators if not name.startswith("_")}
    kinds = [names[builtin(parsed, op)] for subgraph in subgraphs for op in subgraph.operators]
    tally = {name: kinds.count(name) for name in set(kinds)}
    return dict(sorted(tally.items(), key=lambda item: (-item[1], item[0])))
