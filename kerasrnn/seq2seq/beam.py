"""Beam search's step, written once for its two drivers.

`beam_search_decode` (`kerasrnn.seq2seq.decoding`, and through it
`export_serving`'s SavedModel) runs `beam_step` in a `tf.while_loop`;
`export_litert` (`kerasrnn.export.seq2seq_litert`) runs it in a Python loop of
`max_target_length` steps, which converts to a LiteRT file without a `WHILE`
loop. The drivers differ only in how they keep the hypotheses' tokens: the
while loop reorders whole hypotheses at every step, the unrolled loop keeps
each step's tokens and parent pointers and walks back once at the end. Both
start from `initial_beam` and end with `rank_beam`.

The hypotheses live in a `BeamState`: B per example, each LIVE (it may grow),
ENDED (it emitted `<end>`) or a PLACEHOLDER. Placeholders fill the beam
wherever fewer than B hypotheses exist: at first (only beam 0 holds one, the
empty hypothesis), and whenever top-k has to take candidates that no decoder
produces, all at ≤ −1e9 (`FORBIDDEN_LOG_PROB`):

- a placeholder's continuations;
- anything but padding after an ended hypothesis (padding carries it over
  unchanged, at no cost);
- pad or start after a live hypothesis (`next_token_log_probs` puts them at
  −1e9).

A placeholder emits padding, has length 0 and log-probability −1e9, and
stays a placeholder; `rank_beam` empties its sequence and ranks it last.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from kerasrnn.seq2seq.loss import FORBIDDEN_LOG_PROB, next_token_log_probs
from kerasrnn.seq2seq.protocol import DecodableModel
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.types import TensorLike

#: A hypothesis's status in `BeamState.status`.
LIVE, ENDED, PLACEHOLDER = 0, 1, 2


class BeamState(NamedTuple):
    """The B hypotheses of every example between two steps.

    The per-hypothesis fields are `(batch, B, 1)`: the last axis broadcasts
    against each hypothesis's V candidates with no op to add it, which
    keeps the unrolled LiteRT graph smaller.

    Attributes:
        tokens: int32 `(batch, B, 1)`: each hypothesis's last token y_{t-1},
            what the next step reads (`START_ID` before the first; padding
            after `<end>` and for placeholders).
        log_probs: float32 `(batch, B, 1)`: log p(y_1 … y_L | x), the
            `<end>` factor included; `FORBIDDEN_LOG_PROB` for placeholders.
        lengths: int32 `(batch, B, 1)`: L, the tokens emitted, `<end>`
            included; 0 for placeholders. Only the length penalty reads
            them: with α = 0 they are not counted and stay 0.
        status: int32 `(batch, B, 1)`: `LIVE`, `ENDED` or `PLACEHOLDER`.
        decoder_states: The decoder states, `(batch·B, …)` each, B rows per
            example in beam order, as `model.encode` lists them.
    """

    tokens: tf.Tensor
    log_probs: tf.Tensor
    lengths: tf.Tensor
    status: tf.Tensor
    decoder_states: list[tf.Tensor]


class BeamStep(NamedTuple):
    """What one `beam_step` gives its driver.

    Attributes:
        state: The `BeamState` after the step; `state.tokens` are the tokens
            the step appended.
        parents: int32 `(batch, B)`: the beam (of the state before the step)
            that each new hypothesis extends.
        alignment: float32 `(batch, B, S)`: the α_t with which each new
            hypothesis's token was emitted (its parent's), when the driver
            asked for alignments, else None. Where the appended token is
            padding it means nothing: `rank_beam` zeroes those rows.
    """

    state: BeamState
    parents: tf.Tensor
    alignment: tf.Tensor | None


def length_penalty_factor(lengths: TensorLike, alpha: float) -> TensorLike:
    """GNMT length penalty lp(L) = ((5 + L) / 6)^α (Wu et al., 2016)."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


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


def gather_rows(tensor: TensorLike, parents: TensorLike) -> TensorLike:
    """`(batch·B, …)` rows -> the rows that `parents` `(batch, B)` name,
    per example."""
    width = parents.shape[-1]
    shape = trailing_shape(tensor)
    grouped = tf.reshape(tensor, [-1, width, *shape])
    return tf.reshape(tf.gather(grouped, parents, batch_dims=1), [-1, *shape])


def reorder_rows(tensors: list[TensorLike], parents: TensorLike) -> list[TensorLike]:
    """`gather_rows` of every tensor, with one gather per dtype: the tensors
    of static shape are packed side by side, gathered and split again.

    Every gather, reshape and split is an operator of the unrolled LiteRT
    graph, at every step: packing takes a handful per step instead of three
    per tensor. A tensor whose trailing shape is not static (α over sources
    of any length in `beam_search_decode`) is gathered alone.
    """
    reordered: list[TensorLike | None] = [None] * len(tensors)
    packs: dict[tf.DType, list[int]] = {}
    for index, tensor in enumerate(tensors):
        if tensor.shape[1:].is_fully_defined():
            packs.setdefault(tensor.dtype, []).append(index)
        else:
            reordered[index] = gather_rows(tensor, parents)
    for indices in packs.values():
        sizes = [tensors[index].shape[1:].num_elements() for index in indices]
        flat = [
            tensors[index] if tensors[index].shape.rank == 2
            else tf.reshape(tensors[index], [-1, size])
            for index, size in zip(indices, sizes)
        ]
        if len(flat) == 1:
            pieces = [gather_rows(flat[0], parents)]
        else:
            pieces = tf.split(gather_rows(tf.concat(flat, axis=1), parents), sizes, axis=1)
        for index, piece in zip(indices, pieces):
            shape = tensors[index].shape
            reordered[index] = piece if shape.rank == 2 else tf.reshape(piece, [-1, *shape[1:]])
    return reordered


def candidate_outcomes(vocabulary_size: int) -> tf.Tensor:
    """`(3, V)` int32: what a hypothesis of each status becomes when extended
    by each token, as one number, token + V · status: the token it appends
    and its new status (see the module doc for the impossible candidates).
    """
    tokens = np.arange(vocabulary_size)
    emittable = (tokens != PAD_ID) & (tokens != START_ID)
    live = np.where(tokens == END_ID, ENDED, np.where(emittable, LIVE, PLACEHOLDER))
    ended = np.where(tokens == PAD_ID, ENDED, PLACEHOLDER)
    status = np.stack([live, ended, np.full(vocabulary_size, PLACEHOLDER)])
    appended = np.stack([
        np.where(emittable, tokens, PAD_ID),
        np.full(vocabulary_size, PAD_ID),
        np.full(vocabulary_size, PAD_ID),
    ])
    return tf.constant(appended + vocabulary_size * status, tf.int32)


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
    # (batch, B, 1) shapes are broadcast from the input, not built from
    # tf.shape (see `repeat_rows`).
    first = tf.where(empty_sources[:, None, None], ENDED, LIVE)
    status = tf.maximum(first, tf.constant([LIVE] + [PLACEHOLDER] * (width - 1))[:, None])
    lengths = tf.zeros_like(status)
    log_probs = tf.where(tf.equal(status, PLACEHOLDER), FORBIDDEN_LOG_PROB, 0.0)
    return BeamState(lengths + START_ID, log_probs, lengths, status, states), context


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
    decoder produces become placeholders (module doc). The decoder states,
    and α with `with_alignment`, are reordered with their hypotheses by one
    gather.

    Args:
        model: A `DecodableModel`.
        state: The `BeamState` before the step.
        context: `model.context_for_beams(context, B)`.
        alpha: α ≥ 0, a Python float.
        with_alignment: Whether to return α (attention models only).

    Returns:
        A `BeamStep`.
    """
    width = state.status.shape[1]
    vocabulary_size = model.target_vocabulary_size
    decoded = model.decode_step(
        tf.reshape(state.tokens, [-1]), state.decoder_states, context,
        queries_per_source=width,
    )
    step_log_probs = tf.reshape(
        next_token_log_probs(decoded.logits), [-1, width, vocabulary_size]
    )
    live = tf.equal(state.status, LIVE)
    # An ended hypothesis (or a placeholder) has one continuation: padding,
    # at no cost.
    ended_row = tf.constant(
        [0.0 if token == PAD_ID else FORBIDDEN_LOG_PROB for token in range(vocabulary_size)]
    )
    candidates = state.log_probs + tf.where(live, step_log_probs, ended_row)
    ranked = candidates
    # ((5 + L) / 6)^0 is exactly 1: with α = 0 the division changes nothing,
    # and nothing reads the lengths.
    if alpha:
        candidate_lengths = state.lengths + tf.cast(live, tf.int32)
        ranked = candidates / length_penalty_factor(candidate_lengths, alpha)
    best_ranked, best = tf.math.top_k(
        tf.reshape(ranked, [-1, width * vocabulary_size]), k=width
    )
    if alpha:
        # (batch, B·V, 1): gathered by (batch, B) indices, these give (batch, B, 1).
        flat = tf.reshape(candidates, [-1, width * vocabulary_size, 1])
        best_log_probs = tf.gather(flat, best, batch_dims=1)
    else:
        # Ranked by the log-probabilities themselves: top-k's values are theirs.
        best_log_probs = tf.reshape(best_ranked, [-1, width, 1])
    parents = best // vocabulary_size
    outcomes = tf.reshape(
        tf.gather(candidate_outcomes(vocabulary_size), state.status),
        [-1, width * vocabulary_size, 1],
    )
    outcome = tf.gather(outcomes, best, batch_dims=1)
    tokens, status = outcome % vocabulary_size, outcome // vocabulary_size
    placeholder = tf.equal(status, PLACEHOLDER)
    log_probs = tf.where(placeholder, FORBIDDEN_LOG_PROB, best_log_probs)
    lengths = state.lengths
    if alpha:
        lengths = tf.where(
            placeholder, 0, tf.gather(candidate_lengths, parents, batch_dims=1)
        )
    carried = list(decoded.states)
    if with_alignment:
        carried.append(decoded.alignment)
    reordered = reorder_rows(carried, parents)
    alignment = None
    if with_alignment:
        *reordered, alignment = reordered
        alignment = tf.reshape(alignment, [-1, width, *trailing_shape(alignment)])
    return BeamStep(
        BeamState(tokens, log_probs, lengths, status, reordered), parents, alignment
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
    width = state.status.shape[1]
    placeholder = tf.equal(state.status, PLACEHOLDER)
    sequences = tf.where(placeholder, PAD_ID, sequences)
    scores = state.log_probs
    if alpha:
        scores = scores / length_penalty_factor(state.lengths, alpha)
    log_probs = tf.reshape(state.log_probs, [-1, width])
    scores = tf.reshape(scores, [-1, width])
    # A rescore written before `unrolled` existed is still called as it was.
    if unrolled:
        rescored = model.rescore(source_ids, sequences, scores, unrolled=True)
    else:
        rescored = model.rescore(source_ids, sequences, scores)
    scores = tf.where(tf.reshape(placeholder, [-1, width]), FORBIDDEN_LOG_PROB, rescored)
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
