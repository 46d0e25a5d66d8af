"""Decoding a `Seq2Seq` model: greedy, temperature sampling and beam search.

Each decoder is one `tf.function` built from a `tf.while_loop` over
fixed-size tensors — no Python work per step — so it runs batched in graph
mode and also under `tf.function(jit_compile=True)` (XLA). Each example
stops at its `<end>` token (id 2): from then on it emits padding (id 0) and
its log-probability no longer changes; the loop ends when every example has
ended or after `max_length` steps. Pad and start ids are never emitted.

Returned sequences are `(…, max_length)` int32 ids, the `<end>` id included
where the example ended, then zeros. Log-probabilities are
log p(y_1 … y_L | x) = Σ_t log p(y_t | y_<t, c) under the model
(`eq:rnn-seq2seq`), summed over the emitted tokens (`<end>` included).
"""

import tensorflow as tf

from kerasrnn.seq2seq.model import FORBIDDEN_LOG_PROB, next_token_log_probs
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID


def check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"Argument `{name}` must be a positive integer. "
            f"Received: {name}={value!r}"
        )


def append_token(sequences, t, tokens):
    """Write `tokens` (…,) at position t of `sequences` (…, max_length)."""
    max_length = tf.shape(sequences)[-1]
    return sequences + tf.one_hot(t, max_length, dtype=tf.int32) * tokens[..., None]


def keep_shapes(step):
    """`step` with its outputs given its inputs' static shapes.

    Gathers and reshapes lose the static batch size that `tf.while_loop`
    requires to stay the same across iterations.
    """

    def step_with_shapes(*loop_vars):
        return tf.nest.map_structure(
            lambda new, old: tf.ensure_shape(new, old.shape),
            step(*loop_vars),
            loop_vars,
        )

    return step_with_shapes


def decode_tokens(model, source_ids, max_length, choose):
    """The loop greedy and sampling decoding share.

    `choose(t, log_probs (batch, V)) -> tokens (batch,)` picks y_t.
    """
    states, context = model.encode(source_ids)
    batch = tf.shape(source_ids)[0]

    def step(t, previous, states, finished, sequences, total):
        logits, new_states = model.decode_step(previous, states, context)
        log_probs = next_token_log_probs(logits)
        tokens = choose(t, log_probs)
        tokens = tf.where(finished, PAD_ID, tokens)
        picked = tf.gather(log_probs, tokens, batch_dims=1)
        total = total + tf.where(finished, 0.0, picked)
        sequences = append_token(sequences, t, tokens)
        finished = finished | tf.equal(tokens, END_ID)
        return t + 1, tokens, new_states, finished, sequences, total

    _, _, _, _, sequences, total = tf.while_loop(
        lambda t, previous, states, finished, *_: (t < max_length)
        & ~tf.reduce_all(finished),
        keep_shapes(step),
        (
            tf.constant(0),
            tf.fill([batch], START_ID),
            states,
            tf.zeros([batch], tf.bool),
            tf.zeros([batch, max_length], tf.int32),
            tf.zeros([batch], tf.float32),
        ),
    )
    return sequences, total


@tf.function(reduce_retracing=True)
def greedy_decode(model, source_ids, max_length):
    """y_t = argmax_y p(y | y_<t, c) at every step.

    Args:
        model: A `Seq2Seq` model.
        source_ids: `(batch, S)` int ids, right-padded with 0.
        max_length: Positive int, the most tokens emitted per example.

    Returns:
        `(sequences (batch, max_length) int32, log_probs (batch,) float32)`.
    """
    check_positive_int("max_length", max_length)
    return decode_tokens(
        model,
        source_ids,
        max_length,
        lambda t, log_probs: tf.argmax(log_probs, axis=-1, output_type=tf.int32),
    )


@tf.function(reduce_retracing=True)
def sample_decode(model, source_ids, max_length, temperature=1.0, top_k=None, seed=0):
    """Draw y_t from softmax(logits / temperature), optionally among the top k.

    Sampling uses the Gumbel-max trick with stateless Philox noise: the same
    `seed` and inputs give the same samples, with or without XLA.

    Args:
        model: A `Seq2Seq` model.
        source_ids: `(batch, S)` int ids, right-padded with 0.
        max_length: Positive int, the most tokens emitted per example.
        temperature: Positive float; < 1 sharpens, > 1 flattens.
        top_k: None (all tokens) or a positive int: sample among the k most
            likely tokens only (ties at the k-th value are kept).
        seed: Int seed of the noise.

    Returns:
        `(sequences (batch, max_length) int32, log_probs (batch,) float32)`;
        the log-probabilities are the model's (temperature 1, no top-k).
    """
    check_positive_int("max_length", max_length)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not temperature > 0
    ):
        raise ValueError(
            "Argument `temperature` must be a positive number. "
            f"Received: temperature={temperature!r}"
        )
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(
            f"Argument `seed` must be an integer. Received: seed={seed!r}"
        )

    # All noise is drawn before the loop: a seed computed inside a
    # tf.while_loop gives different streams with and without XLA.
    uniform = tf.random.stateless_uniform(
        [max_length, tf.shape(source_ids)[0], model.target_vocabulary_size],
        seed=[seed, 0], minval=1e-7, maxval=1.0, alg="philox",
    )
    gumbel = -tf.math.log(-tf.math.log(uniform))

    def choose(t, log_probs):
        scaled = log_probs / temperature
        if top_k is not None:
            kth = tf.math.top_k(scaled, k=top_k).values[:, -1:]
            scaled = tf.where(scaled < kth, FORBIDDEN_LOG_PROB, scaled)
        return tf.argmax(scaled + gumbel[t], axis=-1, output_type=tf.int32)

    return decode_tokens(model, source_ids, max_length, choose)


def length_penalty_factor(lengths, alpha):
    """GNMT length penalty lp(L) = ((5 + L) / 6)^α (Wu et al., 2016)."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


@tf.function(reduce_retracing=True)
def beam_search_decode(model, source_ids, beam_width, max_length, length_penalty=0.0):
    """Beam search: keep the `beam_width` best hypotheses at every step.

    At step t every live hypothesis is extended by every token and every
    ended hypothesis is carried over unchanged; the `beam_width` candidates
    with the best score log p(y_1 … y_L | x) / lp(L), lp(L) = ((5 + L)/6)^α
    and L the hypothesis length with `<end>`, survive. With α = 0 the score
    is the log-probability, and `beam_width=1` is greedy decoding.

    Args:
        model: A `Seq2Seq` model.
        source_ids: `(batch, S)` int ids, right-padded with 0.
        beam_width: Positive int, B.
        max_length: Positive int, the most tokens per hypothesis.
        length_penalty: α ≥ 0; larger favours longer hypotheses.

    Returns:
        `(sequences (batch, B, max_length) int32, log_probs (batch, B),
        scores (batch, B))`, best first by score.
    """
    check_positive_int("beam_width", beam_width)
    check_positive_int("max_length", max_length)
    if (
        isinstance(length_penalty, bool)
        or not isinstance(length_penalty, (int, float))
        or not length_penalty >= 0
    ):
        raise ValueError(
            "Argument `length_penalty` must be a number ≥ 0. "
            f"Received: length_penalty={length_penalty!r}"
        )
    alpha = float(length_penalty)
    width = beam_width
    states, context = model.encode(source_ids)
    batch = tf.shape(source_ids)[0]

    def tile(tensor):
        """(batch, …) -> (batch·B, …), each example's rows side by side."""
        return tf.repeat(tensor, width, axis=0)

    states = [tile(state) for state in states]
    context = None if context is None else tile(context)
    vocabulary_size = model.target_vocabulary_size
    # Only beam 0 is alive at first, so the first step expands one hypothesis.
    log_probs = tf.tile(
        tf.concat([[0.0], tf.fill([width - 1], FORBIDDEN_LOG_PROB)], 0)[None],
        [batch, 1],
    )
    # An ended hypothesis has one continuation: padding, at no cost.
    ended_row = tf.where(
        tf.equal(tf.range(vocabulary_size), PAD_ID), 0.0, FORBIDDEN_LOG_PROB
    )

    def step(t, previous, states, finished, lengths, sequences, log_probs):
        logits, new_states = model.decode_step(previous, states, context)
        step_log_probs = tf.reshape(
            next_token_log_probs(logits), [batch, width, vocabulary_size]
        )
        step_log_probs = tf.where(
            finished[..., None], ended_row[None, None], step_log_probs
        )
        candidates = log_probs[..., None] + step_log_probs
        candidate_lengths = lengths + tf.cast(~finished, tf.int32)
        scores = candidates / length_penalty_factor(
            candidate_lengths, alpha
        )[..., None]
        _, best = tf.math.top_k(tf.reshape(scores, [batch, -1]), k=width)
        parents = best // vocabulary_size
        tokens = best % vocabulary_size
        log_probs = tf.gather(
            tf.reshape(candidates, [batch, -1]), best, batch_dims=1
        )
        lengths = tf.gather(candidate_lengths, parents, batch_dims=1)
        was_finished = tf.gather(finished, parents, batch_dims=1)
        sequences = tf.gather(sequences, parents, batch_dims=1)
        sequences = append_token(sequences, t, tokens)
        finished = was_finished | tf.equal(tokens, END_ID)
        rows = tf.reshape(
            parents + width * tf.range(batch)[:, None], [-1]
        )
        new_states = [tf.gather(state, rows) for state in new_states]
        tokens = tf.reshape(tokens, [-1])
        return (
            t + 1, tokens, new_states, finished, lengths, sequences, log_probs,
        )

    _, _, _, _, lengths, sequences, log_probs = tf.while_loop(
        lambda t, previous, states, finished, *_: (t < max_length)
        & ~tf.reduce_all(finished),
        keep_shapes(step),
        (
            tf.constant(0),
            tf.fill([batch * width], START_ID),
            states,
            tf.zeros([batch, width], tf.bool),
            tf.zeros([batch, width], tf.int32),
            tf.zeros([batch, width, max_length], tf.int32),
            log_probs,
        ),
    )
    # top_k ranked the last step by these very scores: best first already.
    return sequences, log_probs, log_probs / length_penalty_factor(lengths, alpha)
