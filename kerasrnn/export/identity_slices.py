"""Slices that copy their input whole, removed from a LiteRT flatbuffer.

TensorFlow writes a new axis by indexing (`x[:, None]`, `mask[..., None]`)
as a `StridedSlice` with a new-axis mask, which LiteRT's converter lowers
to a `RESHAPE` that inserts the axis followed by a `STRIDED_SLICE` over
every element of the result: a copy. A seq2seq export held nine such
copies in its signature's graph and three in each step of its beam
search's loop, each an operator that LiteRT runs, outside XNNPACK, at
every call or step. `without_identity_slices` removes them: each reader of
such a slice reads the slice's input instead.
"""

from typing import Any

import numpy as np

from kerasrnn.export.flatbuffer_edits import builtin, constant_value, drop_unused
from kerasrnn.litert_internals import schema

__all__ = ["without_identity_slices"]


def without_identity_slices(model: Any) -> bool:
    """Remove every `STRIDED_SLICE` that copies its whole input (module doc).

    A slice is such a copy when its output has its input's shape and shape
    signature, its strides are 1, each axis starts at 0 and ends at its
    size (or is masked to run whole), and it neither drops nor adds an
    axis. A slice whose output a subgraph returns is kept.

    Args:
        model: A parsed LiteRT flatbuffer (`schema_py_generated.ModelT`),
            changed in place.

    Returns:
        Whether a slice was removed.
    """
    changed = False
    for subgraph in model.subgraphs:
        returned = {int(index) for index in subgraph.outputs}
        replaced = {}
        kept = []
        for operator in subgraph.operators:
            if (
                builtin(model, operator) == schema.BuiltinOperator.STRIDED_SLICE
                and int(operator.outputs[0]) not in returned
                and _copies_its_input(model, subgraph, operator)
            ):
                replaced[int(operator.outputs[0])] = int(operator.inputs[0])
            else:
                kept.append(operator)
        if not replaced:
            continue
        for operator in kept:
            operator.inputs = np.array(
                [_source(replaced, int(index)) for index in operator.inputs], np.int32
            )
        subgraph.operators = kept
        changed = True
    if changed:
        drop_unused(model)
    return changed


def _source(replaced: dict[int, int], index: int) -> int:
    """The tensor a reader of `index` reads once the copies are gone."""
    while index in replaced:
        index = replaced[index]
    return index


def _copies_its_input(model: Any, subgraph: Any, operator: Any) -> bool:
    """Whether the `STRIDED_SLICE` `operator` copies its input whole."""
    options = operator.builtinOptions
    if options.ellipsisMask or options.newAxisMask or options.shrinkAxisMask or options.offset:
        return False
    source = subgraph.tensors[int(operator.inputs[0])]
    result = subgraph.tensors[int(operator.outputs[0])]
    if not np.array_equal(source.shape, result.shape) or not _same_signature(source, result):
        return False
    begin, end, strides = (
        constant_value(model, subgraph, int(index)) for index in operator.inputs[1:4]
    )
    if begin is None or end is None or strides is None:
        return False
    sizes = source.shape if source.shapeSignature is None else source.shapeSignature
    for axis, size in enumerate(sizes):
        starts_at_0 = options.beginMask >> axis & 1 or begin[axis] == 0
        runs_to_the_end = options.endMask >> axis & 1 or (size >= 0 and end[axis] >= size)
        if not (starts_at_0 and runs_to_the_end and strides[axis] == 1):
            return False
    return True


def _same_signature(source: Any, result: Any) -> bool:
    """Whether two tensors have the same shape signature (or neither has one)."""
    if source.shapeSignature is None or result.shapeSignature is None:
        return source.shapeSignature is None and result.shapeSignature is None
    return np.array_equal(source.shapeSignature, result.shapeSignature)
