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

Token ids follow `kerasrnn.seq2seq.vocabulary`: 0 pads, 1 starts, 2 ends.
The source embedding masks padding (`mask_zero=True`), so the encoder reads
only real tokens in both directions; the decoder needs no mask, because
right padding only follows the last real step and the loss skips it.
"""

import json

import keras
import tensorflow as tf
from keras import ops

# The private mixin by which keras.layers.RNN recognises cells with dropout
# masks; the scheduled-sampling loop draws the masks before its loop as
# keras.layers.RNN does (see kerasrnn/cells/base.py; keras is pinned).
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from kerasrnn.seq2seq.schedules import SamplingSchedule
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID

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

    Call arguments:
        y_true: `(batch, T)` int target ids.
        y_pred: `(batch, T, V)` logits.
    """

    def __init__(self, name="sequence_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        token_loss = keras.losses.sparse_categorical_crossentropy(
            y_true, y_pred, from_logits=True
        )
        mask = ops.cast(ops.not_equal(y_true, PAD_ID), token_loss.dtype)
        # The default reduction averages over all batch·T positions; this
        # scale turns that average into one over the real tokens only.
        scale = ops.cast(ops.size(mask), mask.dtype) / ops.maximum(
            ops.sum(mask), 1.0
        )
        return token_loss * mask * scale

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}


def state_sizes(cell):
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
        sampling_schedule: None (teacher forcing) or a `SamplingSchedule`.
        seed: Seed of the scheduled-sampling coin flips.
        **kwargs: Passed to `keras.Model` (`name`, ...).

    Call arguments:
        inputs: `{"source": (batch, S), "decoder_input": (batch, T)}` int
            ids (or the pair in that order), as `teacher_forcing_pair` makes.
        training: Whether dropout and scheduled sampling apply.

    Returns:
        `(batch, T, V)` logits of y_1 … y_T.

    Example:

    >>> model = Seq2Seq(30, 40, kerasrnn.LSTMCell(32), bidirectional=True)
    >>> model.compile("adam", SequenceCrossEntropy())
    >>> model.fit(dataset.map(teacher_forcing_pair), epochs=5)
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
        sampling_schedule=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value, low in (
            ("source_vocabulary_size", source_vocabulary_size, END_ID + 1),
            ("target_vocabulary_size", target_vocabulary_size, END_ID + 1),
            ("embedding_dim", embedding_dim, 1),
            ("encoder_layers", encoder_layers, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"Argument `{name}` must be an integer ≥ {low}. "
                    f"Received: {name}={value!r}"
                )
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
        if context not in CONTEXTS:
            raise ValueError(
                f"Argument `context` must be one of {CONTEXTS}. "
                f"Received: context={context!r}"
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
        self.bidirectional = bool(bidirectional)
        self.context = context
        self.sampling_schedule = sampling_schedule
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)
        self.state_sizes = state_sizes(cell)
        self.cell_output_size = int(cell.output_size)
        self.uses_initial_state = context in ("initial_state", "both")
        self.uses_every_step = context in ("every_step", "both")

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
                return_sequences=not top,
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

    def copy_cell(self, name):
        config = json.loads(self.cell_json)
        config["config"]["name"] = name
        return keras.saving.deserialize_keras_object(config)

    @property
    def context_size(self):
        """Size of c: one encoder direction's output, doubled if bidirectional."""
        return self.cell_output_size * (2 if self.bidirectional else 1)

    def build(self, input_shape=None):
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        width = self.embedding_dim
        for layer in self.encoder:
            layer.build((None, None, width))
            width = self.context_size
        for dense, size in zip(self.bridge, self.state_sizes):
            dense.build((None, 2 * size))
        decoder_input_size = self.embedding_dim + (
            self.context_size if self.uses_every_step else 0
        )
        self.decoder.build((None, None, decoder_input_size))
        self.output_projection.build((None, self.cell_output_size))

    # ---------------------------------------------------------------- encode
    def encode(self, source_ids, training=False):
        """Run the encoder; return the decoder's initial states and c.

        Args:
            source_ids: `(batch, S)` int ids, right-padded with 0.
            training: Whether encoder dropout applies.

        Returns:
            `(states, context)`: `states` a list of `(batch, n)` tensors (the
            decoder's d_0; zeros for `context="every_step"`), `context` a
            `(batch, context_size)` tensor, or None unless the context is fed
            at every step.
        """
        source_ids = ops.cast(source_ids, "int32")
        mask = ops.not_equal(source_ids, PAD_ID)
        x = self.source_embedding(source_ids)
        for layer in self.encoder[:-1]:
            x = layer(x, mask=mask, training=training)
        final_output, *final_states = self.encoder[-1](
            x, mask=mask, training=training
        )
        context = final_output if self.uses_every_step else None
        if not self.uses_initial_state:
            batch = ops.shape(source_ids)[0]
            return [ops.zeros((batch, size)) for size in self.state_sizes], context
        if self.bidirectional:
            count = len(self.state_sizes)
            forward, backward = final_states[:count], final_states[count:]
            final_states = [
                dense(ops.concatenate([f, b], axis=-1))
                for dense, f, b in zip(self.bridge, forward, backward)
            ]
        return list(final_states), context

    # ---------------------------------------------------------------- decode
    def decode_step(self, tokens, states, context, training=False):
        """One decoder step: y_{t-1} and d_{t-1} -> logits of y_t and d_t.

        Args:
            tokens: `(batch,)` int ids y_{t-1}.
            states: List of `(batch, n)` decoder states d_{t-1}.
            context: `(batch, context_size)` or None (see `encode`).
            training: Whether decoder dropout applies.

        Returns:
            `(logits (batch, V), new_states)`.
        """
        x = self.target_embedding(ops.cast(tokens, "int32"))
        if context is not None:
            x = ops.concatenate([x, context], axis=-1)
        output, new_states = self.decoder.cell(x, states, training=training)
        if not isinstance(new_states, (list, tuple)):
            new_states = [new_states]
        return self.output_projection(output), list(new_states)

    def call(self, inputs, training=None):
        if isinstance(inputs, dict):
            source_ids, decoder_input = inputs["source"], inputs["decoder_input"]
        else:
            source_ids, decoder_input = inputs
        decoder_input = ops.cast(decoder_input, "int32")
        states, context = self.encode(source_ids, training=training)
        if training and self.sampling_schedule is not None:
            return self.scheduled_sampling(
                decoder_input, states, context, self.current_epsilon(), training
            )
        x = self.target_embedding(decoder_input)
        if context is not None:
            steps = ops.shape(decoder_input)[1]
            x = ops.concatenate(
                [x, ops.repeat(context[:, None, :], steps, axis=1)], axis=-1
            )
        outputs = self.decoder(x, initial_state=states, training=training)
        return self.output_projection(outputs)

    # ----------------------------------------------------- scheduled sampling
    def current_epsilon(self):
        """ε_i of the sampling schedule at the optimizer's step count i."""
        step = 0 if self.optimizer is None else self.optimizer.iterations
        return self.sampling_schedule(step)

    def scheduled_sampling(self, decoder_input, states, context, epsilon, training):
        """Unroll the decoder feeding y_{t-1} with probability ε, else ŷ_{t-1}.

        Args:
            decoder_input: `(batch, T)` ids [<start>, y_1 … y_{T-1}].
            states: Initial decoder states.
            context: See `encode`.
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
        inputs_by_step = tf.transpose(decoder_input)
        teacher_by_step = tf.transpose(teacher)
        steps = tf.shape(decoder_input)[1]
        cell = self.decoder.cell
        if training and isinstance(cell, DropoutRNNCell):
            # One mask per sequence, drawn outside the loop as
            # keras.layers.RNN does, so that the loop body stays stateless.
            first = self.target_embedding(inputs_by_step[0])
            if context is not None:
                first = ops.concatenate([first, context], axis=-1)
            cell.get_dropout_mask(first)
            cell.get_recurrent_dropout_mask(states[0])

        def step(t, previous, states, logits):
            tokens = tf.where(teacher_by_step[t], inputs_by_step[t], previous)
            step_logits, states = self.decode_step(
                tokens, states, context, training=training
            )
            predicted = tf.argmax(
                next_token_log_probs(step_logits), axis=-1, output_type=tf.int32
            )
            return t + 1, predicted, states, logits.write(t, step_logits)

        _, _, _, logits = tf.while_loop(
            lambda t, *_: t < steps,
            step,
            (
                tf.constant(0),
                inputs_by_step[0],
                states,
                tf.TensorArray(self.compute_dtype, size=steps),
            ),
        )
        if isinstance(cell, DropoutRNNCell):
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()
        return tf.transpose(logits.stack(), [1, 0, 2])

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
            "sampling_schedule": (
                None
                if self.sampling_schedule is None
                else keras.saving.serialize_keras_object(self.sampling_schedule)
            ),
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
