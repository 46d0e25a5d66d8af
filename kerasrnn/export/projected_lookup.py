"""A table lookup and its projection folded into one lookup, for LiteRT.

A decoder step reads its token's embedding, `GATHER` of row y of E
`(V, d)`, then projects it, `FULLY_CONNECTED` by W `(d, k)` plus b: the
result is row y of the table E W + b `(V, k)`. Where E, W and b are
constants, `projected_lookups` computes that table once, at export, points
the `GATHER` at it and drops the `FULLY_CONNECTED`. A step then reads k
floats of the table instead of all d·k of W, which at batch 1 stream through
the cache at every step (the time of a call is mostly such weight traffic,
not its number of operators), and runs one operator less. The table holds
V·k floats where W holds d·k, one copy shared by every signature.

The fold applies where a `GATHER` of a float32 constant along its first
axis, with no batch dimensions, is read by one `FULLY_CONNECTED` alone, as
its input, whose weights (and bias, if any) are float32 constants, with no
fused activation and the gather's shape but the last axis. A quantized
file keeps both operators: its `FULLY_CONNECTED` computes with int8 or
float16 weights, which a float32 table would not reproduce.
"""

from typing import Any

import numpy as np

from kerasrnn.export.flatbuffer_edits import add_constant, builtin, drop_unused
from kerasrnn.litert_internals import schema

__all__ = ["projected_lookups"]


def projected_lookups(model: Any) -> bool:
    """Fold every `GATHER` → `FULLY_CONNECTED` pair of `model` (a parsed
    `schema.ModelT`) that fits (module doc) into one `GATHER` of the
    projected table, in place; whether any was folded."""
    tables: dict[tuple[int, int, int], int] = {}
    folded = False
    for subgraph in model.subgraphs:
        readers: dict[int, list[Any]] = {}
        for op in subgraph.operators:
            for index in op.inputs:
                readers.setdefault(int(index), []).append(op)
        outputs = {int(index) for index in subgraph.outputs}
        dropped = []
        for gather in subgraph.operators:
            if builtin(model, gather) != schema.BuiltinOperator.GATHER:
                continue
            looked_up = int(gather.outputs[0])
            read_by = readers.get(looked_up, [])
            if len(read_by) != 1 or looked_up in outputs:
                continue
            projection = read_by[0]
            table = _projected_table(model, subgraph, gather, projection, tables)
            if table is None:
                continue
            gather.inputs = np.array([table, gather.inputs[1]], np.int32)
            gather.outputs = projection.outputs
            dropped.append(projection)
            folded = True
        subgraph.operators = [op for op in subgraph.operators if op not in dropped]
    if folded:
        drop_unused(model)
    return folded


def _projected_table(
    model: Any, subgraph: Any, gather: Any, projection: Any, tables: dict[tuple[int, int, int], int]
) -> int | None:
    """The index in `subgraph` of the table E W + b for `gather` followed by
    `projection`, added (its buffer shared by every subgraph), or None if
    the pair does not fit."""
    if builtin(model, projection) != schema.BuiltinOperator.FULLY_CONNECTED:
        return None
    options = projection.builtinOptions
    gather_options = gather.builtinOptions
    if (
        int(projection.inputs[0]) != int(gather.outputs[0])
        or options.fusedActivationFunction != schema.ActivationFunctionType.NONE
        or options.weightsFormat != schema.FullyConnectedOptionsWeightsFormat.DEFAULT
        or (gather_options is not None and (gather_options.axis or gather_options.batchDims))
    ):
        return None
    inputs = [int(index) for index in projection.inputs]
    bias_index = inputs[2] if len(inputs) > 2 else -1
    embedding = _float32_constant(model, subgraph, int(gather.inputs[0]))
    weights = _float32_constant(model, subgraph, inputs[1])
    bias = None if bias_index < 0 else _float32_constant(model, subgraph, bias_index)
    if embedding is None or weights is None or (bias_index >= 0 and bias is None):
        return None
    values, tensor = embedding
    kernel, _ = weights
    looked_up = subgraph.tensors[int(gather.outputs[0])]
    projected = subgraph.tensors[int(projection.outputs[0])]
    if (
        values.ndim != 2
        or kernel.ndim != 2
        or kernel.shape[1] != values.shape[1]
        or not _same_but_last(looked_up, projected, kernel.shape[0])
    ):
        return None
    key = (
        int(tensor.buffer),
        int(subgraph.tensors[inputs[1]].buffer),
        -1 if bias_index < 0 else int(subgraph.tensors[bias_index].buffer),
    )
    # FULLY_CONNECTED stores W transposed, (k, d).
    table = values.astype(np.float64) @ kernel.astype(np.float64).T
    if bias is not None:
        table = table + bias[0].astype(np.float64)
    index = add_constant(
        model, subgraph, table.astype(np.float32), f"{tensor.name.decode()}_projected",
        buffer=tables.get(key),
    )
    tables[key] = int(subgraph.tensors[index].buffer)
    return index


def _float32_constant(model: Any, subgraph: Any, index: int) -> tuple[np.ndarray, Any] | None:
    """`(values, tensor)` of float32 constant tensor `index`, else None."""
    tensor = subgraph.tensors[index]
    data = model.buffers[tensor.buffer].data if tensor.buffer > 0 else None
    if tensor.type != schema.TensorType.FLOAT32 or data is None or len(data) == 0:
        return None
    shape = [int(size) for size in tensor.shape]
    values = np.frombuffer(np.asarray(data, np.uint8).tobytes(), np.float32).reshape(shape)
    return values, tensor


def _same_but_last(looked_up: Any, projected: Any, size: int) -> bool:
    """Whether `projected`'s shape is `looked_up`'s with its last axis
    `size`, in the static shape and in the signature (−1 for any size)."""
    for field in ("shape", "shapeSignature"):
        before, after = getattr(looked_up, field), getattr(projected, field)
        if before is None and after is None:
            continue
        if before is None or after is None:
            return False
        if [int(n) for n in before[:-1]] + [size] != [int(n) for n in after]:
            return False
    return True
