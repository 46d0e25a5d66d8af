"""What the decoders need from a model: the `DecodableModel` protocol and the
`DecoderStep` its `decode_step` returns.

`greedy_decode`, `sample_decode`, `beam_search_decode` and `export_serving`
drive any object with these members; `Seq2Seq` (one encoder–decoder) and
`Seq2SeqEnsemble` (several, mixed per step) implement them.
"""

from typing import NamedTuple

import tensorflow as tf


class DecoderStep(NamedTuple):
    """One decoder step's result (`eq:rnn-seq2seq`, one factor).

    Attributes:
        logits: `(batch, V)`: the scores of y_t, any that `log_softmax` turns
            into log p(y_t | y_<t, c) (an ensemble gives normalised
            log-probabilities).
        states: The new decoder states d_t, a list of `(batch, …)` tensors
            in the order `encode` returned the initial ones.
        alignment: `(batch, S)` float32 α_t for an attention model (an
            ensemble's: the mean of its decoding members', when every one
            attends); None otherwise.
    """

    logits: tf.Tensor
    states: list[tf.Tensor]
    alignment: tf.Tensor | None
