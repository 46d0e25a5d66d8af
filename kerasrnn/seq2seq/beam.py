"""Beam search's step, written once for its two drivers.

`beam_search_decode` (`kerasrnn.seq2seq.decoding`, and through it
`export_serving`'s SavedModel) and `export_litert`
(`kerasrnn.export.seq2seq_litert`) both run `beam_step` in a
`tf.while_loop` that stops once every hypothesis has ended; the LiteRT one
converts to a `WHILE` loop of builtin operators. The drivers differ only in
how they keep the hypotheses' α: `beam_search_decode` writes each step's α
once and reorders small slots, the LiteRT loop reorders whole histories in
tensors of fixed shape. Both start from `initial_beam` and end with
`rank_beam`.

The hypotheses live in a `BeamState`: B per example, each live (it may
grow), ended (it emitted `<end>`) or a placeholder. Placeholders fill the
beam wherever fewer than B hypotheses exist: at first (only beam 0 holds
one, the empty hypothesis), and whenever top-k has to take candidates that
no decoder produces, all at ≤ −1e9 (`FORBIDDEN_LOG_PROB`) below their
parent:

- a placeholder's continuations;
- anything but padding after an ended hypothesis (padding carries it over
  unchanged, at no cost);
- pad or start after a live hypothesis (`next_token_log_probs` puts them at
  −1e9).

No status is stored: it is read where it is needed, which keeps the
LiteRT loop's body small. A hypothesis whose last token is `<end>` or
padding has ended (it is extended by padding only); a log-probability below
`PLACEHOLDER_BELOW` (−5e8) marks a placeholder, since a real hypothesis's
log-probability is far above it and a placeholder's at or below −1e9. A
placeholder stays one; `rank_beam` empties its sequence (padding), gives it
log-probability and score −1e9 and ranks it last.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from kerasrnn.seq2seq.loss import FORBIDDEN_LOG_PROB, next_token_log_probs
from kerasrnn.seq2seq.protocol import DecodableModel
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.types import TensorLike

#: Log-probabilities below this mark placeholders (module doc).
PLACEHOLDER_BELOW = FORBIDDEN_LOG_PROB / 2


class BeamState(NamedTuple):
    """The B hypotheses of every example between two steps.

    Every per-hypothesis field has the batch·B rows the decoder runs on, B
    consecutive rows per example in beam order.

    Attributes:
        tokens: int32 `(batch·B,)`: each hypothesis's last token y_{t-1},
            what the next step reads (`START_ID` before the first; padding
            after `<end>`, and from the start for a source of only padding).
        log_probs: float32 `(batch·B, 1)`: log p(y_1 … y_L | x), the `<end>`
            factor included; at or below −1e9 for placeholders.
        lengths: int32 `(batch·B, 1)`: L, the tokens emitted, `<end>`
            included; 0 for placeholders. Only the length penalty reads
            them: with α = 0 they are not counted and stay 0.
        first_rows: int32 `(batch, B)`: B times the example's index, its
            first row, in each of its B columns; constant, it turns a beam
            index into a row and gives B as its static width.
        decoder_states: The decoder states, `(batch·B, …)` each, as
            `model.encode` lists them.
    """

    tokens: tf.Tensor
    log_probs: tf.Tensor
    lengths: tf.Tensor
    first_rows: tf.Tensor
    decoder_states: list[tf.Tensor]


class BeamStep(NamedTuple):
    """What one `beam_step` gives its driver.

    Attributes:
        state: The `BeamState` after the step; `state.tokens` are the tokens
            the step appended.
        parents: int32 `(batch, B)`: the beam (of the state before the step)
            that each new hypothesis extends.
        rows: int32 `(batch·B,)`: the same parents as rows of the state
            before the step.
        alignment: float32 `(batch·B, S)`: the α_t that each hypothesis of
            the state before the step computed (row r: the α with which the
            hypotheses whose parent row is r emitted their token), when the
            driver asked for alignments, else None.
    """

    state: BeamState
    parents: tf.Tensor
    rows: tf.Tensor
    alignment: tf.Tensor | None


def length_penalty_factor(lengths: TensorLike, alpha: float) -> TensorLike:
    """GNMT length penalty lp(L) = ((5 + L) / 6)^α (Wu et al., 2016)."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def is_placeholder(log_probs: TensorLike) -> TensorLike:
    """Whether each hypothesis of these log-probabilities is a placeholder."""
    return log_probs < PLACEHOLDER_BELOW


def has_ended(tokens: TensorLike, vocabulary_size: int) -> TensorLike:
    """bool `(batch·B, 1)`: whether each hypothesis ended, read from its last
    token `tokens` `(batch·B,)` by one lookup (`<end>` or padding)."""
    ends = [[token in (PAD_ID, END_ID)] for token in range(vocabulary_size)]
    return tf.gather(tf.constant(ends), tokens)


def any_live(state: BeamState, vocabulary_size: int) -> TensorLike:
    """Whether any hypothesis of `state` may still grow: neither ended (its
    last token, looked up, is neither `<end>` nor padding) nor a
    placeholder. The condition of both drivers' loops, where every
    operator runs once per step."""
    growing = [[token not in (PAD_ID, END_ID)] for token in range(vocabulary_size)]
    real = state.log_probs >= PLACEHOLDER_BELOW
    return tf.reduce_any(tf.gather(tf.constant(growing), state.tokens) & real)


def repeat_rows(tensor: TensorLike, width: int) -> TensorLike:
    """`(batch, …)` -> `(batch·width, …)`, each row `width` times in a row.

    The batch stays −1 in every shape: a shape computed from `tf.shape`
    would make LiteRT allocate tensors at every call.
    """
    rank = tensor.shape.rank
    tiled = tf.tile(tensor[:, None], [1, width] + [1] * (rank - 1))
    return tf.reshape(tiled, [-1, *trailing_shape(tensor)])


def trailing_shape(tensor: TensorLike) -> list[Any]:
    """The sizes of `tensor`'s axes after the first: ints where static,
    scalar tensors where not."""
    return [
        size if size is not None else tf.shape(tensor)[axis]
        for axis, size in enumerate(tensor.shape)
    ][1:]


def initial_beam(
    model: DecodableModel, source_ids: TensorLike, width: int, empty_sources: TensorLike
) -> tuple[BeamState, dict[str, Any]]:
    """Encode the sources; `(the BeamState before the first step, the
    context for B hypotheses per example)`.

    Beam 0 holds the empty hypothesis (live; ended for a source of only
    padding, whose answer is empty), the other beams placeholders.

    Args:
        model: A `DecodableModel`.
        source_ids: `(batch, S)` int32 ids.
        width: B.
        empty_sources: `(batch,)` bool, the sources that hold no token.
    """
    states, context = model.encode(source_ids)
    # (batch, …) -> (batch·B, …), each example's B rows side by side. The B
    # hypotheses of an example attend to its one memory (keys, mask):
    # copying it per beam would move B times the memory at every step.
    states = [repeat_rows(state, width) for state in states]
    context = model.context_for_beams(context, width)
    # Shapes are broadcast from the input, not built from tf.shape (see
    # `repeat_rows`). `ones` is (batch, 1) by its static shape too, which a
    # slice of a source of unknown length is not: B = 1 would then leave
    # `first_rows` (batch, ?), and B unknown to the decoder step.
    ones = tf.ones_like(empty_sources[:, None], dtype=tf.int32)
    first_rows = (tf.cumsum(ones, axis=0) - 1) * tf.fill([width], width)
    tokens = tf.where(empty_sources[:, None], PAD_ID, first_rows * 0 + START_ID)
    log_probs = tf.cast(ones, tf.float32) * tf.constant(
        [0.0] + [FORBIDDEN_LOG_PROB] * (width - 1)
    )
    return (
        BeamState(
            tf.reshape(tokens, [-1]),
            tf.reshape(log_probs, [-1, 1]),
            tf.reshape(first_rows * 0, [-1, 1]),
            first_rows,
            states,
        ),
        context,
    )


def beam_step(
    model: DecodableModel,
    state: BeamState,
    context: dict[str, Any],
    alpha: float,
    with_alignment: bool,
) -> BeamStep:
    """One step of beam search: extend, rank, keep the best B.

    Every live hypothesis is extended by every token, every ended one by
    padding at no cost; each candidate is ranked by log p / lp(L), lp the
    GNMT length penalty with α = `alpha` and L its length, and top-k keeps
    the B best (the first of equal scores first). Candidates that no
    decoder produces become placeholders (module doc). The decoder states
    are reordered with their hypotheses, one gather each (none for B = 1,
    where each hypothesis extends itself).

    Args:
        model: A `DecodableModel`.
        state: The `BeamState` before the step.
        context: `model.context_for_beams(context, B)`.
        alpha: α ≥ 0, a Python float.
        with_alignment: Whether to return α (attention models only).

    Returns:
        A `BeamStep`.
    """
    width = state.first_rows.shape[1]
    vocabulary_size = model.target_vocabulary_size
    decoded = model.decode_step(
        state.tokens, state.decoder_states, context, queries_per_source=width
    )
    ended = has_ended(state.tokens, vocabulary_size)
    # An ended hypothesis (or a placeholder) has one continuation: padding,
    # at no cost.
    ended_row = tf.constant(
        [0.0 if token == PAD_ID else FORBIDDEN_LOG_PROB for token in range(vocabulary_size)]
    )
    step_log_probs = tf.where(ended, ended_row, next_token_log_probs(decoded.logits))
    candidates = state.log_probs + step_log_probs
    ranked = candidates
    # ((5 + L) / 6)^0 is exactly 1: with α = 0 the division changes nothing,
    # and nothing reads the lengths.
    if alpha:
        candidate_lengths = state.lengths + tf.cast(tf.logical_not(ended), tf.int32)
        ranked = candidates / length_penalty_factor(candidate_lengths, alpha)
    best_ranked, best = tf.math.top_k(
        tf.reshape(ranked, [-1, width * vocabulary_size]), k=width
    )
    if width == 1:
        # One hypothesis per example: each row is its own parent, and top-k's
        # index is the token. Nothing is reordered.
        parents = tf.zeros_like(best)
        rows = tf.reshape(state.first_rows, [-1])
        tokens = tf.reshape(best, [-1])
    else:
        parents = best // vocabulary_size
        rows = tf.reshape(parents + state.first_rows, [-1])
        tokens = tf.reshape(best % vocabulary_size, [-1])

    def from_parents(tensor: TensorLike) -> TensorLike:
        """`tensor` `(batch·B, …)` reordered: each new hypothesis's row
        is its parent's."""
        return tensor if width == 1 else tf.gather(tensor, rows)

    if alpha:
        # (batch, B·V, 1): gathered by (batch, B) indices, these give (batch, B, 1).
        flat = tf.reshape(candidates, [-1, width * vocabulary_size, 1])
        log_probs = tf.reshape(tf.gather(flat, best, batch_dims=1), [-1, 1])
        lengths = tf.where(is_placeholder(log_probs), 0, from_parents(candidate_lengths))
    else:
        # Ranked by the log-probabilities themselves: top-k's values are theirs.
        log_probs = tf.reshape(best_ranked, [-1, 1])
        lengths = state.lengths
    decoder_states = [from_parents(decoder_state) for decoder_state in decoded.states]
    return BeamStep(
        BeamState(tokens, log_probs, lengths, state.first_rows, decoder_states),
        parents,
        rows,
        decoded.alignment if with_alignment else None,
    )


def rank_beam(
    model: DecodableModel,
    source_ids: TensorLike,
    sequences: TensorLike,
    state: BeamState,
    alignments: TensorLike | None,
    alpha: float,
    unrolled: bool,
) -> tuple[TensorLike, TensorLike, TensorLike, TensorLike | None]:
    """The beam's hypotheses after the last step, best first.

    Placeholders are emptied (padding, α 0, log-probability and score
    −1e9); α is zero wherever a hypothesis appended padding. The score of
    the others is log p / lp(L), plus what `model.rescore` adds (an
    ensemble's right-to-left members); a stable sort by it puts them in
    order, which without rescoring is top-k's order already.

    Args:
        model: A `DecodableModel`.
        source_ids: `(batch, S)` int32 ids.
        sequences: int32 `(batch, B, T)`: the tokens each hypothesis of
            `state` appended at each step, in decoding order.
        state: The `BeamState` after the last step.
        alignments: float32 `(batch, B, T, S)`, each token's α, or None.
        alpha: The length penalty α.
        unrolled: Whether rescoring must hold no loop op (`rescore`'s
            `unrolled`, for LiteRT).

    Returns:
        `(sequences, log_probs, scores, alignments)`, `(batch, B, T)`,
        `(batch, B)`, `(batch, B)` and `(batch, B, T, S)` or None; still in
        decoding order (a right-to-left model's answers reversed).
    """
    width = state.first_rows.shape[1]
    log_probs = tf.reshape(state.log_probs, [-1, width])
    placeholder = is_placeholder(log_probs)
    sequences = tf.where(placeholder[..., None], PAD_ID, sequences)
    scores = log_probs
    if alpha:
        scores = scores / tf.reshape(length_penalty_factor(state.lengths, alpha), [-1, width])
    # A rescore written before `unrolled` existed is still called as it was.
    if unrolled:
        rescored = model.rescore(source_ids, sequences, scores, unrolled=True)
    else:
        rescored = model.rescore(source_ids, sequences, scores)
    scores = tf.where(placeholder, FORBIDDEN_LOG_PROB, rescored)
    log_probs = tf.where(placeholder, FORBIDDEN_LOG_PROB, log_probs)
    if alignments is not None:
        alignments = tf.where(tf.equal(sequences, PAD_ID)[..., None], 0.0, alignments)
    # top_k over all B is a stable sort: equal scores keep their order.
    order = tf.math.top_k(scores, k=width).indices
    sequences, log_probs, scores = (
        tf.gather(value, order, batch_dims=1) for value in (sequences, log_probs, scores)
    )
    if alignments is not None:
        alignments = tf.gather(alignments, order, batch_dims=1)
    return sequences, log_probs, scores, alignments
