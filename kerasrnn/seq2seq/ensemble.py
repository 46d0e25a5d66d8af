"""N encoder–decoders trained side by side and decoded as one model.

An ensemble of N `Seq2Seq` members over the same vocabularies predicts each
next token with the mean of the members' distributions:

    p(y_t | y_<t, x) = (1/N) Σ_k p_k(y_t | y_<t, x),

each member conditioned on its own decoder states and its own encoding of x
(the factors of `eq:rnn-seq2seq`, mixed per step). Members may differ in
cell, size, context and attention; their initial weights differ because each
layer draws its own.

Training (`fit` with `SequenceCrossEntropy`): the call returns every
member's logits, `(N, batch, T, V)`, and the loss is the members' losses
summed, so each member's weights receive exactly the gradient they would
receive trained alone on the same batches; the logged `loss` is that sum.

Decoding: `greedy_decode`, `sample_decode`, `beam_search_decode` and
`export_serving` take an ensemble wherever they take a `Seq2Seq`. Each step
runs every member's `decode_step` and mixes the distributions as above; the
alignment α_t of an ensemble whose members all attend is the members' mean
(still summing to 1 over the real source tokens, 0 on padding).

Right-to-left members (`Seq2Seq(target_order="right_to_left")`) in an
ensemble with left-to-right ones do not take part in the steps: they rescore.
The left-to-right members' beam search finds B hypotheses y with scores
s(y) (log p(y | x), divided by the length penalty if any); each gets

    s(y) + λ · log p_R2L(y | x),

p_R2L the right-to-left members' mixture, mixed per token as above, and the
hypotheses are ranked by that sum (Liu et al. 2016, "Agreement on
target-bidirectional neural machine translation"). Greedy and sampled
decoding, which keep one hypothesis, use the left-to-right members alone. An
ensemble of right-to-left members only decodes right to left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from kerasrnn.seq2seq.beam import repeat_rows, trailing_shape
from kerasrnn.seq2seq.loss import next_token_log_probs
from kerasrnn.seq2seq.model import Seq2Seq
from kerasrnn.seq2seq.protocol import DecoderStep
from kerasrnn.seq2seq.target_order import (
    in_target_order,
    reversed_decoder_input,
    teacher_forcing_of,
)
from kerasrnn.seq2seq.vocabulary import PAD_ID
from kerasrnn.types import Config, ShapeLike, TensorLike
from kerasrnn.validation import check_number


def mixture_log_probs(member_log_probs: TensorLike) -> TensorLike:
    """log (1/N) Σ_k p_k: the members' next-token distributions mixed.

    Args:
        member_log_probs: `(N, ..., V)` float log p_k of N members.

    Returns:
        `(..., V)`: the mixture's log-probabilities (normalised when each
        member's are), computed without leaving log space.
    """
    return ops.logsumexp(member_log_probs, axis=0) - math.log(member_log_probs.shape[0])


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2SeqEnsemble(keras.Model):
    """Seq2Seq members whose next-token probabilities are averaged.

    Args:
        members: A list of one or more `Seq2Seq` models with the same source
            and target vocabulary sizes.
        rescoring_weight: λ ≥ 0, the weight of the right-to-left members'
            log-probability when they rescore beam search's hypotheses;
            None (the default) is 1 where such rescorers exist. Only an
            ensemble with both left-to-right and right-to-left members
            rescores: any other refuses a λ, which could change nothing.
        **kwargs: Passed to `keras.Model` (`name`, ...).

    Call arguments:
        inputs: `{"source": (batch, S), "decoder_input": (batch, T)}` int
            ids (or the pair), as `teacher_forcing_pair` makes.
        training: Whether dropout and scheduled sampling apply.

    Returns:
        `(N, batch, T, V)`: member k's logits at index k.

    Example:

    >>> from kerasrnn import seq2seq
    >>> ensemble = seq2seq.Seq2SeqEnsemble(
    ...     [seq2seq.Seq2Seq(30, 40, kerasrnn.LSTMCell(32), attention="luong")
    ...      for _ in range(3)])
    >>> ensemble.compile("adam", seq2seq.SequenceCrossEntropy())
    >>> batch = {"source": np.ones((2, 5)), "decoder_input": np.ones((2, 4))}
    >>> tuple(ensemble(batch).shape)
    (3, 2, 4, 40)
    >>> ensemble.fit(dataset.map(seq2seq.teacher_forcing_pair), epochs=5)  # doctest: +SKIP
    >>> seq2seq.beam_search_decode(
    ...     ensemble, source_ids,
    ...     decoding=seq2seq.DecodingSpec(beam_width=4, max_target_length=20),
    ... )  # doctest: +SKIP
    """

    def __init__(
        self,
        members: Sequence[Seq2Seq],
        rescoring_weight: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(members, (list, tuple)):
            members = [
                keras.saving.deserialize_keras_object(member)
                if isinstance(member, dict) else member
                for member in members
            ]
        if (
            not isinstance(members, (list, tuple))
            or not members
            or not all(isinstance(member, Seq2Seq) for member in members)
        ):
            raise ValueError(
                "Argument `members` must be a non-empty list of "
                f"kerasrnn.seq2seq.Seq2Seq models. Received: members={members!r}"
            )
        for name in ("source_vocabulary_size", "target_vocabulary_size"):
            sizes = [getattr(member, name) for member in members]
            if len(set(sizes)) != 1:
                raise ValueError(
                    f"Argument `members` must share one {name}: their "
                    f"distributions are mixed token by token. Received: {sizes}"
                )
        self.members = list(members)
        #: λ, or None for an ensemble with no rescorers.
        self.rescoring_weight: float | None = None
        if self.rescorers():
            self.rescoring_weight = (
                1.0
                if rescoring_weight is None
                else check_number("rescoring_weight", rescoring_weight, low=0)
            )
        elif rescoring_weight is not None:
            raise ValueError(
                "Argument `rescoring_weight` needs right-to-left members to "
                "rescore with and left-to-right members whose beam they "
                "rescore: this ensemble's members all read the target "
                f"{self.members[0].target_order.replace('_', '-')}. "
                f"Received: rescoring_weight={rescoring_weight!r}"
            )
        self.source_vocabulary_size = members[0].source_vocabulary_size
        self.target_vocabulary_size = members[0].target_vocabulary_size
        kinds = {member.attention_kind for member in self.decoding_members()}
        #: The decoding members' attention kind, or "mixed".
        self.attention_kind = kinds.pop() if len(kinds) == 1 else "mixed"
        self.build()

    def build(self, input_shape: ShapeLike | dict[str, ShapeLike] | None = None) -> None:
        """Nothing to create: every member built its weights in its own
        constructor, so a restored ensemble can load its weights at once."""

    # Methods, not properties: Keras saves a model by walking its
    # attributes in name order, and a property listing members would file
    # their weights under its own name in place of `members`.
    def decoding_members(self) -> list[Seq2Seq]:
        """The members whose mixture makes every decoding step: the
        left-to-right ones, or all if every member reads right to left."""
        left_to_right = [m for m in self.members if not m.reads_right_to_left]
        return left_to_right or list(self.members)

    def rescorers(self) -> list[Seq2Seq]:
        """The right-to-left members that rescore beam search's hypotheses
        (none unless left-to-right members decode)."""
        if all(member.reads_right_to_left for member in self.members):
            return []
        return [member for member in self.members if member.reads_right_to_left]

    @property
    def attention(self) -> tuple[keras.layers.Layer, ...]:
        """The decoding members' attention layers when every one attends,
        else empty.

        Kept under this name because Keras files an ensemble's weights by
        attribute name, in name order: the `.keras` files of an ensemble
        whose members all attend hold their attention weights here. Ask
        `has_attention` whether the ensemble attends.
        """
        if not self.has_attention:
            return ()
        return tuple(member.attention for member in self.decoding_members())

    @property
    def has_attention(self) -> bool:
        """Whether every decoding member attends (each step's α_t is then
        their mean; otherwise the decoders refuse `return_alignments`)."""
        return all(member.has_attention for member in self.decoding_members())

    @property
    def reads_right_to_left(self) -> bool:
        """Whether the decoding members read the target backwards."""
        return self.decoding_members()[0].reads_right_to_left

    def _split_states(self, states: list[TensorLike]) -> list[list[TensorLike]]:
        """The flat state list of `encode` -> one list per decoding member."""
        pieces: list[list[TensorLike]] = []
        start = 0
        for member in self.decoding_members():
            count = len(member.decoder_state_sizes)
            pieces.append(list(states[start : start + count]))
            start += count
        return pieces

    # ------------------------------------------------------------- training
    def call(
        self,
        inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike],
        training: bool | None = None,
    ) -> TensorLike:
        """`(N, batch, T, V)`: every member's logits; see the call arguments."""
        step = None
        if training and self.optimizer is not None:
            # The members have no optimizer of their own to count steps.
            step = self.optimizer.iterations
        return ops.stack(
            [
                member(inputs, training=training, sampling_step=step)
                for member in self.members
            ]
        )

    # ------------------------------------------------------------- decoding
    def encode(
        self, source_ids: TensorLike, training: bool | None = False
    ) -> tuple[list[TensorLike], dict[str, Any]]:
        """Every decoding member's `encode`: `(states, context)`, the
        members' state lists concatenated and `{"members": [each member's
        context]}`."""
        states: list[TensorLike] = []
        contexts: list[dict[str, Any]] = []
        for member in self.decoding_members():
            member_states, member_context = member.encode(source_ids, training)
            states.extend(member_states)
            contexts.append(member_context)
        return states, {"members": contexts}

    def context_for_beams(self, context: dict[str, Any], width: int) -> dict[str, Any]:
        """`Seq2Seq.context_for_beams` of every decoding member."""
        return {
            "members": [
                member.context_for_beams(member_context, width)
                for member, member_context in zip(
                    self.decoding_members(), context["members"]
                )
            ]
        }

    def decode_step(
        self,
        tokens: TensorLike,
        states: list[TensorLike],
        context: dict[str, Any],
        training: bool | None = False,
        queries_per_source: int = 1,
    ) -> DecoderStep:
        """One step of every decoding member, mixed: see `Seq2Seq.decode_step`.

        Returns:
            A `DecoderStep`: as logits the mixture's log-probabilities
            log (1/N) Σ_k p_k `(batch, V)` float32 (normalised, so any
            decoder may treat them as logits), the members' new states, and
            α_t `(batch, S)`, the members' mean, when every decoding member
            attends (else None).
        """
        log_probs: list[TensorLike] = []
        new_states: list[TensorLike] = []
        alignments: list[TensorLike | None] = []
        for member, member_states, member_context in zip(
            self.decoding_members(), self._split_states(states), context["members"]
        ):
            step = member.decode_step(
                tokens, member_states, member_context, training=training,
                queries_per_source=queries_per_source,
            )
            log_probs.append(
                ops.log_softmax(ops.cast(step.logits, "float32"), axis=-1)
            )
            new_states.extend(step.states)
            alignments.append(step.alignment)
        mixed = mixture_log_probs(ops.stack(log_probs))
        alignment = None
        if self.has_attention:
            alignment = ops.mean(ops.stack(alignments), axis=0)
        return DecoderStep(mixed, new_states, alignment)

    def attention_weights(
        self, inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike]
    ) -> TensorLike:
        """The decoding members' mean α of a teacher-forced batch: `(B, T,
        S)`, see `Seq2Seq.attention_weights` (each member checks the inputs)."""
        if not self.has_attention:
            raise ValueError(
                "attention_weights needs every decoding member to attend. "
                "Received: members with attention="
                f"{[member.attention_kind for member in self.decoding_members()]}"
            )
        return ops.mean(
            ops.stack(
                [member.attention_weights(inputs) for member in self.decoding_members()]
            ),
            axis=0,
        )

    def rescore(
        self,
        source_ids: tf.Tensor,
        sequences: tf.Tensor,
        scores: tf.Tensor,
        *,
        unrolled: bool = False,
    ) -> tf.Tensor:
        """The scores beam search ranks by: `scores` plus λ · log p_R2L(y |
        x) under the right-to-left members' mixture, when the ensemble has
        such rescorers; else `scores` unchanged.

        Args:
            source_ids: `(batch, S)` int ids.
            sequences: `(batch, B, L)` int32 hypotheses of the decoding
                (left-to-right) members, `<end>` included, then padding; L
                static with `unrolled`.
            scores: `(batch, B)` float32, what the beam found.
            unrolled: Step each rescorer's decoder through the L
                positions in a Python loop instead of calling it on the
                whole sequence: the same scores, in a graph without loop
                ops (the LiteRT export's).

        Returns:
            `(batch, B)` float32.
        """
        if self.rescoring_weight is None:
            return scores
        width, length = trailing_shape(sequences)
        rescored = self._rescorer_log_probs(
            repeat_rows(tf.cast(source_ids, tf.int32), width),
            tf.reshape(sequences, [-1, length]),
            unrolled,
        )
        return scores + self.rescoring_weight * tf.reshape(rescored, [-1, width])

    def _rescorer_log_probs(
        self, source_ids: TensorLike, sequences: TensorLike, unrolled: bool
    ) -> TensorLike:
        """log p_R2L(y | x) of decoded answers under the rescorers' mixture.

        Each rescorer is teacher-forced through the answer: through its call,
        or with `unrolled` through `decode_step` in a Python loop over the
        answer's positions, the same equations one step at a time. The call
        of a rescorer whose attention feeds its cell is a `WHILE` loop over
        tensor lists, which LiteRT's builtins hold only at a fixed batch.

        Args:
            source_ids: `(batch, S)` int32 ids.
            sequences: `(batch, T)` answers [y_1 … y_L, <end>, 0 …] (or L =
                T tokens and no `<end>`).
            unrolled: Whether to step in a Python loop (T must be static).

        Returns:
            `(batch,)` float32: Σ_t log (1/M) Σ_m p_m(y_t | y_{>t}, x), the
            `<end>` factor included (none for an answer cut at T tokens),
            over the M rescorers.
        """
        decoder_input, targets = teacher_forcing_of(sequences)
        member_log_probs = []
        for member in self.rescorers():
            if unrolled:
                logits = self._stepped_logits(member, source_ids, decoder_input)
            else:
                logits = member({"source": source_ids, "decoder_input": decoder_input})
            member_log_probs.append(next_token_log_probs(logits))
        mixed = mixture_log_probs(tf.stack(member_log_probs))
        picked = tf.gather(mixed, targets, batch_dims=2)
        return tf.reduce_sum(tf.where(targets != PAD_ID, picked, 0.0), axis=-1)

    @staticmethod
    def _stepped_logits(
        rescorer: Seq2Seq, source_ids: TensorLike, decoder_input: TensorLike
    ) -> TensorLike:
        """`rescorer`'s teacher-forced `(batch, T, V)` logits, its
        `decode_step` run over the reversed decoder input in a Python loop."""
        states, context = rescorer.encode(source_ids)
        logits = []
        for tokens in tf.unstack(reversed_decoder_input(decoder_input), axis=1):
            decoded = rescorer.decode_step(tokens, states, context)
            logits.append(decoded.logits)
            states = decoded.states
        return in_target_order(tf.stack(logits, axis=1), decoder_input)

    # --------------------------------------------------------------- config
    def get_config(self) -> Config:
        """The members serialized, and `rescoring_weight` (None without
        rescorers)."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "members": [
                keras.saving.serialize_keras_object(member) for member in self.members
            ],
            "rescoring_weight": self.rescoring_weight,
        }

    @classmethod
    def from_config(cls, config: Config) -> Seq2SeqEnsemble:
        """The ensemble `get_config` describes (its weights not included).

        Configurations written before an ensemble without rescorers refused
        a `rescoring_weight` hold one (1.0 unless given); it never had an
        effect, and is dropped here so that their files still load.
        """
        config = dict(config)
        members = [
            keras.saving.deserialize_keras_object(member)
            if isinstance(member, dict) else member
            for member in config.pop("members")
        ]
        backwards = [getattr(m, "reads_right_to_left", False) for m in members]
        if all(backwards) or not any(backwards):
            config.pop("rescoring_weight", None)
        return cls(members, **config)
