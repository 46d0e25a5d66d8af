"""Elman layers as LiteRT's fused `UNIDIRECTIONAL_SEQUENCE_RNN` operator.

LiteRT runs a whole tanh RNN sequence, h_t = tanh(x_t W + h_{t-1} U + b)
(`eq:rnn-hidden`), as one operator, where the unrolled loop costs about
four operators per step. TensorFlow 2's converter never writes that
operator: it builds LiteRT's sequence operators only from functions marked
as Keras 2's LSTM (`kerasrnn.export.fused_lstm`), and the RNN operator only
from TensorFlow 1's op hints. So an export traces an Elman layer as that
marked LSTM function with the layer's weights in the candidate block c~
and zeros in the three gates' blocks (`fused_elman_inner_loop`), and
`as_sequence_rnn` rewrites every fused LSTM so marked whose candidate
weights are an Elman layer's into the RNN operator on the same input,
weights, bias and state variable.

The function's own body (run where the converter does not fuse it) is the
Elman step, so an unfused call computes the layer's equations too. The
layer's final state is its last output, which the operator gives: a layer
with `return_state=True` is fused as well. What else must hold is the LSTM
operator's contract: no mask, zero initial states, a fixed batch size.
"""

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from kerasrnn.cells.elman import ElmanCell
from kerasrnn.export.flatbuffer_edits import builtin, constant_value, drop_unused, operator_index
from kerasrnn.export.fused_lstm import fused_where_it_fits, marked_lstm_function
from kerasrnn.keras_internals import sublayers
from kerasrnn.litert_internals import schema
from kerasrnn.types import TensorLike

__all__ = ["as_sequence_rnn", "elman_kernels", "elman_unfit_reason", "fused_elman_inner_loop"]

# The inputs of UNIDIRECTIONAL_SEQUENCE_LSTM (LiteRT's lstm_shared.h):
# the sequence, the gates' input and recurrent weights, their biases, the
# output-state variable.
_SEQUENCE = 0
_CANDIDATE_INPUT_WEIGHTS = 3
_CANDIDATE_RECURRENT_WEIGHTS = 7
_CANDIDATE_BIAS = 14
_OUTPUT_STATE = 18
# The input, forget and output gates' weights and biases, all zero in an
# Elman layer's stand-in.
_GATES = (1, 2, 4, 5, 6, 8, 12, 13, 15)


def elman_unfit_reason(layer: keras.layers.RNN) -> str | None:
    """Why `layer` is not an RNN as LiteRT's `UNIDIRECTIONAL_SEQUENCE_RNN`
    computes one, or None if it is: an Elman cell (kerasrnn's `ElmanCell` or
    Keras's `SimpleRNNCell`) with tanh, alone in its `RNN` layer, computing
    in float32."""
    cell = layer.cell
    if not isinstance(cell, (ElmanCell, keras.layers.SimpleRNNCell)):
        return f"its cell is {type(cell).__name__}, not an Elman cell"
    if cell.activation is not keras.activations.tanh:
        return "its activation is not tanh"
    if layer.compute_dtype != "float32":
        return f"it computes in {layer.compute_dtype}, not float32"
    return None


def _elman_step(
    x: TensorLike,
    h: TensorLike,
    c: TensorLike,
    kernel: TensorLike,
    recurrent_kernel: TensorLike,
    bias: TensorLike,
) -> tuple[TensorLike, TensorLike]:
    """`eq:rnn-hidden` on the LSTM-shaped weights: the candidate block only."""
    z = tf.matmul(x, kernel) + tf.matmul(h, recurrent_kernel) + bias
    return tf.tanh(tf.split(z, 4, axis=-1)[2]), c


def _as_lstm_weights(cell: Any) -> tuple[TensorLike, TensorLike, TensorLike]:
    """The cell's `(kernel (d, n), recurrent_kernel (n, n), bias (n,))` as
    an LSTM's `(d, 4n)`, `(n, 4n)`, `(4n,)` in Keras's gate order i, f, c~,
    o: zeros but for c~."""

    def in_candidate_block(weight: TensorLike) -> TensorLike:
        zeros = tf.zeros_like(weight)
        return tf.concat([zeros, zeros, weight, zeros], axis=-1)

    bias = cell.bias if cell.use_bias else tf.zeros([cell.units])
    kernel, recurrent_kernel, bias = (
        in_candidate_block(tf.convert_to_tensor(weight))
        for weight in (cell.kernel, cell.recurrent_kernel, bias)
    )
    return kernel, recurrent_kernel, bias


def fused_elman_inner_loop(
    layer: keras.layers.RNN, fallback: Callable[..., Any]
) -> Callable[..., Any]:
    """A stand-in for `layer.inner_loop` that the converter fuses, and
    `as_sequence_rnn` then makes LiteRT's RNN operator.

    Where the call cannot be fused (`fused_where_it_fits`), the call goes
    to `fallback`, `kerasrnn.export.rnn_loop.litert_inner_loop`'s loop.

    Args:
        layer: A `keras.layers.RNN` for which `elman_unfit_reason` is None.
        fallback: The stand-in used where this one cannot serve.

    Returns:
        A function `(sequences, initial_state, mask, training) ->
        (last_output, outputs, states)` like `keras.layers.RNN.inner_loop`.
    """
    function = marked_lstm_function(layer.go_backwards, _elman_step)

    def fused(sequences: TensorLike, initial_state: Any) -> tuple[TensorLike, TensorLike, Any]:
        (h_0,) = tree.flatten(initial_state)
        last, outputs, _, _, _ = function(
            tf.cast(sequences, tf.float32), h_0, tf.zeros_like(h_0), *_as_lstm_weights(layer.cell)
        )
        # h_T is the last output; reading the function's own h_T would keep
        # the converter from fusing it.
        return last, outputs, tree.pack_sequence_as(initial_state, [last])

    return fused_where_it_fits(fused, fallback)


def elman_kernels(model: keras.layers.Layer) -> list[np.ndarray]:
    """The `kernel` (d, n) of every Elman layer in `model` that
    `fused_elman_inner_loop` can step (`elman_unfit_reason` is None)."""
    return [
        layer.cell.kernel.numpy()
        for layer in [model, *sublayers(model)]
        if isinstance(layer, keras.layers.RNN)
        and layer.cell.built
        and elman_unfit_reason(layer) is None
    ]


def _is_elman_stand_in(model: Any, subgraph: Any, op: Any, kernels: Sequence[np.ndarray]) -> bool:
    """Whether LSTM operator `op` has zero gates and the candidate input
    weights of one of `kernels` (transposed, (n, d)), within the rounding
    of a float16 or int8 file."""
    for index in _GATES:
        value = constant_value(model, subgraph, int(op.inputs[index]))
        if value is None or value.any():
            return False
    weights = constant_value(model, subgraph, int(op.inputs[_CANDIDATE_INPUT_WEIGHTS]))
    if weights is None:
        return False
    for kernel in kernels:
        if kernel.T.shape == weights.shape:
            # int8: half a step of the largest scale; float16: its rounding.
            tolerance = np.abs(kernel).max() / 127 * 0.51 + 1e-7
            if np.abs(weights - kernel.T).max() <= tolerance:
                return True
    return False


def as_sequence_rnn(model: Any, kernels: Sequence[np.ndarray]) -> bool:
    """Make the fused stand-ins of Elman layers in `model`
    `UNIDIRECTIONAL_SEQUENCE_RNN` operators.

    Each `UNIDIRECTIONAL_SEQUENCE_LSTM` whose gates are zero and whose
    candidate weights are one of `kernels`' becomes an RNN operator (tanh,
    the LSTM's time-major flag) on the LSTM's sequence, candidate weights
    (W (n, d), U (n, n)), candidate bias (n,) and output-state variable;
    the weights and the cell-state variable it no longer reads are dropped.

    Args:
        model: A parsed LiteRT flatbuffer (`schema_py_generated.ModelT`),
            changed in place.
        kernels: The Elman layers' kernels, `(d, n)` each (`elman_kernels`).

    Returns:
        Whether an operator was rewritten.
    """
    if not kernels:
        return False
    lstm = schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
    changed = False
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            if builtin(model, op) != lstm or not _is_elman_stand_in(model, subgraph, op, kernels):
                continue
            lstm_options = op.builtinOptions
            weights = subgraph.tensors[int(op.inputs[_CANDIDATE_INPUT_WEIGHTS])]
            # LiteRT's op versions: 2 reads int8 weights, 3 also quantizes
            # its inputs asymmetrically.
            version = 1
            if weights.type == schema.TensorType.INT8:
                version = 3 if lstm_options.asymmetricQuantizeInputs else 2
            op.opcodeIndex = operator_index(
                model, schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, version
            )
            op.inputs = np.array(
                [
                    op.inputs[_SEQUENCE],
                    op.inputs[_CANDIDATE_INPUT_WEIGHTS],
                    op.inputs[_CANDIDATE_RECURRENT_WEIGHTS],
                    op.inputs[_CANDIDATE_BIAS],
                    op.inputs[_OUTPUT_STATE],
                ],
                np.int32,
            )
            options = schema.SequenceRNNOptionsT()
            options.timeMajor = lstm_options.timeMajor
            options.fusedActivationFunction = schema.ActivationFunctionType.TANH
            options.asymmetricQuantizeInputs = lstm_options.asymmetricQuantizeInputs
            op.builtinOptionsType = schema.BuiltinOptions.SequenceRNNOptions
            op.builtinOptions = options
            op.intermediates = None
            changed = True
    if changed:
        drop_unused(model)
    return changed
