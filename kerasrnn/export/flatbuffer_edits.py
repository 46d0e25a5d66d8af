"""Edits of a converted LiteRT flatbuffer, in the schema's object API.

The exporters finish some of what LiteRT's converter writes (the states of
its sequence operators, `kerasrnn.export.variable_tensors`; the sequence
operators themselves, `kerasrnn.export.fused_rnn`; a lookup and its
projection, `kerasrnn.export.projected_lookup`; the shapes of `WHILE`
loops, `kerasrnn.export.static_loops`; slices that copy their input,
`kerasrnn.export.identity_slices`) by editing the parsed
model (`schema_py_generated.ModelT`) and serializing it again:

- `builtin(model, operator)`: the kind of an operator;
- `operator_index(model, builtin)`: the operator-code entry of a kind;
- `add_constant(model, subgraph, value, name)`: a new constant tensor;
- `constant_value(model, subgraph, index)`: a constant tensor's values,
  read through a float16 file's `DEQUANTIZE` or an int8 tensor's scale;
- `drop_unused(model)`: the `DEQUANTIZE` operators, tensors and buffers
  that an edit left unread, removed.

Each edit changes the parsed model in place and says whether it changed
anything; `kerasrnn.export.converter` parses the converter's bytes once,
makes every edit, and serializes once.
"""

from typing import Any

import numpy as np

from kerasrnn.litert_internals import schema

__all__ = ["add_constant", "builtin", "constant_value", "drop_unused", "operator_index"]

_NUMPY_TYPES = {
    schema.TensorType.FLOAT32: np.float32,
    schema.TensorType.FLOAT16: np.float16,
    schema.TensorType.INT8: np.int8,
    schema.TensorType.INT32: np.int32,
}


def builtin(model: Any, operator: Any) -> int:
    """The `schema.BuiltinOperator` code of `operator`."""
    return _kind(model.operatorCodes[operator.opcodeIndex])


def _kind(code: Any) -> int:
    """The builtin operator an `OperatorCodeT` names."""
    # Codes past 127 live in `builtinCode` only; older files fill the
    # deprecated byte. The larger of the two is the operator's.
    return int(max(code.builtinCode, code.deprecatedBuiltinCode))


def operator_index(model: Any, kind: int, version: int = 1) -> int:
    """The index of operator kind `kind` at `version` in the model's
    operator codes, added if absent."""
    for index, code in enumerate(model.operatorCodes):
        if _kind(code) == kind and code.version == version:
            return index
    code = schema.OperatorCodeT()
    code.builtinCode = kind
    code.deprecatedBuiltinCode = min(kind, 127)
    code.version = version
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def add_constant(
    model: Any, subgraph: Any, value: np.ndarray, name: str, buffer: int | None = None
) -> int:
    """Add a constant tensor holding `value` (int32 or float32) to
    `subgraph`; its index. With `buffer`, the tensor reads that existing
    buffer (which must hold `value`) instead of a new one."""
    if buffer is None:
        data = schema.BufferT()
        data.data = np.frombuffer(value.tobytes(), np.uint8)
        model.buffers.append(data)
        buffer = len(model.buffers) - 1
    tensor = schema.TensorT()
    tensor.shape = np.array(value.shape, np.int32)
    tensor.type = {
        np.dtype("int32"): schema.TensorType.INT32,
        np.dtype("float32"): schema.TensorType.FLOAT32,
    }[value.dtype]
    tensor.buffer = buffer
    tensor.name = name.encode()
    subgraph.tensors.append(tensor)
    return len(subgraph.tensors) - 1


def constant_value(model: Any, subgraph: Any, index: int) -> np.ndarray | None:
    """The float32 values of constant tensor `index`, or None if it is not a
    constant.

    A float32 tensor is read from its buffer; a float16 file's weights are
    float16 constants read through a `DEQUANTIZE`, and a dynamic-int8 file's
    are int8 constants times their scale (per tensor or per channel).
    """
    tensor = subgraph.tensors[index]
    data = model.buffers[tensor.buffer].data if tensor.buffer > 0 else None
    if data is None or len(data) == 0:
        producer = _producers(subgraph).get(index)
        if producer is None or builtin(model, producer) != schema.BuiltinOperator.DEQUANTIZE:
            return None
        return constant_value(model, subgraph, int(producer.inputs[0]))
    kind = _NUMPY_TYPES.get(tensor.type)
    if kind is None:
        return None
    shape = [int(size) for size in tensor.shape]
    value = np.frombuffer(np.asarray(data, np.uint8).tobytes(), kind).reshape(shape)
    quantization = tensor.quantization
    if kind is np.int8:
        if quantization is None or quantization.scale is None:
            return None
        scale = np.asarray(quantization.scale, np.float32)
        if scale.size > 1:
            axis_shape = [1] * len(shape)
            axis_shape[quantization.quantizedDimension] = -1
            scale = scale.reshape(axis_shape)
        return value.astype(np.float32) * scale
    return value.astype(np.float32)


def _producers(subgraph: Any) -> dict[int, Any]:
    """Tensor index -> the operator that writes it."""
    return {int(output): op for op in subgraph.operators for output in op.outputs}


def drop_unused(model: Any) -> None:
    """Remove what no operator reads any more: `DEQUANTIZE` operators whose
    output is unread (what an edit leaves of a float16 file's weights), then
    every subgraph's unreferenced tensors and the buffers no tensor holds.

    Tensor and buffer indices are renumbered everywhere they appear: the
    operators, the subgraphs' inputs and outputs, the signatures and the
    model's metadata.
    """
    for subgraph in model.subgraphs:
        while True:
            read = _read_tensors(subgraph)
            unused = [
                op
                for op in subgraph.operators
                if builtin(model, op) == schema.BuiltinOperator.DEQUANTIZE
                and not read.intersection(int(output) for output in op.outputs)
            ]
            if not unused:
                break
            subgraph.operators = [op for op in subgraph.operators if op not in unused]
    for subgraph_index, subgraph in enumerate(model.subgraphs):
        _drop_unused_tensors(model, subgraph_index, subgraph)
    _drop_unused_buffers(model)


def _read_tensors(subgraph: Any) -> set[int]:
    """The tensors an operator reads or the subgraph outputs."""
    read = {int(index) for op in subgraph.operators for index in op.inputs if index >= 0}
    read.update(int(index) for index in subgraph.outputs)
    return read


def _drop_unused_tensors(model: Any, subgraph_index: int, subgraph: Any) -> None:
    used = _read_tensors(subgraph)
    used.update(int(index) for index in subgraph.inputs)
    for op in subgraph.operators:
        used.update(int(index) for index in op.outputs)
        if op.intermediates is not None:
            used.update(int(index) for index in op.intermediates)
    kept = sorted(used)
    if len(kept) == len(subgraph.tensors):
        return
    renumbered = {old: new for new, old in enumerate(kept)}

    def renumber(indices: Any) -> Any:
        if indices is None:
            return None
        return np.array(
            [renumbered[int(index)] if index >= 0 else int(index) for index in indices], np.int32
        )

    subgraph.tensors = [subgraph.tensors[index] for index in kept]
    subgraph.inputs = renumber(subgraph.inputs)
    subgraph.outputs = renumber(subgraph.outputs)
    for op in subgraph.operators:
        op.inputs = renumber(op.inputs)
        op.outputs = renumber(op.outputs)
        op.intermediates = renumber(op.intermediates)
    for signature in model.signatureDefs or []:
        if signature.subgraphIndex == subgraph_index:
            for entry in list(signature.inputs or []) + list(signature.outputs or []):
                entry.tensorIndex = renumbered[int(entry.tensorIndex)]


def _drop_unused_buffers(model: Any) -> None:
    # Buffer 0 is the schema's empty sentinel, which tensors without data
    # point to; it always stays first.
    used = {0}
    for subgraph in model.subgraphs:
        used.update(int(tensor.buffer) for tensor in subgraph.tensors)
    used.update(int(entry.buffer) for entry in model.metadata or [])
    if model.metadataBuffer is not None:
        used.update(int(index) for index in model.metadataBuffer)
    kept = sorted(used)
    if len(kept) == len(model.buffers):
        return
    renumbered = {old: new for new, old in enumerate(kept)}
    model.buffers = [model.buffers[index] for index in kept]
    for subgraph in model.subgraphs:
        for tensor in subgraph.tensors:
            tensor.buffer = renumbered[int(tensor.buffer)]
    for entry in model.metadata or []:
        entry.buffer = renumbered[int(entry.buffer)]
    if model.metadataBuffer is not None:
        model.metadataBuffer = np.array(
            [renumbered[int(index)] for index in model.metadataBuffer], np.int32
        )
