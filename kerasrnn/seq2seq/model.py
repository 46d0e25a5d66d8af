"""`Seq2Seq`, the encoder–decoder model of `eq:rnn-seq2seq`: its layers,
its one decoder step, and its training call.

    p(y_1 … y_T' | x_1 … x_Tx) = Π_t p(y_t | y_<t, c)          (eq:rnn-seq2seq)

An encoder reads the source into a context c; a decoder generates the
target one token at a time from the previous token y_{t-1} and c. The
decoder receives c in one of the lecture notes' three ways ("sequence
conditioned on a context", slide 42):

- `"initial_state"`: d_0 = c (the encoder's final states), d_t = f(d_{t-1}, y_{t-1});
- `"every_step"`:    d_0 = 0, d_t = f(d_{t-1}, [y_{t-1}; c]) with c the
  encoder's final output (R·c enters through the decoder's input kernel);
- `"both"`:          d_0 = c and c at every step.

Bidirectional encoder (`eq:rnn-bidir`): for the initial state, each state
component of the last layer (h, and c for an LSTM) is the concatenation
[h→; h←] of the forward and backward final states, projected back to the
decoder's size by a learned affine map (one `Dense` per component, no
activation: a "bridge"); the decoder therefore has the same cell and size as
one encoder direction. The every-step context is [h→; h←] unprojected.

Training (`model.fit`) uses teacher forcing: the decoder input at step t is
the ground truth y_{t-1}. With a `sampling_schedule` (off by default) it is
scheduled sampling (lecture notes §5): per step and per example the ground
truth with probability ε_i, else the model's own most likely token ŷ_{t-1};
ε_i is logged as `epsilon` at every training step.

Attention (`attention="bahdanau" | "luong"`: the layers of
`kerasrnn.seq2seq.attention`, entering the step as
`kerasrnn.seq2seq.decoder_attention` says) removes the single-vector
bottleneck: the encoder's top-layer outputs H = [h_1 … h_S] become a memory
that every decoder step reads through weights α_t over the real source
positions (the context modes still apply on top):

- Bahdanau:  α_t = softmax_M(vᵀ tanh(W_s d_{t-1} + W_h h_j)),
             a_t = Σ_j α_tj h_j,
             s_t, d_t = f(d_{t-1}, [E y_{t-1}; a_t]),   logits_t = W_o s_t + b_o;
- Luong:     s_t, d_t = f(d_{t-1}, [E y_{t-1}; ã_{t-1}]) (input feeding; ã_0 = 0),
             α_t = softmax_M(s_tᵀ W h_j),  a_t = Σ_j α_tj h_j,
             ã_t = tanh(W_c [s_t; a_t]),  logits_t = W_o ã_t + b_o.

d_{t-1} in the Bahdanau score is the first component of the decoder state
(h_{t-1} for every kerasrnn cell and Keras's). With attention, teacher
forcing steps the decoder with `decode_step`, the same step function that
scheduled sampling and every decoder call, so training and decoding cannot
drift apart. Luong without input feeding (`input_feeding=False`: the cell
reads only E y_{t-1}) is the exception: no step's input depends on an earlier
step's attention, so teacher forcing runs the cell over all T steps in
`keras.layers.RNN` and attends for all of them at once (the same equations; a
NumPy reference of the step-by-step form holds both to them).

The loss is `kerasrnn.seq2seq.loss`'s, the batches
`kerasrnn.seq2seq.teacher_forcing`'s; what the decoders need from the model
is `kerasrnn.seq2seq.protocol.DecodableModel`.

Token ids follow `kerasrnn.seq2seq.vocabulary`: 0 pads, 1 starts, 2 ends.
The source embedding masks padding (`mask_zero=True`), so the encoder reads
only real tokens in both directions, wherever the source's padding sits (at
the end, at the front as `keras.utils.pad_sequences` puts it by default, or
between tokens): the answers depend on the tokens alone, and α puts its
weights on the columns that hold them. The decoder needs no mask, because
the target's padding, at its end, only follows the last real step and the
loss skips it.
"""

from __future__ import annotations

import json
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from kerasrnn.allowed import CONTEXTS
from kerasrnn.explicit_masks import takes_explicit_mask
from kerasrnn.keras_internals import outside_object_sharing
from kerasrnn.seq2seq.decoder_attention import decoder_attention
from kerasrnn.seq2seq.dropout_masks import sequence_dropout_masks
from kerasrnn.seq2seq.loss import next_token_log_probs
from kerasrnn.seq2seq.protocol import DecoderStep
from kerasrnn.seq2seq.schedules import SamplingSchedule
from kerasrnn.seq2seq.target_order import (
    TARGET_ORDERS,
    in_target_order,
    reversed_decoder_input,
)
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID
from kerasrnn.types import Config, ShapeLike, TensorLike
from kerasrnn.validation import (
    check_bool,
    check_choice,
    check_int,
    check_positive_int,
    check_seed,
)


def _state_sizes(cell: keras.layers.Layer) -> list[int]:
    """The cell's state sizes as a list of ints ([n] or [n, n] for an LSTM)."""
    sizes = cell.state_size
    return list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]


@keras.saving.register_keras_serializable(package="kerasrnn")
class Seq2Seq(keras.Model):
    """Encoder–decoder over token ids (`eq:rnn-seq2seq`); see the module doc.

    Args:
        source_vocabulary_size: Number of source ids (reserved ones
            included), the source embedding's input_dim.
        target_vocabulary_size: Number of target ids, V.
        cell: A recurrent cell layer used as a template: every encoder
            layer (each direction) and the decoder get a fresh copy from its
            config, e.g. `kerasrnn.LSTMCell(128)` or
            `keras.layers.GRUCell(64)`. Its state size is the decoder's.
        embedding_dim: Size of the source and target token embeddings.
        encoder_layers: Number of stacked encoder layers (≥ 1).
        bidirectional: Wrap each encoder layer in `keras.layers.Bidirectional`.
        context: `"initial_state"`, `"every_step"` or `"both"`.
        attention: None (the fixed context only), `"bahdanau"` or `"luong"`.
        attention_units: Bahdanau's u, the hidden size of the score;
            default the decoder's output size. Bahdanau only.
        input_feeding: Luong only (default True): feed ã_{t-1} into the
            cell's input at step t.
        sampling_schedule: None (teacher forcing) or a `SamplingSchedule`.
        seed: Seed of the scheduled-sampling coin flips.
        target_order: `"left_to_right"` (y_1 first) or `"right_to_left"`:
            the decoder reads the target backwards, y_L first
            (`kerasrnn.seq2seq.target_order`); it trains on the same batches,
            its logits come back in the targets' order and its decoders
            return answers that read left to right.
        **kwargs: Passed to `keras.Model` (`name`, ...).

    Call arguments:
        inputs: `{"source": (batch, S), "decoder_input": (batch, T)}` int
            ids (or the pair in that order), as `teacher_forcing_pair` makes.
        training: Whether dropout and scheduled sampling apply.
        sampling_step: The training step i whose ε_i scheduled sampling
            uses; default the optimizer's step count (a `Seq2SeqEnsemble`
            passes its own: its members have no optimizer).

    Returns:
        `(batch, T, V)` logits of y_1 … y_T.

    Example:

    >>> from kerasrnn import seq2seq
    >>> model = seq2seq.Seq2Seq(30, 40, kerasrnn.LSTMCell(32), bidirectional=True,
    ...                         attention="luong")
    >>> model.compile("adam", seq2seq.SequenceCrossEntropy())
    >>> model.fit(dataset.map(seq2seq.teacher_forcing_pair), epochs=5)  # doctest: +SKIP
    """

    def __init__(
        self,
        source_vocabulary_size: int,
        target_vocabulary_size: int,
        cell: keras.layers.Layer | Config,
        embedding_dim: int = 64,
        encoder_layers: int = 1,
        bidirectional: bool = False,
        context: str = "initial_state",
        attention: str | None = None,
        attention_units: int | None = None,
        input_feeding: bool | None = None,
        sampling_schedule: SamplingSchedule | Config | None = None,
        seed: int | None = None,
        target_order: str = "left_to_right",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        source_vocabulary_size = check_int(
            "source_vocabulary_size", source_vocabulary_size, END_ID + 1
        )
        target_vocabulary_size = check_int(
            "target_vocabulary_size", target_vocabulary_size, END_ID + 1
        )
        embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        encoder_layers = check_positive_int("encoder_layers", encoder_layers)
        bidirectional = check_bool("bidirectional", bidirectional)
        seed = check_seed("seed", seed)
        if isinstance(cell, dict):
            cell = keras.saving.deserialize_keras_object(cell)
        if not isinstance(cell, keras.layers.Layer) or not hasattr(
            cell, "state_size"
        ):
            raise ValueError(
                "Argument `cell` must be a recurrent cell layer with a "
                "`state_size` (a kerasrnn cell or a Keras RNN cell). "
                f"Received: cell={cell!r}"
            )
        check_choice("context", context, CONTEXTS)
        check_choice("target_order", target_order, TARGET_ORDERS)
        self._decoder_attention = decoder_attention(
            attention, attention_units, input_feeding, int(cell.output_size)
        )
        if isinstance(sampling_schedule, dict):
            sampling_schedule = keras.saving.deserialize_keras_object(
                sampling_schedule
            )
        if sampling_schedule is not None and not isinstance(
            sampling_schedule, SamplingSchedule
        ):
            raise ValueError(
                "Argument `sampling_schedule` must be None or a "
                "kerasrnn.seq2seq SamplingSchedule. "
                f"Received: sampling_schedule={sampling_schedule!r}"
            )
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        # Kept as JSON text: Keras wraps dict attributes in tracking
        # structures that cannot be deep-copied into fresh cells.
        self.cell_json = json.dumps(keras.saving.serialize_keras_object(cell))
        self.embedding_dim = embedding_dim
        self.encoder_layers = encoder_layers
        self.bidirectional = bidirectional
        self.context = context
        self.sampling_schedule: SamplingSchedule | None = sampling_schedule
        self.seed = seed
        self.target_order = target_order
        self.seed_generator = keras.random.SeedGenerator(seed=seed)
        self.state_sizes = _state_sizes(cell)
        self.cell_output_size = int(cell.output_size)
        self.uses_initial_state = context in ("initial_state", "both")
        self.uses_every_step = context in ("every_step", "both")
        self.attention_kind = self._decoder_attention.kind
        self.attention_units = self._decoder_attention.attention_units
        self.input_feeding = self._decoder_attention.input_feeding

        self.source_embedding = keras.layers.Embedding(
            source_vocabulary_size, embedding_dim, mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocabulary_size, embedding_dim, name="target_embedding"
        )
        self.encoder: list[keras.layers.Layer] = []
        for index in range(encoder_layers):
            top = index == encoder_layers - 1
            layer = keras.layers.RNN(
                self._copy_cell(f"encoder_cell_{index}"),
                # With attention the top layer's outputs are the memory H.
                return_sequences=not top or self.has_attention,
                return_state=top,
                name=f"encoder_rnn_{index}",
            )
            if self.bidirectional:
                layer = keras.layers.Bidirectional(
                    layer, name=f"encoder_bidirectional_{index}"
                )
            # `encode` hands each layer the source's mask.
            self.encoder.append(takes_explicit_mask(layer))
        self.bridge = []
        if self.bidirectional and self.uses_initial_state:
            self.bridge = [
                keras.layers.Dense(size, name=f"bridge_{index}")
                for index, size in enumerate(self.state_sizes)
            ]
        # Tracked here, between the bridge and the decoder, and under this
        # name: Keras files the weights of a saved model by attribute name
        # and order.
        self.attention = self._decoder_attention.layer
        self.decoder = keras.layers.RNN(
            self._copy_cell("decoder_cell"), return_sequences=True,
            name="decoder_rnn",
        )
        self.output_projection = keras.layers.Dense(
            target_vocabulary_size, name="output_projection"
        )
        # Every shape is known from the arguments: building here means a
        # model restored from its config has its weights before loading them.
        self.build()

    def _copy_cell(self, name: str) -> keras.layers.Layer:
        config = json.loads(self.cell_json)
        config["config"]["name"] = name
        return keras.saving.deserialize_keras_object(config)

    @property
    def has_attention(self) -> bool:
        """Whether the decoder attends to the encoder's outputs (and every
        `decode_step` gives α_t)."""
        return self._decoder_attention.has_attention

    @property
    def reads_right_to_left(self) -> bool:
        """Whether the decoder reads the target backwards."""
        return self.target_order == "right_to_left"

    @property
    def decoder_state_sizes(self) -> list[int]:
        """The sizes of the decoder states `encode` returns and
        `decode_step` carries: the cell's, then ã's for Luong input
        feeding."""
        return [*self.state_sizes, *self._decoder_attention.state_sizes()]

    @property
    def _context_size(self) -> int:
        """Size of c and of each h_j: one encoder direction's output, doubled
        if bidirectional."""
        return self.cell_output_size * (2 if self.bidirectional else 1)

    @property
    def _decoder_input_size(self) -> int:
        """Size of the decoder cell's input: E y plus what the context and
        attention add."""
        size = self.embedding_dim
        if self.uses_every_step:
            size += self._context_size
        return size + self._decoder_attention.input_size(self._context_size)

    def build(self, input_shape: ShapeLike | dict[str, ShapeLike] | None = None) -> None:
        """Create every weight; the shapes follow from the arguments alone."""
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        width = self.embedding_dim
        for layer in self.encoder:
            layer.build((None, None, width))
            width = self._context_size
        for dense, size in zip(self.bridge, self.state_sizes):
            dense.build((None, 2 * size))
        self._decoder_attention.build(self.state_sizes[0], self._context_size)
        self.decoder.build((None, None, self._decoder_input_size))
        self.output_projection.build((None, self.cell_output_size))

    # ---------------------------------------------------------------- encode
    def encode(
        self, source_ids: TensorLike, training: bool | None = False
    ) -> tuple[list[TensorLike], dict[str, Any]]:
        """Run the encoder; return the decoder's initial states and context.

        Args:
            source_ids: `(batch, S)` int ids padded with 0, at either end
                or between tokens: the encoder skips padding.
            training: Whether encoder dropout applies.

        Returns:
            `(states, context)`: `states` the decoder's d_0, a list of
            `(batch, n)` tensors (zeros for `context="every_step"`), followed
            by ã_0 = 0 for Luong input feeding; `context` a dict of the
            `(batch, …)` tensors every decoder step reads: `"context"` c
            `(batch, context_size)` when the context is fed at every step,
            and with attention `"memory"` H `(batch, S, context_size)`, its
            projection `"keys"` and `"mask"` `(batch, S)` bool; for Luong
            attention also `"projected_memory"`, h_j W_a `(batch, S, n)`,
            from which a step computes W_c's product with a_t.
        """
        source_ids = ops.cast(source_ids, "int32")
        mask = ops.not_equal(source_ids, PAD_ID)
        x = self._embedded(self.source_embedding, source_ids)
        for layer in self.encoder[:-1]:
            x = layer(x, mask=mask, training=training)
        top_output, *final_states = self.encoder[-1](
            x, mask=mask, training=training
        )
        context = self._decoder_attention.memory(top_output, mask)
        final_output = top_output
        # The top layer returned its whole sequence only to be the memory.
        if self.has_attention:
            final_output = self._final_output(top_output, mask)
        if self.uses_every_step:
            context["context"] = final_output
        batch = ops.shape(source_ids)[0]
        if not self.uses_initial_state:
            states = [
                ops.zeros((batch, size), self.compute_dtype)
                for size in self.state_sizes
            ]
        elif self.bidirectional:
            count = len(self.state_sizes)
            forward, backward = final_states[:count], final_states[count:]
            states = [
                dense(ops.concatenate([f, b], axis=-1))
                for dense, f, b in zip(self.bridge, forward, backward)
            ]
        else:
            states = list(final_states)
        states.extend(self._decoder_attention.initial_states(batch, self.compute_dtype))
        return states, context

    def _final_output(self, outputs: TensorLike, mask: TensorLike) -> TensorLike:
        """The encoder's final output from its `(batch, S, m)` sequence.

        The forward direction's final output is the one at the last real
        position, the backward direction's (re-reversed by `Bidirectional`)
        the one at the first, wherever the padding sits: the encoder skips
        padding, so these are the outputs after reading every token.
        """
        positions = ops.arange(ops.shape(mask)[1])[None, :]
        last = ops.max(ops.where(mask, positions, 0), axis=1)
        half = self.cell_output_size
        forward = ops.take_along_axis(
            outputs[:, :, :half], last[:, None, None], axis=1
        )[:, 0]
        if not self.bidirectional:
            return forward
        first = ops.argmax(ops.cast(mask, "int32"), axis=1)
        backward = ops.take_along_axis(
            outputs[:, :, half:], first[:, None, None], axis=1
        )[:, 0]
        return ops.concatenate([forward, backward], axis=-1)

    # ---------------------------------------------------------------- decode
    def decode_step(
        self,
        tokens: TensorLike,
        states: list[TensorLike],
        context: dict[str, Any],
        training: bool | None = False,
        queries_per_source: int = 1,
    ) -> DecoderStep:
        """One decoder step: y_{t-1} and d_{t-1} -> logits of y_t and d_t.

        The equations are the module doc's; this step (with
        `kerasrnn.seq2seq.decoder_attention` for attention's part) is the only
        place they are written, for training and every decoder.

        Args:
            tokens: `(batch,)` int ids y_{t-1}.
            states: List of decoder states, as `encode` returns them.
            context: The dict `encode` returns.
            training: Whether decoder dropout applies.
            queries_per_source: k when `tokens` and `states` hold k
                consecutive rows per example of `context`'s memory (beam
                search's hypotheses; `context["context"]` repeated k times
                too): `batch` is k times the memory's. The k rows attend to
                the example's one memory instead of k copies of it.

        Returns:
            A `DecoderStep`: logits `(batch, V)`, the new states, and α_t
            `(batch, S)` float32 for an attention model (else None).
        """
        pieces = [self._embedded(self.target_embedding, ops.cast(tokens, "int32"))]
        if self.uses_every_step:
            pieces.append(context["context"])
        output, new_states, alignment = self._decoder_attention.step(
            self.decoder.cell, pieces, list(states), context, queries_per_source,
            training,
        )
        return DecoderStep(self.output_projection(output), new_states, alignment)

    @staticmethod
    def _embedded(embedding: keras.layers.Embedding, ids: TensorLike) -> TensorLike:
        """The rows of `embedding`'s table for int32 `ids` of any shape (a
        shape `(…, e)`), read by one gather.

        Keras's `Embedding` reads ids below zero from the end of the table,
        which costs three more operators in a LiteRT graph (per decoder
        step, where the decoder's are unrolled); token ids are never
        negative. A quantized embedding keeps the layer's own call.
        """
        if embedding.quantization_mode is not None:
            return embedding(ids)
        return ops.cast(tf.gather(embedding.embeddings, ids), embedding.compute_dtype)

    def context_for_beams(self, context: dict[str, Any], width: int) -> dict[str, Any]:
        """`context` for `width` consecutive hypotheses per example: c
        repeated per hypothesis; the memory stays one per example (see
        `decode_step`'s `queries_per_source`)."""
        if "context" not in context:
            return context
        return {**context, "context": ops.repeat(context["context"], width, axis=0)}

    def rescore(
        self,
        source_ids: tf.Tensor,
        sequences: tf.Tensor,
        scores: tf.Tensor,
        *,
        unrolled: bool = False,
    ) -> tf.Tensor:
        """`scores` unchanged: one model has nothing to add to the scores
        beam search found (see `DecodableModel.rescore`).

        Args:
            source_ids: `(batch, S)` int ids.
            sequences: `(batch, B, L)` int32 hypotheses.
            scores: `(batch, B)` float32.
            unrolled: Whether the graph must hold no loop op; nothing to
                unroll here.

        Returns:
            `scores`.
        """
        return scores

    def call(
        self,
        inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike],
        training: bool | None = None,
        sampling_step: TensorLike | None = None,
    ) -> TensorLike:
        """`(batch, T, V)` logits of y_1 … y_T; see the class's call arguments."""
        source_ids, decoder_input = self._split_inputs(inputs)
        states, context = self.encode(source_ids, training=training)
        read = self._decoder_input_as_read(decoder_input)
        if training and self.sampling_schedule is not None:
            logits = self.scheduled_sampling(
                read, states, context, self._current_epsilon(sampling_step), training
            )
        else:
            logits, _ = self._teacher_forced(read, states, context, training)
        return self._in_target_order(logits, decoder_input)

    def _decoder_input_as_read(self, decoder_input: TensorLike) -> TensorLike:
        """The decoder input as the decoder reads it: reversed tokens for a
        right-to-left model."""
        if self.reads_right_to_left:
            return reversed_decoder_input(decoder_input)
        return decoder_input

    def _in_target_order(self, steps: TensorLike, decoder_input: TensorLike) -> TensorLike:
        """`(batch, T, …)` per-step outputs of `_decoder_input_as_read(
        decoder_input)` put back in the order of the targets."""
        if self.reads_right_to_left:
            return in_target_order(steps, decoder_input)
        return steps

    def _teacher_forced(
        self,
        decoder_input: TensorLike,
        states: list[TensorLike],
        context: dict[str, Any],
        training: bool | None = False,
    ) -> tuple[TensorLike, TensorLike | None]:
        """The decoder fed y_{t-1} at every step: `(logits, alignments)`.

        When no step's input depends on an earlier step's attention (no
        attention, or Luong without input feeding) the cell runs over all T
        steps in `keras.layers.RNN` and attends for all of them at once;
        otherwise `_unroll` steps `decode_step`. Both compute the same
        equations.

        Returns:
            `(batch, T, V)` logits and, for attention models, α
            `(batch, T, S)` float32 (else None).
        """
        if self._decoder_attention.feeds_the_cell:
            return self._unroll(decoder_input, states, context, training=training)
        x = self.target_embedding(decoder_input)
        if self.uses_every_step:
            steps = ops.shape(decoder_input)[1]
            x = ops.concatenate(
                [x, ops.repeat(context["context"][:, None, :], steps, axis=1)],
                axis=-1,
            )
        outputs = self.decoder(x, initial_state=states, training=training)
        outputs, alignments = self._decoder_attention.over_sequence(outputs, context)
        return self.output_projection(outputs), alignments

    @staticmethod
    def _split_inputs(
        inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike],
    ) -> tuple[TensorLike, TensorLike]:
        """`{"source", "decoder_input"}` or a pair -> two int32 tensors."""
        if isinstance(inputs, dict):
            source_ids, decoder_input = inputs["source"], inputs["decoder_input"]
        else:
            source_ids, decoder_input = inputs
        return ops.cast(source_ids, "int32"), ops.cast(decoder_input, "int32")

    def _unroll(
        self,
        decoder_input: TensorLike,
        states: list[TensorLike],
        context: dict[str, Any],
        teacher: TensorLike | None = None,
        training: bool | None = False,
    ) -> tuple[TensorLike, TensorLike | None]:
        """Run `decode_step` over the decoder input, one step at a time.

        Args:
            decoder_input: `(batch, T)` ids [<start>, y_1 … y_{T-1}].
            states: Initial decoder states, as `encode` returns them.
            context: The dict `encode` returns.
            teacher: None (teacher forcing: step t is fed decoder_input[:, t])
                or `(batch, T)` bool: where False, step t is fed instead the
                model's own most likely token ŷ_{t-1} (scheduled sampling).
            training: Whether decoder dropout applies.

        Returns:
            `(logits (batch, T, V), alignments)`: alignments the α of every
            step, `(batch, T, S)` float32, for attention models; else None.
            Gradients do not flow through ŷ_{t-1}.
        """
        inputs_by_step = tf.transpose(decoder_input)
        teacher_by_step = None if teacher is None else tf.transpose(teacher)
        steps = tf.shape(decoder_input)[1]
        outputs = {"logits": tf.TensorArray(self.compute_dtype, size=steps)}
        if self.has_attention:
            outputs["alignments"] = tf.TensorArray(tf.float32, size=steps)

        def step(
            t: TensorLike,
            previous: TensorLike,
            states: list[TensorLike],
            outputs: dict[str, Any],
        ) -> tuple[TensorLike, TensorLike, list[TensorLike], dict[str, Any]]:
            tokens = inputs_by_step[t]
            if teacher_by_step is not None:
                tokens = tf.where(teacher_by_step[t], tokens, previous)
            decoded = self.decode_step(tokens, states, context, training=training)
            predicted = tf.argmax(
                next_token_log_probs(decoded.logits), axis=-1, output_type=tf.int32
            )
            written = {"logits": outputs["logits"].write(t, decoded.logits)}
            if decoded.alignment is not None:
                written["alignments"] = outputs["alignments"].write(
                    t, decoded.alignment
                )
            return t + 1, predicted, decoded.states, written

        batch = tf.shape(decoder_input)[0]
        step_input = tf.zeros([batch, self._decoder_input_size], self.compute_dtype)
        with sequence_dropout_masks(self.decoder.cell, step_input, states[0], training):
            _, _, _, outputs = tf.while_loop(
                lambda t, *_: t < steps,
                step,
                (tf.constant(0), inputs_by_step[0], states, outputs),
                # A known trip count lets XLA differentiate through the loop.
                maximum_iterations=steps,
            )
        logits = tf.transpose(outputs["logits"].stack(), [1, 0, 2])
        if not self.has_attention:
            return logits, None
        return logits, tf.transpose(outputs["alignments"].stack(), [1, 0, 2])

    def attention_weights(
        self, inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike]
    ) -> TensorLike:
        """α of a teacher-forced batch.

        Args:
            inputs: `{"source": (B, S), "decoder_input": (B, T)}` int ids (or
                the pair), as `teacher_forcing_pair` makes.

        Returns:
            `(B, T, S)` float32: row t is α_t over the source's columns as
            given, summing to 1 over the real source tokens and exactly 0 on
            padding (all 0 for a source that is all padding).

        Raises:
            ValueError: the model has no attention, or the inputs are not
                two `(B, ·)` int batches of the same B.
        """
        if not self.has_attention:
            raise ValueError(
                "attention_weights needs a model built with attention. "
                f"Received: a model with attention={self.attention_kind!r}"
            )
        source_ids, decoder_input = self._split_inputs(inputs)
        for name, ids in (("source", source_ids), ("decoder_input", decoder_input)):
            if ids.shape.rank != 2:
                raise ValueError(
                    f"Argument `inputs[{name!r}]` must be a (batch, length) "
                    f"batch of ids. Received: shape {tuple(ids.shape)}"
                )
        if (
            source_ids.shape[0] is not None
            and decoder_input.shape[0] is not None
            and source_ids.shape[0] != decoder_input.shape[0]
        ):
            raise ValueError(
                "Arguments `inputs['source']` and `inputs['decoder_input']` "
                "must hold the same number of examples. Received: shapes "
                f"{tuple(source_ids.shape)} and {tuple(decoder_input.shape)}"
            )
        states, context = self.encode(source_ids)
        _, alignments = self._teacher_forced(
            self._decoder_input_as_read(decoder_input), states, context
        )
        return self._in_target_order(alignments, decoder_input)

    # ----------------------------------------------------- scheduled sampling
    def _current_epsilon(self, step: TensorLike | None = None) -> TensorLike:
        """ε_i of the sampling schedule at step i: `step`, by default the
        optimizer's step count (0 before training)."""
        # Called only when the model samples.
        assert self.sampling_schedule is not None
        if step is None:
            step = 0 if self.optimizer is None else self.optimizer.iterations
        return self.sampling_schedule(step)

    def scheduled_sampling(
        self,
        decoder_input: TensorLike,
        states: list[TensorLike],
        context: dict[str, Any],
        epsilon: TensorLike,
        training: bool | None,
    ) -> TensorLike:
        """Unroll the decoder feeding y_{t-1} with probability ε, else ŷ_{t-1}.

        Args:
            decoder_input: `(batch, T)` ids [<start>, y_1 … y_{T-1}].
            states: Initial decoder states, as `encode` returns them.
            context: The dict `encode` returns.
            epsilon: Scalar ε in [0, 1]: 1 is teacher forcing, 0 free running.
            training: Whether decoder dropout applies.

        Returns:
            `(batch, T, V)` logits. Gradients do not flow through ŷ_{t-1},
            the argmax of the previous step's `next_token_log_probs`.
        """
        teacher = (
            keras.random.uniform(
                ops.shape(decoder_input), seed=self.seed_generator
            )
            < epsilon
        )
        logits, _ = self._unroll(
            ops.cast(decoder_input, "int32"), states, context, teacher, training
        )
        return logits

    def train_step(self, data: Any) -> dict[str, Any]:
        """Keras's step, logging ε too when the model samples."""
        if self.sampling_schedule is None:
            return super().train_step(data)
        epsilon = self._current_epsilon()
        logs = dict(super().train_step(data))
        logs["epsilon"] = epsilon
        return logs

    # ---------------------------------------------------------------- config
    def get_config(self) -> Config:
        """Every constructor argument, the cell and schedule serialized."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "cell": json.loads(self.cell_json),
            "embedding_dim": self.embedding_dim,
            "encoder_layers": self.encoder_layers,
            "bidirectional": self.bidirectional,
            "context": self.context,
            **self._decoder_attention.options(),
            "sampling_schedule": (
                None
                if self.sampling_schedule is None
                else keras.saving.serialize_keras_object(self.sampling_schedule)
            ),
            "seed": self.seed,
            "target_order": self.target_order,
        }

    @classmethod
    def from_config(cls, config: Config) -> Seq2Seq:
        """The model `get_config` describes (its weights not included).

        Built outside Keras's object sharing: while a file loads, Keras
        tells the objects it serializes apart by `id()`, and the copies the
        model makes (its cells, `Bidirectional`'s backward layer) could
        otherwise come back as an earlier object that had the same address.
        """
        with outside_object_sharing():
            return cls(**config)
