"""A Bidirectional LSTM's two directions stepped together, for LiteRT.

An unrolled loop costs LiteRT about a dozen operators per step and
direction. The two directions of a `Bidirectional` layer read the same
sequence, one from each end, so step t of both can be one step over a
stack of two: the forward direction reads x_t, the backward one x_{T-1-t},
each with its own weights. One input projection for every step of both
directions (`BATCH_MATMUL` over the pair) runs before the loop; then a step
of both is 17 operators, against 16 for each direction on its own.

A step's recurrent term is a `FULLY_CONNECTED` per direction, not one
`BATCH_MATMUL` over the pair: the two take the same time through LiteRT's
`Interpreter`, but XNNPACK's weight cache (LiteRT's `CompiledModel`, as
`examples/g2p_litert.py` serves) lets the unrolled steps' operators that
read one weight tensor share one packed copy, which it does for a
`FULLY_CONNECTED`'s weights and not for a `BATCH_MATMUL`'s.

Stacking, not one LSTM of 2n units with block-diagonal weights: that one has
as many operators but twice the multiplications, half of them by zeros,
and measured slower than two separate loops, which the stack beats at
batch 1 (the documentation's Design notes give the figures).

The gates are laid out i, f, o, c~, so that one `LOGISTIC` computes the
three sigmoid gates; the equations are `eq:rnn-lstm-i` … `eq:rnn-lstm-h`,
as `kerasrnn.LSTMCell` and Keras's `LSTMCell` compute them.
"""

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.types import TensorLike

__all__ = ["is_zero_state", "lstm_unfit_reason", "pairable", "paired_inner_loops"]


def lstm_unfit_reason(layer: keras.layers.RNN) -> str | None:
    """Why `layer` is not an LSTM as LiteRT's LSTM operators compute one,
    or None if it is.

    That LSTM has sigmoid gates, tanh candidate and output, the gates in
    Keras's order i, f, c~, o: an LSTM cell (kerasrnn's `LSTMCell` or
    Keras's) with those activations, alone in its `RNN` layer, computing in
    float32.
    """
    cell = layer.cell
    if not isinstance(cell, (LSTMCell, keras.layers.LSTMCell)):
        return f"its cell is {type(cell).__name__}, not an LSTM cell"
    if cell.activation is not keras.activations.tanh:
        return "its activation is not tanh"
    if cell.recurrent_activation is not keras.activations.sigmoid:
        return "its recurrent_activation is not sigmoid"
    if layer.compute_dtype != "float32":
        return f"it computes in {layer.compute_dtype}, not float32"
    return None


def pairable(layer: keras.layers.Bidirectional) -> bool:
    """Whether `paired_inner_loops` can step `layer`'s two directions: LSTMs
    (`lstm_unfit_reason`) of one size that return their sequences and zero
    the outputs of masked steps (as `Bidirectional` makes them)."""
    forward, backward = layer.forward_layer, layer.backward_layer
    return (
        lstm_unfit_reason(forward) is None
        and lstm_unfit_reason(backward) is None
        and forward.cell.units == backward.cell.units
        and forward.return_sequences
        and backward.return_sequences
        and forward.zero_output_for_mask
        and backward.zero_output_for_mask
        and not forward.go_backwards
        and backward.go_backwards
    )


def _paired_weights(
    forward: keras.layers.RNN, backward: keras.layers.RNN
) -> tuple[TensorLike, TensorLike, TensorLike]:
    """`(kernel (2, d, 4n), recurrent_kernel (2, n, 4n), bias (2, 1, 4n))`:
    the forward then the backward direction's, their gate blocks reordered
    from Keras's i, f, c~, o to i, f, o, c~. Built from the variables in the
    graph; the converter folds it into constants."""
    units = forward.cell.units

    def reordered(weight: TensorLike) -> TensorLike:
        blocks = tf.reshape(tf.convert_to_tensor(weight, tf.float32), [-1, 4, units])
        return tf.reshape(tf.gather(blocks, [0, 1, 3, 2], axis=1), [-1, 4 * units])

    cells = forward.cell, backward.cell
    biases = [cell.bias if cell.use_bias else tf.zeros([4 * units]) for cell in cells]
    return (
        tf.stack([reordered(cell.kernel) for cell in cells]),
        tf.stack([reordered(cell.recurrent_kernel) for cell in cells]),
        tf.stack([reordered(bias[None]) for bias in biases]),
    )


def is_zero_state(state: TensorLike) -> bool:
    """Whether the traced `state` is zeros: a constant of zeros (a fixed
    batch size) or a `Fill` of 0 (the zeros a layer makes for a batch
    size known only when the graph runs)."""
    value = tf.get_static_value(state)
    if value is None and getattr(state, "op", None) is not None and state.op.type == "Fill":
        value = tf.get_static_value(state.op.inputs[1])
    return value is not None and not np.any(value)


def paired_inner_loops(
    layer: keras.layers.Bidirectional,
    fallbacks: tuple[Callable[..., Any], Callable[..., Any]],
) -> list[tuple[keras.layers.RNN, Callable[..., Any]]]:
    """Stand-ins for the `inner_loop` of `layer`'s forward and backward
    layers that step both directions at once (module doc).

    `Bidirectional` calls its forward layer, then its backward one, with
    the same sequence and mask; the first call computes both directions
    and keeps the other's result for its call. Where the pair cannot serve
    (a fixed number of steps unknown, an initial state that is not zeros,
    nested inputs), both calls go to `fallbacks`, the loops
    `kerasrnn.export.rnn_loop.litert_inner_loop` makes.

    Args:
        layer: A `keras.layers.Bidirectional` for which `pairable` holds.
        fallbacks: The forward and backward layers' stand-ins otherwise.

    Returns:
        `[(forward_layer, stand_in), (backward_layer, stand_in)]`, for
        `kerasrnn.keras_internals.replaced_inner_loops`.
    """
    forward, backward = layer.forward_layer, layer.backward_layer
    kept: dict[int, tuple[TensorLike, TensorLike, Any]] = {}
    paired: dict[int, bool] = {}

    def stand_in(index: int) -> Callable[..., Any]:
        def inner_loop(
            sequences: Any, initial_state: Any, mask: Any, training: bool = False
        ) -> tuple[TensorLike, TensorLike, Any]:
            if index in kept:
                return kept.pop(index)
            if tree.is_nested(mask):
                mask = mask[0]
            if (
                tree.is_nested(sequences)
                or sequences.shape[1] is None
                or not all(is_zero_state(state) for state in tree.flatten(initial_state))
                or paired.get(1 - index) is False
            ):
                paired[index] = False
                return fallbacks[index](sequences, initial_state, mask, training)
            paired[index] = True
            results = _both_directions(forward, backward, sequences, mask, initial_state)
            kept[1 - index] = results[1 - index]
            return results[index]

        return inner_loop

    return [(forward, stand_in(0)), (backward, stand_in(1))]


def _both_directions(
    forward: keras.layers.RNN,
    backward: keras.layers.RNN,
    sequences: TensorLike,
    mask: TensorLike | None,
    initial_state: Any,
) -> list[tuple[TensorLike, TensorLike, Any]]:
    """Both directions over `sequences` `(batch, T, d)`: for each, what its
    `inner_loop` returns, `(last_output (batch, n), outputs (batch, T, n) in
    its processing order, [h, c])`, masked steps as Keras masks them (the
    states kept, the output zero)."""
    units = forward.cell.units
    kernel, recurrent, bias = _paired_weights(forward, backward)
    sequences = tf.cast(sequences, tf.float32)
    steps, features = sequences.shape[1], sequences.shape[2]
    # x_t for the forward direction and x_{T-1-t} for the backward one, every
    # t projected at once: (T, 2, batch, 4n).
    pair = tf.reshape(tf.stack([sequences, tf.reverse(sequences, [1])]), [2, -1, features])
    projected = tf.reshape(tf.matmul(pair, kernel) + bias, [2, -1, steps, 4 * units])
    projected = tf.transpose(projected, [2, 0, 1, 3])
    # Tensors are split, joined by concatenation and sliced without dropping
    # an axis: XNNPACK runs those operators inside the loop, where unstacking
    # (UNPACK), stacking (PACK), an index such as h[0] (a STRIDED_SLICE that
    # drops an axis) and an uneven split (SPLIT_V) are left to LiteRT's
    # slower builtin kernels between XNNPACK's. (The split of `projected`
    # into its T steps, once per call, is LiteRT's: XNNPACK splits in at
    # most four.)
    keeps: list[Any] = [None] * steps
    if mask is not None:
        keep = tf.cast(mask, tf.bool)
        # (T, 2, batch, 1): step t's mask for each direction.
        every_keep = tf.transpose(tf.stack([keep, tf.reverse(keep, [1])])[..., None], [2, 0, 1, 3])
        # (1, 2, batch, 1) each, by UNPACK: LiteRT's SPLIT takes no booleans.
        keeps = tf.unstack(every_keep[:, None])
    # The initial states are zeros (checked by the caller): the first step
    # has no recurrent term and no f ⊙ c_0. Step t's tensors are
    # (1, 2, batch, ·), the two directions on axis 1.
    h: Any = None
    c: Any = None
    outputs = []
    for time, z in enumerate(tf.split(projected, steps)):
        if h is not None:
            rows = tf.split(h, 2, axis=1)
            recurrent_terms = [tf.matmul(rows[0], recurrent[0]), tf.matmul(rows[1], recurrent[1])]
            z = z + tf.concat(recurrent_terms, 1)
        i, f, o = tf.split(tf.sigmoid(z[..., : 3 * units]), 3, axis=-1)
        new_c = i * tf.tanh(z[..., 3 * units :])
        if c is not None:
            new_c = f * c + new_c
        new_h = o * tf.tanh(new_c)
        if keeps[time] is not None:
            new_h = tf.where(keeps[time], new_h, 0.0 if h is None else h)
            new_c = tf.where(keeps[time], new_c, 0.0 if c is None else c)
        h, c = new_h, new_c
        outputs.append(h)
    stacked = tf.concat(outputs, 0)
    if mask is not None:
        stacked = tf.where(every_keep, stacked, 0.0)
    results = []
    for sequence, last_h, last_c in zip(
        tf.split(stacked, 2, axis=1), tf.split(h, 2, axis=1), tf.split(c, 2, axis=1)
    ):
        sequence = tf.transpose(tf.reshape(sequence, [steps, -1, units]), [1, 0, 2])
        states = [tf.reshape(last_h, [-1, units]), tf.reshape(last_c, [-1, units])]
        results.append(
            (sequence[:, -1], sequence, tree.pack_sequence_as(initial_state, states))
        )
    return results
