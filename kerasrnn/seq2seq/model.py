"""The encoder–decoder model of `eq:rnn-seq2seq`, trained with teacher forcing.

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

Attention (`attention="bahdanau" | "luong"`, `kerasrnn.seq2seq.attention`)
removes the single-vector bottleneck: the encoder's top-layer outputs
H = [h_1 … h_S] become a memory that every decoder step reads through
weights α_t over the real source positions (the context modes still apply
on top):

- Bahdanau:  α_t = softmax_M(vᵀ tanh(W_s d_{t-1} + W_h h_j)),
             a_t = Σ_j α_tj h_j,
             s_t, d_t = f(d_{t-1}, [E y_{t-1}; a_t]),   logits_t = W_o s_t + b_o;
- Luong:     s_t, d_t = f(d_{t-1}, [E y_{t-1}; ã_{t-1}]) (input feeding; ã_0 = 0),
             α_t = softmax_M(s_tᵀ W h_j),  a_t = Σ_j α_tj h_j,
             ã_t = tanh(W_c [s_t; a_t]),  logits_t = W_o ã_t + b_o.

d_{t-1} in the Bahdanau score is the first component of the decoder state
(h_{t-1} for every kerasrnn cell and Keras's). With attention the decoder is
unrolled by `unroll`, the same step function (`decode_step`) that scheduled
sampling and every decoder call, so training and decoding cannot drift apart.
Luong without input feeding (`input_feeding=False`: the cell reads only
E y_{t-1}) is the exception under teacher forcing: no step's input depends on
an earlier step's attention, so `teacher_forced` runs the cell over all T
steps in `keras.layers.RNN` and attends for all of them at once (the same
equations; a NumPy reference of the step-by-step form holds both to them).

Token ids follow `kerasrnn.seq2seq.vocabulary`: 0 pads, 1 starts, 2 ends.
The source embedding masks padding (`mask_zero=True`), so the encoder reads
only real tokens in both directions; the decoder needs no mask, because
right padding only follows the last real step and the loss skips it.
"""

import contextlib
import json

import keras
import tensorflow as tf
from keras import ops

from kerasrnn.keras_internals import DropoutRNNCell
from kerasrnn.seq2seq.attention import (
    ATTENTIONS,
    BahdanauAttention,
    LuongAttention,
)
from kerasrnn.seq2seq.protocol import DecoderStep
from kerasrnn.seq2seq.schedules import SamplingSchedule
from kerasrnn.seq2seq.target_order import (
    TARGET_ORDERS,
    in_target_order,
    reversed_decoder_input,
)
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.validation import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_positive_int,
    check_seed,
)

CONTEXTS = ("initial_state", "every_step", "both")

#: Log-probability given to tokens a decoder may never emit (pad, start):
#: finite, so that sums and comparisons stay free of inf − inf.
FORBIDDEN_LOG_PROB = -1e9


def next_token_log_probs(logits):
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


def teacher_forcing_pair(source_ids, target_ids):
    """A batch of (source, target) ids -> the `(inputs, labels)` of `fit`.

    Args:
        source_ids: `(batch, S)` int, right-padded with 0.
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

    Call arguments:
        y_true: `(batch, T)` int target ids.
        y_pred: `(batch, T, V)` logits, or `(N, batch, T, V)`.
    """

    def __init__(self, label_smoothing=0.0, name="sequence_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = check_number(
            "label_smoothing", label_smoothing, low=0, high=1, high_open=True
        )

    def call(self, y_true, y_pred):
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

    def get_config(self):
        return {
            "label_smoothing": self.label_smoothing,
            "name": self.name,
            "reduction": self.reduction,
        }


def state_sizes(cell):
    """The cell's state sizes as a list of ints ([n] or [n, n] for an LSTM)."""
    sizes = cell.state_size
    return list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]


@contextlib.contextmanager
def sequence_dropout_masks(cell, step_input, state, training):
    """Draw `cell`'s per-sequence dropout masks before a hand-written loop.

    keras.layers.RNN draws a cell's input and recurrent masks once per
    sequence, outside its loop, so that the loop body stays stateless; a loop
    written here must do the same, and must release the cached masks even when
    the loop fails, or the next call would reuse stale ones.

    Args:
        cell: The recurrent cell the loop steps.
        step_input: `(batch, input_size)` tensor shaped like one step's input.
        state: `(batch, n)` tensor shaped like the recurrent state.
        training: Whether dropout applies.
    """
    uses_masks = isinstance(cell, DropoutRNNCell)
    if training and uses_masks:
        cell.get_dropout_mask(step_input)
        cell.get_recurrent_dropout_mask(state)
    try:
        yield
    finally:
        if uses_masks:
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()


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

    >>> model = Seq2Seq(30, 40, kerasrnn.LSTMCell(32), bidirectional=True,
    ...                 attention="luong")
    >>> model.compile("adam", SequenceCrossEntropy())
    >>> model.fit(dataset.map(teacher_forcing_pair), epochs=5)  # doctest: +SKIP
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        cell,
        embedding_dim=64,
        encoder_layers=1,
        bidirectional=False,
        context="initial_state",
        attention=None,
        attention_units=None,
        input_feeding=None,
        sampling_schedule=None,
        seed=None,
        target_order="left_to_right",
        **kwargs,
    ):
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
        check_choice("attention", attention, (None, *ATTENTIONS))
        attention_units, input_feeding = self.check_attention_options(
            attention, attention_units, input_feeding
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
        self.sampling_schedule = sampling_schedule
        self.seed = seed
        self.target_order = target_order
        self.seed_generator = keras.random.SeedGenerator(seed=seed)
        self.state_sizes = state_sizes(cell)
        self.cell_output_size = int(cell.output_size)
        self.uses_initial_state = context in ("initial_state", "both")
        self.uses_every_step = context in ("every_step", "both")
        self.attention_kind = attention
        self.attention_units = attention_units
        self.input_feeding = input_feeding

        self.source_embedding = keras.layers.Embedding(
            source_vocabulary_size, embedding_dim, mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocabulary_size, embedding_dim, name="target_embedding"
        )
        self.encoder = []
        for index in range(encoder_layers):
            top = index == encoder_layers - 1
            layer = keras.layers.RNN(
                self.copy_cell(f"encoder_cell_{index}"),
                # With attention the top layer's outputs are the memory H.
                return_sequences=not top or attention is not None,
                return_state=top,
                name=f"encoder_rnn_{index}",
            )
            if self.bidirectional:
                layer = keras.layers.Bidirectional(
                    layer, name=f"encoder_bidirectional_{index}"
                )
            self.encoder.append(layer)
        self.bridge = []
        if self.bidirectional and self.uses_initial_state:
            self.bridge = [
                keras.layers.Dense(size, name=f"bridge_{index}")
                for index, size in enumerate(self.state_sizes)
            ]
        self.attention = None
        if attention == "bahdanau":
            self.attention = BahdanauAttention(
                self.attention_units or self.cell_output_size, name="attention"
            )
        elif attention == "luong":
            self.attention = LuongAttention(self.cell_output_size, name="attention")
        self.decoder = keras.layers.RNN(
            self.copy_cell("decoder_cell"), return_sequences=True,
            name="decoder_rnn",
        )
        self.output_projection = keras.layers.Dense(
            target_vocabulary_size, name="output_projection"
        )
        # Every shape is known from the arguments: building here means a
        # model restored from its config has its weights before loading them.
        self.build()

    @staticmethod
    def check_attention_options(attention, attention_units, input_feeding):
        """`(attention_units, input_feeding)` checked and resolved.

        Each option belongs to one kind of attention; given with another it
        would silently do nothing, so it is refused.
        """
        if attention_units is not None:
            if attention != "bahdanau":
                raise ValueError(
                    "Argument `attention_units` sets the hidden size of "
                    "Bahdanau's score and applies to attention='bahdanau' "
                    f"only. Received: attention_units={attention_units!r} "
                    f"with attention={attention!r}"
                )
            attention_units = check_positive_int("attention_units", attention_units)
        if input_feeding is not None:
            if attention != "luong":
                raise ValueError(
                    "Argument `input_feeding` applies to attention='luong' "
                    f"only. Received: input_feeding={input_feeding!r} with "
                    f"attention={attention!r}"
                )
            input_feeding = check_bool("input_feeding", input_feeding)
        if attention == "luong" and input_feeding is None:
            input_feeding = True
        return attention_units, input_feeding

    def copy_cell(self, name):
        config = json.loads(self.cell_json)
        config["config"]["name"] = name
        return keras.saving.deserialize_keras_object(config)

    @property
    def context_size(self):
        """Size of c and of each h_j: one encoder direction's output, doubled
        if bidirectional."""
        return self.cell_output_size * (2 if self.bidirectional else 1)

    @property
    def feeds_attentional_vector(self):
        """Whether ã_{t-1} joins the decoder input (Luong input feeding)."""
        return bool(self.input_feeding)

    @property
    def decoder_input_size(self):
        """Size of the decoder cell's input: E y plus what the context adds."""
        size = self.embedding_dim
        if self.uses_every_step:
            size += self.context_size
        if self.attention_kind == "bahdanau":
            size += self.context_size
        if self.feeds_attentional_vector:
            size += self.cell_output_size
        return size

    def build(self, input_shape=None):
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        width = self.embedding_dim
        for layer in self.encoder:
            layer.build((None, None, width))
            width = self.context_size
        for dense, size in zip(self.bridge, self.state_sizes):
            dense.build((None, 2 * size))
        if self.attention_kind == "bahdanau":
            self.attention.build_for(self.state_sizes[0], self.context_size)
        elif self.attention_kind == "luong":
            self.attention.build_for(self.cell_output_size, self.context_size)
        self.decoder.build((None, None, self.decoder_input_size))
        self.output_projection.build((None, self.cell_output_size))

    # ---------------------------------------------------------------- encode
    def encode(self, source_ids, training=False):
        """Run the encoder; return the decoder's initial states and context.

        Args:
            source_ids: `(batch, S)` int ids, right-padded with 0.
            training: Whether encoder dropout applies.

        Returns:
            `(states, context)`: `states` the decoder's d_0, a list of
            `(batch, n)` tensors (zeros for `context="every_step"`), followed
            by ã_0 = 0 for Luong input feeding; `context` a dict of the
            `(batch, …)` tensors every decoder step reads: `"context"` c
            `(batch, context_size)` when the context is fed at every step,
            and with attention `"memory"` H `(batch, S, context_size)`, its
            projection `"keys"` and `"mask"` `(batch, S)` bool.
        """
        source_ids = ops.cast(source_ids, "int32")
        mask = ops.not_equal(source_ids, PAD_ID)
        x = self.source_embedding(source_ids)
        for layer in self.encoder[:-1]:
            x = layer(x, mask=mask, training=training)
        top_output, *final_states = self.encoder[-1](
            x, mask=mask, training=training
        )
        context = {}
        final_output = top_output
        if self.attention is not None:
            context.update(
                memory=top_output, keys=self.attention.keys(top_output), mask=mask
            )
            final_output = self.final_output(top_output, mask)
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
        if self.feeds_attentional_vector:
            states.append(ops.zeros((batch, self.cell_output_size), self.compute_dtype))
        return states, context

    def final_output(self, outputs, mask):
        """The encoder's final output from its `(batch, S, m)` sequence.

        keras.layers.RNN returns zeros at masked steps, so the forward
        direction's final output is the one at the last real position and
        the backward direction's (re-reversed by `Bidirectional`) the one at
        position 0.
        """
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        last = ops.maximum(lengths - 1, 0)[:, None, None]
        half = self.cell_output_size
        forward = ops.take_along_axis(outputs[:, :, :half], last, axis=1)[:, 0]
        if not self.bidirectional:
            return forward
        return ops.concatenate([forward, outputs[:, 0, half:]], axis=-1)

    # ---------------------------------------------------------------- decode
    def decode_step(
        self, tokens, states, context, training=False, queries_per_source=1
    ):
        """One decoder step: y_{t-1} and d_{t-1} -> logits of y_t and d_t.

        The equations are the module doc's; this is the only place they are
        written, for training and every decoder.

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
        pieces = [self.target_embedding(ops.cast(tokens, "int32"))]
        if self.uses_every_step:
            pieces.append(context["context"])
        cell_states = list(states)
        alignment = None
        if self.attention_kind == "bahdanau":
            attended, alignment = self.attend(states[0], context, queries_per_source)
            pieces.append(attended)
        if self.feeds_attentional_vector:
            pieces.append(cell_states.pop())
        x = pieces[0] if len(pieces) == 1 else ops.concatenate(pieces, axis=-1)
        output, new_states = self.decoder.cell(x, cell_states, training=training)
        new_states = (
            list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        )
        if self.attention_kind == "luong":
            attended, alignment = self.attend(output, context, queries_per_source)
            output = self.attention.attentional(output, attended)
            if self.feeds_attentional_vector:
                new_states.append(output)
        return DecoderStep(self.output_projection(output), new_states, alignment)

    def context_for_beams(self, context, width):
        """`context` for `width` consecutive hypotheses per example: c
        repeated per hypothesis; the memory stays one per example (see
        `decode_step`'s `queries_per_source`)."""
        if "context" not in context:
            return context
        return {**context, "context": ops.repeat(context["context"], width, axis=0)}

    def attend(self, query, context, queries_per_source):
        """a_t and α_t for `(batch, q)` queries, `queries_per_source` rows per
        memory: `(batch, m)` and `(batch, S)` float32."""
        arguments = (context["keys"], context["memory"], context["mask"])
        if queries_per_source == 1:
            return self.attention(query, *arguments)
        grouped = ops.reshape(query, (-1, queries_per_source, query.shape[-1]))
        attended, alignment = self.attention(grouped, *arguments)
        return (
            ops.reshape(attended, (-1, attended.shape[-1])),
            ops.reshape(alignment, (-1, ops.shape(alignment)[-1])),
        )

    @property
    def reads_right_to_left(self):
        """Whether the decoder reads the target backwards."""
        return self.target_order == "right_to_left"

    def call(self, inputs, training=None, sampling_step=None):
        source_ids, decoder_input = self.split_inputs(inputs)
        states, context = self.encode(source_ids, training=training)
        read = self.decoder_input_as_read(decoder_input)
        if training and self.sampling_schedule is not None:
            logits = self.scheduled_sampling(
                read, states, context, self.current_epsilon(sampling_step), training
            )
        else:
            logits, _ = self.teacher_forced(read, states, context, training)
        return self.in_target_order(logits, decoder_input)

    def decoder_input_as_read(self, decoder_input):
        """The decoder input as the decoder reads it: reversed tokens for a
        right-to-left model."""
        if self.reads_right_to_left:
            return reversed_decoder_input(decoder_input)
        return decoder_input

    def in_target_order(self, steps, decoder_input):
        """`(batch, T, …)` per-step outputs of `decoder_input_as_read(
        decoder_input)` put back in the order of the targets."""
        if self.reads_right_to_left:
            return in_target_order(steps, decoder_input)
        return steps

    def teacher_forced(self, decoder_input, states, context, training=False):
        """The decoder fed y_{t-1} at every step: `(logits, alignments)`.

        When no step's input depends on an earlier step's attention (no
        attention, or Luong without input feeding) the cell runs over all T
        steps in `keras.layers.RNN` and attends for all of them at once;
        otherwise `unroll` steps `decode_step`. Both compute the same
        equations.

        Returns:
            `(batch, T, V)` logits and, for attention models, α
            `(batch, T, S)` float32 (else None).
        """
        if self.attention_kind == "bahdanau" or self.feeds_attentional_vector:
            return self.unroll(decoder_input, states, context, training=training)
        x = self.target_embedding(decoder_input)
        if self.uses_every_step:
            steps = ops.shape(decoder_input)[1]
            x = ops.concatenate(
                [x, ops.repeat(context["context"][:, None, :], steps, axis=1)],
                axis=-1,
            )
        outputs = self.decoder(x, initial_state=states, training=training)
        alignments = None
        if self.attention is not None:
            attended, alignments = self.attention(
                outputs, context["keys"], context["memory"], context["mask"]
            )
            outputs = self.attention.attentional(outputs, attended)
        return self.output_projection(outputs), alignments

    @staticmethod
    def split_inputs(inputs):
        """`{"source", "decoder_input"}` or a pair -> two int32 tensors."""
        if isinstance(inputs, dict):
            source_ids, decoder_input = inputs["source"], inputs["decoder_input"]
        else:
            source_ids, decoder_input = inputs
        return ops.cast(source_ids, "int32"), ops.cast(decoder_input, "int32")

    def unroll(self, decoder_input, states, context, teacher=None, training=False):
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
        if self.attention is not None:
            outputs["alignments"] = tf.TensorArray(tf.float32, size=steps)

        def step(t, previous, states, outputs):
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
        step_input = tf.zeros([batch, self.decoder_input_size], self.compute_dtype)
        with sequence_dropout_masks(self.decoder.cell, step_input, states[0], training):
            _, _, _, outputs = tf.while_loop(
                lambda t, *_: t < steps,
                step,
                (tf.constant(0), inputs_by_step[0], states, outputs),
                # A known trip count lets XLA differentiate through the loop.
                maximum_iterations=steps,
            )
        logits = tf.transpose(outputs["logits"].stack(), [1, 0, 2])
        if self.attention is None:
            return logits, None
        return logits, tf.transpose(outputs["alignments"].stack(), [1, 0, 2])

    def attention_weights(self, inputs):
        """α of a teacher-forced batch.

        Args:
            inputs: `{"source": (B, S), "decoder_input": (B, T)}` int ids (or
                the pair), as `teacher_forcing_pair` makes.

        Returns:
            `(B, T, S)` float32: row t is α_t, summing to 1 over the real
            source tokens and exactly 0 on padding (all 0 for a source that
            is all padding).

        Raises:
            ValueError: the model has no attention, or the inputs are not
                two `(B, ·)` int batches of the same B.
        """
        if self.attention is None:
            raise ValueError(
                "attention_weights needs a model built with attention. "
                f"Received: a model with attention={self.attention_kind!r}"
            )
        source_ids, decoder_input = self.split_inputs(inputs)
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
        _, alignments = self.teacher_forced(
            self.decoder_input_as_read(decoder_input), states, context
        )
        return self.in_target_order(alignments, decoder_input)

    # ----------------------------------------------------- scheduled sampling
    def current_epsilon(self, step=None):
        """ε_i of the sampling schedule at step i: `step`, by default the
        optimizer's step count (0 before training)."""
        if step is None:
            step = 0 if self.optimizer is None else self.optimizer.iterations
        return self.sampling_schedule(step)

    def scheduled_sampling(self, decoder_input, states, context, epsilon, training):
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
        logits, _ = self.unroll(
            ops.cast(decoder_input, "int32"), states, context, teacher, training
        )
        return logits

    def train_step(self, data):
        if self.sampling_schedule is None:
            return super().train_step(data)
        epsilon = self.current_epsilon()
        logs = dict(super().train_step(data))
        logs["epsilon"] = epsilon
        return logs

    # ---------------------------------------------------------------- config
    def get_config(self):
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
            "attention": self.attention_kind,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
            "sampling_schedule": (
                None
                if self.sampling_schedule is None
                else keras.saving.serialize_keras_object(self.sampling_schedule)
            ),
            "seed": self.seed,
            "target_order": self.target_order,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
