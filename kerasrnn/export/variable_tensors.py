"""LiteRT files whose calls never depend on the call before.

LiteRT's sequence operators (`UNIDIRECTIONAL_SEQUENCE_LSTM`, ...) read their
initial states from *variable tensors* and leave their final states there,
so each call of a converted file starts where the previous one ended
(tensorflow/tensorflow#47813): a client would have to call
`Interpreter.reset_all_variables()` before every call, and a signature
runner never does. (A float16 file sets them from float16 zeros by a
`DEQUANTIZE`, which the interpreter runs once, when it prepares the model,
so the same holds there.) `zeroed_on_every_call` edits the parsed flatbuffer
so that every subgraph first fills each of its variable tensors with zeros
(one `FILL` per tensor), which makes every call start from the zero state
the model was traced with.
"""

from typing import Any

import numpy as np

from kerasrnn.export.flatbuffer_edits import (
    add_constant,
    builtin,
    constant_value,
    drop_unused,
    operator_index,
)
from kerasrnn.litert_internals import schema

__all__ = ["zeroed_on_every_call"]


def zeroed_on_every_call(model: Any) -> bool:
    """Zero the float32 variable tensors of `model` at each call's start:
    every subgraph begins with a `FILL` of zeros into each variable tensor
    its operators read (of the tensor's static shape).

    Args:
        model: A parsed LiteRT flatbuffer (`schema_py_generated.ModelT`),
            changed in place.

    Returns:
        Whether the model had such a variable tensor.

    Raises:
        ValueError: a variable tensor is not float32 or has no static shape
            (the sequence operators' states are both).
    """
    changed = False
    for subgraph in model.subgraphs:
        states = _initial_states(model, subgraph)
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
            fill.opcodeIndex = operator_index(model, schema.BuiltinOperator.FILL)
            name = tensor.name.decode()
            zero = np.array(0.0, np.float32)
            fill.inputs = np.array(
                [
                    add_constant(model, subgraph, shape, f"{name}/shape"),
                    add_constant(model, subgraph, zero, f"{name}/zero"),
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
    if changed:
        drop_unused(model)
    return changed


def _initial_states(model: Any, subgraph: Any) -> list[int]:
    """The variable tensors of `subgraph` that its operators read before
    writing them: those nothing writes, and those a float16 file sets from
    a float16 constant by a `DEQUANTIZE`, which the interpreter runs once
    (its input is constant), not at every call; those are removed."""
    read = {int(index) for op in subgraph.operators for index in op.inputs if index >= 0}
    producers = {int(output): op for op in subgraph.operators for output in op.outputs}
    states = []
    for index in sorted(read):
        if not subgraph.tensors[index].isVariable:
            continue
        producer = producers.get(index)
        if producer is None:
            states.append(index)
        elif (
            builtin(model, producer) == schema.BuiltinOperator.DEQUANTIZE
            and constant_value(model, subgraph, int(producer.inputs[0])) is not None
        ):
            subgraph.operators = [op for op in subgraph.operators if op is not producer]
            states.append(index)
    return states
