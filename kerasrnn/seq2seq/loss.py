"""−log p(y_t | y_<t, c), the factors of `eq:rnn-seq2seq`: the masked
sequence loss training minimises, and the next-token log-probabilities the
decoders rank by.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from kerasrnn.seq2seq.vocabulary import PAD_ID, START_ID
from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_number

#: Log-probability given to tokens a decoder may never emit (pad, start):
#: finite, so that sums and comparisons stay free of inf − inf.
FORBIDDEN_LOG_PROB = -1e9


def next_token_log_probs(logits: TensorLike) -> TensorLike:
    """log p(y_t | y_<t, c) of every token, with pad and start forbidden.

    Args:
        logits: `(..., V)` decoder logits.

    Returns:
        `(..., V)` float32 log-softmax of `logits`, except that the ids
        `PAD_ID` and `START_ID` get `FORBIDDEN_LOG_PROB`. The other entries
        are the model's probabilities, not renormalised.
    """
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    vocabulary_size = tf.shape(log_probs)[-1]
    forbidden = tf.logical_or(
        tf.equal(tf.range(vocabulary_size), PAD_ID),
        tf.equal(tf.range(vocabulary_size), START_ID),
    )
    return tf.where(forbidden, FORBIDDEN_LOG_PROB, log_probs)


@keras.saving.register_keras_serializable(package="kerasrnn")
class SequenceCrossEntropy(keras.losses.Loss):
    """Masked sequence cross-entropy: the mean of −log p(y_t | y_<t, c) over
    real target tokens (the negative log of `eq:rnn-seq2seq` per token).

    Padding positions (`y_true == 0`) contribute nothing and are not counted.

    Under a `tf.distribute` strategy the mean is over the real tokens of the
    whole global batch, however its examples and padding fall across the
    replicas, so data-parallel training follows the same gradient as one
    device.

    An ensemble's `(N, batch, T, V)` logits (`Seq2SeqEnsemble`) are each
    scored against the same targets and the N losses summed.

    With `label_smoothing` ε > 0 each real token is scored against the target
    distribution (1 − ε)·onehot(y_t) + ε/V, as Keras's
    `CategoricalCrossentropy(label_smoothing=ε)` does:
    −(1 − ε) log p(y_t) − (ε/V) Σ_v log p(v).

    Args:
        label_smoothing: ε in [0, 1); 0 is the plain cross-entropy.
        name: The loss's name in logs and saved models.
        **kwargs: Passed to `keras.losses.Loss` (`dtype`, ...).

    Call arguments:
        y_true: `(batch, T)` int target ids.
        y_pred: `(batch, T, V)` logits, or `(N, batch, T, V)`.
    """

    def __init__(
        self,
        label_smoothing: float = 0.0,
        name: str = "sequence_cross_entropy",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self.label_smoothing = check_number(
            "label_smoothing", label_smoothing, low=0, high=1, high_open=True
        )

    def call(self, y_true: TensorLike, y_pred: TensorLike) -> TensorLike:
        """Per-position losses whose Keras mean is the masked token mean."""
        y_true = ops.cast(y_true, "int32")
        mask = ops.cast(ops.not_equal(y_true, PAD_ID), y_pred.dtype)
        tokens, replicas = ops.sum(mask), 1
        if len(y_pred.shape) == len(y_true.shape) + 2:
            y_true = ops.broadcast_to(y_true, ops.shape(y_pred)[:-1])
            mask = ops.broadcast_to(mask, ops.shape(y_true))
        token_loss = keras.losses.sparse_categorical_crossentropy(
            y_true, y_pred, from_logits=True
        )
        if self.label_smoothing:
            uniform_loss = -ops.mean(
                ops.log_softmax(ops.cast(y_pred, token_loss.dtype), axis=-1), axis=-1
            )
            token_loss = (
                (1.0 - self.label_smoothing) * token_loss
                + self.label_smoothing * uniform_loss
            )
        mask = ops.cast(mask, token_loss.dtype)
        replica = tf.distribute.get_replica_context()
        if replica is not None and replica.num_replicas_in_sync > 1:
            replicas = replica.num_replicas_in_sync
            tokens = replica.all_reduce(tf.distribute.ReduceOp.SUM, tokens)
        # Keras averages this over the replica's (N·)batch·T positions and
        # divides by the number of replicas (the gradients are then summed);
        # this scale turns the result into Σ loss / (real tokens, all
        # replicas), summed over an ensemble's members: `tokens` counts the
        # targets once.
        scale = ops.cast(ops.size(mask) * replicas, mask.dtype) / ops.maximum(
            tokens, 1.0
        )
        return token_loss * mask * scale

    def get_config(self) -> Config:
        """`label_smoothing`, `name` and `reduction`."""
        return {
            "label_smoothing": self.label_smoothing,
            "name": self.name,
            "reduction": self.reduction,
        }
