"""LiteRT files whose calls never depend on the call before.

LiteRT's sequence operators (`UNIDIRECTIONAL_SEQUENCE_LSTM`, ...) read their
initial states from *variable tensors* and leave their final states there,
so each call of a converted file starts where the previous one ended
(tensorflow/tensorflow#47813): a client would have to call
`Interpreter.reset_all_variables()` before every call, and a signature
runner never does. `zeroed_on_every_call` rewrites the flatbuffer so that
every subgraph first fills each of its variable tensors with zeros (one
`FILL` per tensor), which makes every call start from the zero state the
model was traced with.
"""

from typing import Any

import numpy as np
from tensorflow.lite.python import schema_py_generated as schema
from tensorflow.lite.tools.flatbuffer_utils import convert_object_to_bytearray

__all__ = ["zeroed_on_every_call"]


def _operator_index(model: Any, builtin: int) -> int:
    """The index of `builtin` in the model's operator codes, added if absent."""
    for index, code in enumerate(model.operatorCodes):
        # Codes past 127 live in `builtinCode` only (see
        # `count_litert_operators`).
        if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
            return index
    code = schema.OperatorCodeT()
    code.builtinCode = builtin
    code.deprecatedBuiltinCode = min(builtin, 127)
    code.version = 1
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _constant(model: Any, subgraph: Any, value: np.ndarray, name: str) -> int:
    """Add a constant tensor holding `value` to `subgraph`; its index."""
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(value.tobytes(), np.uint8)
    model.buffers.append(buffer)
    tensor = schema.TensorT()
    tensor.shape = np.array(value.shape, np.int32)
    tensor.type = {
        np.dtype("int32"): schema.TensorType.INT32,
        np.dtype("float32"): schema.TensorType.FLOAT32,
    }[value.dtype]
    tensor.buffer = len(model.buffers) - 1
    tensor.name = name.encode()
    subgraph.tensors.append(tensor)
    return len(subgraph.tensors) - 1


def zeroed_on_every_call(content: bytes) -> bytes:
    """`content` with its float32 variable tensors zeroed at each call's start.

    Args:
        content: A LiteRT flatbuffer.

    Returns:
        The same flatbuffer when it has no variable tensor; else one whose
        every subgraph begins with a `FILL` of zeros into each variable
        tensor its operators read (of the tensor's static shape).

    Raises:
        ValueError: a variable tensor is not float32 or has no static shape
            (the sequence operators' states are both).
    """
    model = schema.ModelT.InitFromPackedBuf(content, 0)
    changed = False
    for subgraph in model.subgraphs:
        read = {int(index) for op in subgraph.operators for index in op.inputs if index >= 0}
        written = {int(index) for op in subgraph.operators for index in op.outputs}
        states = sorted(
            index
            for index in read - written
            if subgraph.tensors[index].isVariable
        )
        fills = []
        for index in states:
            tensor = subgraph.tensors[index]
            shape = np.asarray(tensor.shape, np.int32)
            if tensor.type != schema.TensorType.FLOAT32 or (
                tensor.shapeSignature is not None and (np.asarray(tensor.shapeSignature) < 0).any()
            ):
                raise ValueError(
                    f"The converted model keeps a state in variable tensor "
                    f"{tensor.name.decode()!r} of type {tensor.type} and shape "
                    f"{shape.tolist()}, which cannot be zeroed at each call."
                )
            fill = schema.OperatorT()
            fill.opcodeIndex = _operator_index(model, schema.BuiltinOperator.FILL)
            name = tensor.name.decode()
            zero = np.array(0.0, np.float32)
            fill.inputs = np.array(
                [
                    _constant(model, subgraph, shape, f"{name}/shape"),
                    _constant(model, subgraph, zero, f"{name}/zero"),
                ],
                np.int32,
            )
            fill.outputs = np.array([index], np.int32)
            fill.builtinOptionsType = schema.BuiltinOptions.FillOptions
            fill.builtinOptions = schema.FillOptionsT()
            fills.append(fill)
        if fills:
            subgraph.operators = fills + list(subgraph.operators)
            changed = True
    if not changed:
        return content
    return convert_object_to_bytearray(model)
