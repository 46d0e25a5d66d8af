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
"""

import math

import keras
from keras import ops

from kerasrnn.seq2seq.model import Seq2Seq


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2SeqEnsemble(keras.Model):
    """Seq2Seq members whose next-token probabilities are averaged.

    Args:
        members: A list of one or more `Seq2Seq` models with the same source
            and target vocabulary sizes.
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
    >>> seq2seq.beam_search_decode(ensemble, source_ids, 4, 20)  # doctest: +SKIP
    """

    def __init__(self, members, **kwargs):
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
        self.source_vocabulary_size = members[0].source_vocabulary_size
        self.target_vocabulary_size = members[0].target_vocabulary_size
        kinds = {member.attention_kind for member in members}
        #: The members' attention kind, or "mixed".
        self.attention_kind = kinds.pop() if len(kinds) == 1 else "mixed"
        self.build()

    def build(self, input_shape=None):
        # Nothing to create: every member built its weights in its own
        # constructor, so a restored ensemble can load its weights at once.
        pass

    @property
    def attention(self):
        """The members' attention layers when every member attends, else
        None (the decoders then refuse `return_alignments`)."""
        layers = tuple(member.attention for member in self.members)
        return None if any(layer is None for layer in layers) else layers

    @staticmethod
    def state_count(member):
        """How many state tensors `member.encode` returns."""
        return len(member.state_sizes) + int(member.feeds_attentional_vector)

    def split_states(self, states):
        """The flat state list of `encode` -> one list per member."""
        pieces, start = [], 0
        for member in self.members:
            count = self.state_count(member)
            pieces.append(list(states[start : start + count]))
            start += count
        return pieces

    # ------------------------------------------------------------- training
    def call(self, inputs, training=None):
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
    def encode(self, source_ids, training=False):
        """Every member's `encode`: `(states, context)`, the members' state
        lists concatenated and `{"members": [each member's context]}`."""
        states, contexts = [], []
        for member in self.members:
            member_states, member_context = member.encode(source_ids, training)
            states.extend(member_states)
            contexts.append(member_context)
        return states, {"members": contexts}

    def context_for_beams(self, context, width):
        """`Seq2Seq.context_for_beams` of every member."""
        return {
            "members": [
                member.context_for_beams(member_context, width)
                for member, member_context in zip(self.members, context["members"])
            ]
        }

    def decode_step(
        self, tokens, states, context, training=False, return_alignment=False,
        queries_per_source=1,
    ):
        """One step of every member, mixed: see `Seq2Seq.decode_step`.

        Returns:
            `(log_probs (batch, V) float32, new_states)`, and α_t `(batch,
            S)`, the members' mean, with `return_alignment`. The log-probs
            log (1/N) Σ_k p_k are normalised, so any decoder may treat them
            as logits.
        """
        log_probs, new_states, alignments = [], [], []
        for member, member_states, member_context in zip(
            self.members, self.split_states(states), context["members"]
        ):
            logits, member_states, alignment = member.decode_step(
                tokens, member_states, member_context, training=training,
                return_alignment=True, queries_per_source=queries_per_source,
            )
            log_probs.append(ops.log_softmax(ops.cast(logits, "float32"), axis=-1))
            new_states.extend(member_states)
            alignments.append(alignment)
        mixed = ops.logsumexp(ops.stack(log_probs), axis=0) - math.log(len(log_probs))
        if not return_alignment:
            return mixed, new_states
        alignment = None
        if self.attention is not None:
            alignment = ops.mean(ops.stack(alignments), axis=0)
        return mixed, new_states, alignment

    def attention_weights(self, inputs):
        """The members' mean α of a teacher-forced batch: `(B, T, S)`, see
        `Seq2Seq.attention_weights` (each member checks the inputs)."""
        if self.attention is None:
            raise ValueError(
                "attention_weights needs every member to attend. Received: "
                "members with attention="
                f"{[member.attention_kind for member in self.members]}"
            )
        return ops.mean(
            ops.stack([member.attention_weights(inputs) for member in self.members]),
            axis=0,
        )

    # --------------------------------------------------------------- config
    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "members": [
                keras.saving.serialize_keras_object(member) for member in self.members
            ],
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
