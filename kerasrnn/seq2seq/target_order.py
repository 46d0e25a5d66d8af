"""Right-to-left target order: the reversals that let a model read the
target backwards while it trains and decodes on left-to-right data.

A right-to-left model factorises the same probability in the other order,

    p(y_1 … y_L | x) = p(<end> | y_1 … y_L, x) · Π_t p(y_t | y_{t+1} … y_L, x)

(`eq:rnn-seq2seq` applied to the reversed target y_L … y_1, then `<end>`).
It takes the same `teacher_forcing_pair` batches as any model: its call
reverses the real tokens of the decoder input and puts its logits back in
the order of the targets, so that position t scores y_{t+1} (given the
tokens after it) and position L scores `<end>`. The loss, the metrics and an
ensemble's stacking of member logits see no difference. Its decoders emit
y_L first and reverse every answer (and its alignment rows) before
returning it.
"""

from __future__ import annotations

import tensorflow as tf

from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.types import TensorLike

TARGET_ORDERS = ("left_to_right", "right_to_left")


def reverse_first(values: TensorLike, lengths: TensorLike, axis: int) -> TensorLike:
    """Reverse the first `lengths` entries along `axis` of each row.

    Args:
        values: A tensor whose axes up to `axis` are the rows (`lengths`'
            shape) followed by the axis to reverse.
        lengths: Int tensor of the row shape: how many leading entries of
            each row to reverse; the entries after them keep their place.
        axis: The axis to reverse (negative counts from the end).

    Returns:
        `values` with entry j of a row of length L taken from L − 1 − j for
        j < L, unchanged for j ≥ L.
    """
    axis = axis % values.shape.rank
    steps = tf.shape(values)[axis]
    positions = tf.range(steps)
    lengths = tf.cast(lengths, tf.int32)[..., None]
    index = tf.where(positions < lengths, lengths - 1 - positions, positions)
    return tf.gather(values, index, axis=axis, batch_dims=axis)


def reversed_decoder_input(decoder_input: TensorLike) -> TensorLike:
    """`(batch, T)` [<start>, y_1 … y_L, 0 …] -> [<start>, y_L … y_1, 0 …]."""
    tokens = decoder_input[:, 1:]
    lengths = tf.reduce_sum(tf.cast(tokens != PAD_ID, tf.int32), axis=1)
    return tf.concat([decoder_input[:, :1], reverse_first(tokens, lengths, 1)], axis=1)


def in_target_order(steps: TensorLike, decoder_input: TensorLike) -> TensorLike:
    """A right-to-left model's per-step outputs, put in the targets' order.

    Args:
        steps: `(batch, T, …)`: step k of the reversed decoder input scores
            y_{L−k} for k < L and `<end>` at k = L.
        decoder_input: The `(batch, T)` left-to-right decoder input
            [<start>, y_1 … y_L, 0 …] the model was called with.

    Returns:
        `(batch, T, …)`: position t holds the step that scores y_{t+1} (t <
        L), position L the one that scores `<end>`.
    """
    lengths = tf.reduce_sum(tf.cast(decoder_input != PAD_ID, tf.int32), axis=1) - 1
    return reverse_first(steps, lengths, 1)


def answers_left_to_right(
    sequences: TensorLike, alignments: TensorLike | None
) -> tuple[TensorLike, TensorLike | None]:
    """Decoded right-to-left answers, reversed to read left to right.

    Args:
        sequences: `(…, T)` int ids y_L … y_1, then `<end>` and padding.
        alignments: None or `(…, T, S)`: row k the α of token k.

    Returns:
        `(sequences, alignments)` with each answer's tokens before `<end>`
        reversed (and their α rows), `<end>` and padding (and their rows) in
        place; alignments stays None if it was.
    """
    lengths = tf.reduce_sum(tf.cast(sequences > END_ID, tf.int32), axis=-1)
    sequences = reverse_first(sequences, lengths, -1)
    if alignments is None:
        return sequences, None
    return sequences, reverse_first(alignments, lengths, -2)


def teacher_forcing_of(sequences: TensorLike) -> tuple[TensorLike, TensorLike]:
    """Decoded answers -> the teacher-forced batch that scores them.

    Args:
        sequences: `(batch, T)` ids [y_1 … y_L, <end>, 0 …] (or L = T
            tokens and no `<end>`, an answer cut at the length limit).

    Returns:
        `(decoder_input, targets)`, both `(batch, T + 1)`: [<start>, y_1 …
        y_L, 0 …] and [y_1 … y_L, <end>, 0 …] (a cut answer gets no `<end>`
        to score).
    """
    tokens = tf.where(sequences == END_ID, PAD_ID, sequences)
    column = tf.zeros_like(sequences[:, :1])
    decoder_input = tf.concat([column + START_ID, tokens], axis=1)
    return decoder_input, tf.concat([sequences, column], axis=1)
