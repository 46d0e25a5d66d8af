"""What the decoders need from a model: the `DecodableModel` protocol and the
`DecoderStep` its `decode_step` returns.

`greedy_decode`, `sample_decode`, `beam_search_decode` and `export_serving`
drive any object with these members; `Seq2Seq` (one encoder–decoder) and
`Seq2SeqEnsemble` (several, mixed per step) implement them.
"""

from typing import Any, NamedTuple, Protocol, runtime_checkable

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


@runtime_checkable
class DecodableModel(Protocol):
    """What `greedy_decode`, `sample_decode`, `beam_search_decode` and
    `export_serving` need from a model: one encoder–decoder (`Seq2Seq`) or
    several mixed per step (`Seq2SeqEnsemble`).

    A decoder calls `encode` once, then `decode_step` once per emitted token
    (inside one `tf.while_loop`), reading log p(y_t | y_<t, x) from the
    step's logits (`eq:rnn-seq2seq`); beam search first gives the context
    to its B hypotheses per example with `context_for_beams`, and at the end
    ranks them by `rescore`.

    Attributes:
        source_vocabulary_size: The number of source ids (reserved ones
            included).
        target_vocabulary_size: V, the number of target ids.
    """

    source_vocabulary_size: int
    target_vocabulary_size: int

    @property
    def has_attention(self) -> bool:
        """Whether every `decode_step` gives α_t (so the decoders can return
        alignments)."""
        ...

    @property
    def reads_right_to_left(self) -> bool:
        """Whether the model emits y_L first: the decoders then reverse its
        answers (and their α rows) to read left to right."""
        ...

    def encode(
        self, source_ids: tf.Tensor, training: bool = False
    ) -> tuple[list[tf.Tensor], dict[str, Any]]:
        """Read the source.

        Args:
            source_ids: `(batch, S)` int ids padded with 0 (anywhere).
            training: Whether dropout applies.

        Returns:
            `(states, context)`: the decoder's initial states d_0, a list of
            `(batch, ·)` tensors that the decoders carry (and beam search
            reorders) without reading them, and what every step reads, a
            dict of `(batch, …)` tensors (nested for an ensemble).
        """
        ...

    def decode_step(
        self,
        tokens: tf.Tensor,
        states: list[tf.Tensor],
        context: dict[str, Any],
        training: bool = False,
        queries_per_source: int = 1,
    ) -> DecoderStep:
        """One step: y_{t-1} `(batch,)` int ids and d_{t-1} -> the logits of
        y_t, d_t and α_t.

        `queries_per_source` is k when `tokens` and `states` hold k
        consecutive rows per example of `context` (beam search's
        hypotheses, after `context_for_beams(context, k)`).
        """
        ...

    def context_for_beams(self, context: dict[str, Any], width: int) -> dict[str, Any]:
        """`context` for `width` consecutive hypotheses per example, as
        `decode_step(..., queries_per_source=width)` reads it."""
        ...

    def rescore(
        self,
        source_ids: tf.Tensor,
        sequences: tf.Tensor,
        scores: tf.Tensor,
        *,
        unrolled: bool = False,
    ) -> tf.Tensor:
        """The scores beam search ranks its final hypotheses by, in both of
        its drivers (`kerasrnn.seq2seq.beam.rank_beam`).

        Args:
            source_ids: `(batch, S)` int ids.
            sequences: `(batch, B, L)` int32 hypotheses in decoding order
                (`<end>` included, then padding).
            scores: `(batch, B)` float32: their log-probabilities divided by
                the length penalty.
            unrolled: True when the graph must hold no loop op (the LiteRT
                export: its beam search is unrolled, L is static and the
                batch −1 in every shape); beam search passes it only then.

        Returns:
            `(batch, B)` float32: `scores` for one model; an ensemble with
            right-to-left members adds λ · log p_R2L(y | x).
        """
        ...
