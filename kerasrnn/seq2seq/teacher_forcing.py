"""Teacher-forcing batches: (source, target) ids -> the `(inputs, labels)`
that `fit` trains a `Seq2Seq` on, step t fed y_{t-1} and scored on y_t.
"""

from __future__ import annotations

import tensorflow as tf

from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.types import TensorLike


def teacher_forcing_pair(
    source_ids: TensorLike, target_ids: TensorLike
) -> tuple[dict[str, TensorLike], TensorLike]:
    """A batch of (source, target) ids -> the `(inputs, labels)` of `fit`.

    Args:
        source_ids: `(batch, S)` int, padded with 0 (at either end).
        target_ids: `(batch, T)` int, right-padded with 0, without start or
            end ids.

    Returns:
        `({"source": (batch, S), "decoder_input": (batch, T + 1)},
        decoder_target (batch, T + 1))`: decoder_input is
        [<start>, y_1 … y_n, 0 …] and decoder_target is
        [y_1 … y_n, <end>, 0 …], so step t is fed y_{t-1} and scored on y_t.
    """
    source_ids = tf.cast(source_ids, tf.int32)
    target_ids = tf.cast(target_ids, tf.int32)
    batch = tf.shape(target_ids)[0]
    steps = tf.shape(target_ids)[1]
    lengths = tf.reduce_sum(tf.cast(target_ids != PAD_ID, tf.int32), axis=1)
    decoder_input = tf.concat(
        [tf.fill([batch, 1], START_ID), target_ids], axis=1
    )
    decoder_target = tf.concat(
        [target_ids, tf.zeros([batch, 1], tf.int32)], axis=1
    ) + END_ID * tf.one_hot(lengths, steps + 1, dtype=tf.int32)
    return {"source": source_ids, "decoder_input": decoder_input}, decoder_target
