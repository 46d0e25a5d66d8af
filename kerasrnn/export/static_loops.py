"""`WHILE` loops that LiteRT runs in its static mode.

LiteRT's `WHILE` kernel runs its loop in one of two modes, chosen when the
interpreter prepares the call. In the static mode the body and the
condition are prepared once per call, and each step copies the loop's
tensors and runs the body's operators. In the dynamic mode, taken when any
tensor of the body is dynamic (sized only as it runs), each step resizes
the body's inputs, which prepares every operator of the body again and
reallocates its tensors. The static mode gives the same answers and
spares a call that preparing at every step.

A converted loop's tensors keep the unknown batch of the signature as −1 in
their shape signatures, and some kernels make their outputs dynamic for an
input with an unknown dimension, whatever its actual size: `TOPK_V2` (which
beam search ranks with) does. The shapes the loop actually runs with do not
come from those signatures: the `WHILE` kernel gives the body and the
condition the shapes of the loop's inputs, which the signature's call has
set, and prepares them again whenever those change (a new batch size). So
`static_loop_shapes` removes the shape signatures of every tensor of the
loops' subgraphs, which leaves their kernels the static shapes they are
prepared with. A body whose outputs still differ in shape from its inputs
(a loop that grows a tensor) stays in the dynamic mode, as the kernel
checks that itself.
"""

from typing import Any

from kerasrnn.export.flatbuffer_edits import builtin
from kerasrnn.litert_internals import schema

__all__ = ["static_loop_shapes"]


def static_loop_shapes(model: Any) -> bool:
    """Remove the shape signatures of the tensors of every `WHILE` loop's
    body and condition subgraphs (module doc).

    Args:
        model: A parsed LiteRT flatbuffer (`schema_py_generated.ModelT`),
            changed in place.

    Returns:
        Whether a tensor had an unknown dimension in its shape signature.
    """
    loops: set[int] = set()
    for subgraph in model.subgraphs:
        for operator in subgraph.operators:
            if builtin(model, operator) == schema.BuiltinOperator.WHILE:
                options = operator.builtinOptions
                loops.update((options.condSubgraphIndex, options.bodySubgraphIndex))
    changed = False
    for index in sorted(loops):
        for tensor in model.subgraphs[index].tensors:
            if tensor.shapeSignature is not None and (tensor.shapeSignature < 0).any():
                tensor.shapeSignature = None
                changed = True
    return changed
