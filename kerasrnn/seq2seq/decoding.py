"""Decoding a `DecodableModel` — a `Seq2Seq`, or a `Seq2SeqEnsemble`, which
decodes with the mean of its members' next-token distributions: greedy,
temperature sampling and beam search.

Each decoder checks its arguments in Python, then runs one `tf.function`
built from a `tf.while_loop` over fixed-size tensors — no Python work per
step — so it runs batched in graph mode and also under
`tf.function(jit_compile=True)` (XLA). Each example stops at its `<end>`
token (id 2): from then on it emits padding (id 0) and its log-probability no
longer changes; the loop ends when every example has ended or after
`max_target_length` steps. Pad and start ids are never emitted. A source that
is all padding gets the empty answer (only padding, log-probability 0).

Sources are `(batch, S)` ids padded with 0 anywhere: at the end, at the front
(`keras.utils.pad_sequences`'s default) or between tokens. The encoder skips
padding, so the answers, log-probabilities and scores depend only on the
tokens, and alignments put the same weights on the same tokens, at the
columns where the source holds them (0 on padding).

Every decoder runs at most `MAX_DECODE_LENGTH` (65536) steps: its outputs
(and sampling's noise) are allocated before the first step.

Each decoder returns a `DecodeResult` whatever its arguments. Its
sequences are `(…, max_target_length)` int32 ids, the `<end>` id included
where the example ended, then zeros. Log-probabilities are
log p(y_1 … y_L | x) = Σ_t log p(y_t | y_<t, c) under the model
(`eq:rnn-seq2seq`), summed over the emitted tokens (`<end>` included).
Scores are what the hypotheses are ranked by: beam search divides the
log-probabilities by its length penalty (and an ensemble's right-to-left
members add theirs); greedy and sampled decoding keep one hypothesis, whose
score is its log-probability.

With `return_alignments=True` (attention models only) the result also holds
the attention weights α of the sequences it returns: `(…, T, S)` float32
(T = `max_target_length`), row t the α_t with which token t was emitted,
zero after the sequence ended; beam search reorders them with its
hypotheses. Otherwise its `alignments` is None.

A model that reads the target right to left (`target_order=
"right_to_left"`) emits y_L first; every decoder returns its answers (and
their α rows) reversed, so that they read left to right like any model's.
An ensemble's right-to-left members rescore beam search's hypotheses (see
`kerasrnn.seq2seq.ensemble`).

Beam search's step, its placeholders and its final ranking are
`kerasrnn.seq2seq.beam`'s, which the LiteRT export
(`kerasrnn.export.seq2seq_litert`) runs unrolled: both give the same beam.

`greedy_decode` and `beam_search_decode` take what they decode with as
one `DecodingSpec` (`decoding=`), as the exporters do. Their loose keywords
(`beam_width`, `max_target_length`, `length_penalty`, and `max_length`
before them) still work for one release, with a `DeprecationWarning`
(`kerasrnn.seq2seq.renamed`); `sample_decode` takes `max_target_length`
(`max_length` deprecated).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from kerasrnn.seq2seq.beam import BeamState, any_live, beam_step, initial_beam, rank_beam
from kerasrnn.seq2seq.loss import next_token_log_probs
from kerasrnn.seq2seq.protocol import DecodableModel
from kerasrnn.seq2seq.renamed import deprecated_keywords, renamed_keyword, required
from kerasrnn.seq2seq.specs import (
    UNSET,
    DecodingSpec,
    check_int_in,
    check_max_length,
    spec_with_shortcuts,
)
from kerasrnn.seq2seq.target_order import answers_left_to_right
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID, START_ID
from kerasrnn.types import TensorLike
from kerasrnn.validation import (
    check_bool,
    check_ids,
    check_number,
    check_positive_int,
)

#: How decoding picks y_t: `(t, log_probs (batch, V)) -> tokens (batch,)`.
Choice = Callable[[TensorLike, TensorLike], TensorLike]


#: The seeds `sample_decode` takes: int64, what the stateless noise reads.
SEED_RANGE = (-(2**63), 2**63 - 1)


class DecodeResult(NamedTuple):
    """What every decoder returns, the same fields whatever its arguments.

    Attributes:
        sequences: int32 ids, `(batch, T)` for greedy and sampled
            decoding, `(batch, B, T)` for beam search, best first (T =
            `max_target_length`): the emitted tokens, `<end>` included,
            then padding (never pad or start among the tokens; beam
            search's placeholders are empty).
        log_probs: float32 log p(y | x) of each sequence under the model,
            `(batch,)` or `(batch, B)`.
        scores: What the sequences are ranked by, shaped like `log_probs`:
            equal to `log_probs` for greedy and sampled decoding; for beam
            search `log_probs` divided by the length penalty, plus an
            ensemble's right-to-left rescoring.
        alignments: float32 α, `(batch, T, S)` or `(batch, B, T, S)`,
            with `return_alignments=True`; else None.
    """

    sequences: tf.Tensor
    log_probs: tf.Tensor
    scores: tf.Tensor
    alignments: tf.Tensor | None


def check_decoder_arguments(
    model: DecodableModel, source_ids: TensorLike, return_alignments: bool
) -> tuple[TensorLike, bool]:
    """Refuse what the model cannot decode, before any TensorFlow op runs.

    Args:
        model: Must be a `DecodableModel` (a `Seq2Seq`, a `Seq2SeqEnsemble`).
        source_ids: `(batch, S)` integer ids in [0, source vocabulary), S ≥ 1.
            A tensor inside a `tf.function` is checked for rank and dtype
            only: its values are not known before it runs.
        return_alignments: A bool; True needs a model with attention.

    Returns:
        `(source_ids as an int32 tensor, return_alignments as a bool)`.
    """
    check_decodable(model)
    return_alignments = check_bool("return_alignments", return_alignments)
    if return_alignments and not model.has_attention:
        raise ValueError(
            "Argument `return_alignments=True` needs a model with attention "
            "(for an ensemble: every decoding member attends). Received: "
            "return_alignments=True for a model whose has_attention is False"
        )
    if isinstance(source_ids, (tf.RaggedTensor, tf.SparseTensor)):
        raise ValueError(
            "Argument `source_ids` must be a dense (batch, length) batch of "
            "ids, its rows padded with 0 to one length (`.to_tensor(0)` "
            "makes one from a ragged batch). "
            f"Received: a tf.{type(source_ids).__name__}"
        )
    if tf.is_tensor(source_ids) and tf.is_symbolic_tensor(source_ids):
        if not (source_ids.dtype.is_integer):
            raise ValueError(
                "Argument `source_ids` must hold integer ids. "
                f"Received: dtype {source_ids.dtype.name}"
            )
        if source_ids.shape.rank is not None and source_ids.shape.rank != 2:
            raise ValueError(
                "Argument `source_ids` must be a (batch, length) batch of ids. "
                f"Received: shape {tuple(source_ids.shape)}"
            )
        return tf.cast(source_ids, tf.int32), return_alignments
    try:
        ids = np.asarray(source_ids)
    except ValueError:
        # NumPy refuses rows of different lengths.
        raise ValueError(
            "Argument `source_ids` must have rows of one length: pad them "
            "with 0 (`keras.utils.pad_sequences`; the padding may sit at "
            "either end). Received: rows of lengths "
            f"{[len(row) if hasattr(row, '__len__') else None for row in source_ids]}"
        ) from None
    if ids.ndim != 2 or 0 in ids.shape:
        raise ValueError(
            "Argument `source_ids` must be a (batch, length) batch of ids "
            f"with batch ≥ 1 and length ≥ 1. Received: shape {ids.shape}"
        )
    ids = check_ids("source_ids", ids, model.source_vocabulary_size)
    return tf.constant(ids, tf.int32), return_alignments


def max_target_length_of(
    function: str, max_target_length: int | None, max_length: int | None
) -> int:
    """A decoder's `max_target_length`, passed by that name or by its
    deprecated one, `max_length`, checked.

    Raises:
        TypeError: Neither was passed.
        ValueError: Both were passed, or the value is out of range.
    """
    value = renamed_keyword(
        function, "max_length", max_length, "max_target_length", max_target_length,
        stacklevel=4,
    )
    return check_max_length(required(function, "max_target_length", value))


def decoder_spec(
    function: str,
    decoding: DecodingSpec | None,
    loose: dict[str, Any],
    max_length: int | None,
    required_fields: tuple[str, ...],
) -> DecodingSpec:
    """The `DecodingSpec` a decoder decodes with: `decoding`, or one made of
    the deprecated loose keywords passed instead, with a
    `DeprecationWarning` that names them and the spec to pass.

    The loose form works as it did: each of its keywords is required (the
    spec's other fields at their defaults), and `max_length` stands in for
    `max_target_length`. Errors name the keyword the caller typed.

    Args:
        function: The decoder's name, for the messages.
        decoding: The `decoding` argument.
        loose: Field name -> the value of the loose keyword of that name, or
            None where it was not passed.
        max_length: The `max_length` argument.
        required_fields: The loose keywords the loose form requires.

    Raises:
        TypeError: Neither `decoding` nor the loose keywords were passed,
            or the loose form lacks one of its keywords.
        ValueError: A loose keyword is passed with `decoding`, `max_length`
            with `max_target_length`, or a value is out of range.
    """
    loose = dict(loose)
    typed = {}
    if max_length is not None:
        if loose["max_target_length"] is not None:
            # Refuses the two together, naming both.
            renamed_keyword(
                function, "max_length", max_length, "max_target_length",
                loose["max_target_length"],
            )
        loose["max_target_length"] = max_length
        typed["max_target_length"] = "max_length"
    passed = {field: value for field, value in loose.items() if value is not None}
    if not passed:
        required(function, "decoding", decoding)
    elif decoding is None:
        keywords = [typed.get(field, field) for field in passed]
        fields = ", ".join(f"{field}=..." for field in passed)
        deprecated_keywords(
            function, keywords, f"decoding=kerasrnn.seq2seq.DecodingSpec({fields})",
            stacklevel=4,
        )
        for field in required_fields:
            required(function, field, loose[field])
    return spec_with_shortcuts(
        DecodingSpec,
        "decoding",
        decoding,
        {field: passed.get(field, UNSET) for field in loose},
        typed,
    )


def check_decodable(model: object) -> None:
    """Refuse a `model` that is not a `DecodableModel` (a `Seq2Seq`, a
    `Seq2SeqEnsemble`, or another object with the protocol's members)."""
    if not isinstance(model, DecodableModel):
        raise ValueError(
            "Argument `model` must be a kerasrnn.seq2seq.Seq2Seq or "
            "Seq2SeqEnsemble (a kerasrnn.seq2seq.DecodableModel). "
            f"Received: model={model!r}"
        )


def append_token(sequences: TensorLike, t: TensorLike, tokens: TensorLike) -> TensorLike:
    """Write `tokens` (…,) at position t of `sequences` (…, max_length)."""
    max_length = tf.shape(sequences)[-1]
    return sequences + tf.one_hot(t, max_length, dtype=tf.int32) * tokens[..., None]


def append_alignment(
    alignments: TensorLike, t: TensorLike, alignment: TensorLike
) -> TensorLike:
    """Write `alignment` (…, S) at row t of `alignments` (…, max_length, S)."""
    max_length = tf.shape(alignments)[-2]
    row = tf.one_hot(t, max_length, dtype=alignments.dtype)[:, None]
    return alignments + row * alignment[..., None, :]


def keep_shapes(step: Callable[..., Any]) -> Callable[..., Any]:
    """`step` with its outputs given its inputs' static shapes.

    Gathers and reshapes lose the static batch size that `tf.while_loop`
    requires to stay the same across iterations.
    """

    def step_with_shapes(*loop_vars: Any) -> Any:
        return tf.nest.map_structure(
            lambda new, old: tf.ensure_shape(new, old.shape),
            step(*loop_vars),
            loop_vars,
        )

    return step_with_shapes


def all_padding(source_ids: TensorLike) -> TensorLike:
    """`(batch,)` bool: the sources that hold no token."""
    return tf.reduce_all(tf.equal(source_ids, PAD_ID), axis=-1)


def emittable(vocabulary_size: int) -> TensorLike:
    """`(V,)` bool: the ids a decoder may emit, all but pad and start."""
    ids = tf.range(vocabulary_size)
    return tf.not_equal(ids, PAD_ID) & tf.not_equal(ids, START_ID)


def decode_tokens(
    model: DecodableModel,
    source_ids: TensorLike,
    max_length: int,
    choose: Choice,
    return_alignments: bool,
) -> DecodeResult:
    """The loop greedy and sampling decoding share.

    `choose(t, log_probs (batch, V)) -> tokens (batch,)` picks y_t.
    """
    states, context = model.encode(source_ids)
    batch = tf.shape(source_ids)[0]
    outputs = {
        "sequences": tf.zeros([batch, max_length], tf.int32),
        "log_probs": tf.zeros([batch], tf.float32),
    }
    if return_alignments:
        outputs["alignments"] = tf.zeros(
            [batch, max_length, tf.shape(source_ids)[1]], tf.float32
        )

    def step(
        t: TensorLike,
        previous: TensorLike,
        states: list[TensorLike],
        finished: TensorLike,
        outputs: dict[str, TensorLike],
    ) -> tuple[TensorLike, TensorLike, list[TensorLike], TensorLike, dict[str, TensorLike]]:
        decoded = model.decode_step(previous, states, context)
        log_probs = next_token_log_probs(decoded.logits)
        tokens = choose(t, log_probs)
        tokens = tf.where(finished, PAD_ID, tokens)
        picked = tf.gather(log_probs, tokens, batch_dims=1)
        updated = {
            "sequences": append_token(outputs["sequences"], t, tokens),
            "log_probs": outputs["log_probs"] + tf.where(finished, 0.0, picked),
        }
        if return_alignments:
            alignment = tf.where(finished[:, None], 0.0, decoded.alignment)
            updated["alignments"] = append_alignment(outputs["alignments"], t, alignment)
        finished = finished | tf.equal(tokens, END_ID)
        return t + 1, tokens, decoded.states, finished, updated

    *_, outputs = tf.while_loop(
        lambda t, previous, states, finished, *_: (t < max_length)
        & ~tf.reduce_all(finished),
        keep_shapes(step),
        (
            tf.constant(0),
            tf.fill([batch], START_ID),
            states,
            all_padding(source_ids),
            outputs,
        ),
    )
    sequences, alignments = read_left_to_right(
        model, outputs["sequences"], outputs.get("alignments")
    )
    log_probs = outputs["log_probs"]
    return DecodeResult(sequences, log_probs, log_probs, alignments)


def read_left_to_right(
    model: DecodableModel, sequences: TensorLike, alignments: TensorLike | None
) -> tuple[TensorLike, TensorLike | None]:
    """`(sequences, alignments)`: the answers (and their α rows, or None) of
    a model that decodes right to left, reversed to read left to right; the
    others' unchanged."""
    if not model.reads_right_to_left:
        return sequences, alignments
    return answers_left_to_right(sequences, alignments)


def greedy_choice(t: TensorLike, log_probs: TensorLike) -> TensorLike:
    return tf.argmax(log_probs, axis=-1, output_type=tf.int32)


@tf.function(reduce_retracing=True)
def compiled_greedy(
    model: DecodableModel, source_ids: TensorLike, max_length: int, return_alignments: bool
) -> DecodeResult:
    return decode_tokens(model, source_ids, max_length, greedy_choice, return_alignments)


def greedy_decode(
    model: DecodableModel,
    source_ids: TensorLike,
    max_target_length: int | None = None,
    return_alignments: bool = False,
    *,
    decoding: DecodingSpec | None = None,
    max_length: int | None = None,
) -> DecodeResult:
    """y_t = argmax_y p(y | y_<t, c) at every step.

    Args:
        model: A `DecodableModel`: a `Seq2Seq` or `Seq2SeqEnsemble`.
        source_ids: `(batch, S)` int ids padded with 0 (anywhere: see the
            module doc); a dense array, not a ragged one, read whole.
        max_target_length: Deprecated: pass `decoding` instead. It works
            until the next release, with a `DeprecationWarning`.
        return_alignments: Also return α (attention models only).
        decoding: A `DecodingSpec`, required: its `max_target_length` T
            (in [1, `MAX_DECODE_LENGTH`], 65536) is the most tokens emitted
            per example. Its other fields are beam search's and the
            exporters': greedy decoding is a beam of one, and the source is
            read whole.
        max_length: The older deprecated name of `max_target_length`.

    Returns:
        A `DecodeResult`: sequences `(batch, T)` int32, log_probs
        `(batch,)` float32, scores equal to log_probs, and alignments
        `(batch, T, S)` with `return_alignments` (else None).

    Raises:
        TypeError: Neither `decoding` nor `max_target_length` is passed.
        ValueError: An argument is out of range, or a deprecated keyword is
            passed with `decoding` (each named as the caller typed it).

    Example:

    >>> result = greedy_decode(
    ...     model, source_ids, decoding=DecodingSpec(max_target_length=20)
    ... )  # doctest: +SKIP
    """
    spec = decoder_spec(
        "greedy_decode",
        decoding,
        {"max_target_length": max_target_length},
        max_length,
        ("max_target_length",),
    )
    source_ids, return_alignments = check_decoder_arguments(
        model, source_ids, return_alignments
    )
    return compiled_greedy(model, source_ids, spec.max_target_length, return_alignments)


@tf.function(reduce_retracing=True)
def compiled_sample(
    model: DecodableModel,
    source_ids: TensorLike,
    max_length: int,
    temperature: TensorLike,
    top_k: int | None,
    seed: TensorLike,
    return_alignments: bool,
) -> DecodeResult:
    # All noise is drawn before the loop: a seed computed inside a
    # tf.while_loop gives different streams with and without XLA.
    uniform = tf.random.stateless_uniform(
        [max_length, tf.shape(source_ids)[0], model.target_vocabulary_size],
        seed=tf.stack([seed, tf.constant(0, tf.int64)]), minval=1e-7, maxval=1.0,
        alg="philox",
    )
    gumbel = tf.cast(-tf.math.log(-tf.math.log(uniform)), tf.float64)
    allowed = emittable(model.target_vocabulary_size)[None]
    never = tf.constant(-np.inf, tf.float64)

    def choose(t: TensorLike, log_probs: TensorLike) -> TensorLike:
        kept = tf.broadcast_to(allowed, tf.shape(log_probs))
        if top_k is not None:
            # Temperature does not change the order: the k most likely
            # tokens are the same before and after it.
            kth = tf.math.top_k(
                tf.where(kept, log_probs, -np.inf), k=top_k
            ).values[:, -1:]
            kept &= log_probs >= kth
        best = tf.reduce_max(tf.where(kept, log_probs, -np.inf), axis=-1, keepdims=True)
        # (log p − max log p) / T is ≤ 0, and 0 for the most likely token:
        # in float64 no finite T > 0 makes it NaN, and pad and start, left
        # out rather than scaled, can never come back within reach.
        scaled = tf.cast(log_probs - best, tf.float64) / temperature
        scaled = tf.where(kept, scaled, never)
        return tf.argmax(scaled + gumbel[t], axis=-1, output_type=tf.int32)

    return decode_tokens(model, source_ids, max_length, choose, return_alignments)


def sample_decode(
    model: DecodableModel,
    source_ids: TensorLike,
    max_target_length: int | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    return_alignments: bool = False,
    *,
    max_length: int | None = None,
) -> DecodeResult:
    """Draw y_t from softmax(logits / temperature), optionally among the top k.

    Sampling uses the Gumbel-max trick with stateless Philox noise: the same
    `seed` and inputs give the same samples, with or without XLA. The draw
    is among the tokens a decoder may emit (never pad or start), computed in
    float64 from log p − max log p, so that every finite temperature gives
    the distribution it defines: a tiny one is greedy decoding (ties
    aside), a huge one is uniform over the tokens allowed.

    Args:
        model: A `DecodableModel`: a `Seq2Seq` or `Seq2SeqEnsemble`.
        source_ids: `(batch, S)` int ids padded with 0 (anywhere: see the
            module doc); a dense array, not a ragged one.
        max_target_length: Int T in [1, `MAX_DECODE_LENGTH`] (65536), the
            most tokens emitted per example; the noise, `(T, batch, V)`
            float32, is drawn before the first step. Required.
        temperature: Any finite float > 0; < 1 sharpens, > 1 flattens.
        top_k: None (all tokens) or an int in [1, V]: sample among the k most
            likely tokens only (ties at the k-th value are kept; pad and
            start never count among them).
        seed: Int seed of the noise, in [-2**63, 2**63 - 1] (int64).
        return_alignments: Also return α (attention models only).
        max_length: The deprecated name of `max_target_length`: it works
            until the next release, with a `DeprecationWarning`.

    Returns:
        A `DecodeResult`: sequences `(batch, T)` int32, log_probs
        `(batch,)` float32, scores equal to log_probs, and alignments
        `(batch, T, S)` with `return_alignments` (else None); the
        log-probabilities are the model's (temperature 1, no top-k).

    Raises:
        ValueError: An argument is out of range, or `max_length` is passed
            with `max_target_length`.
    """
    length = max_target_length_of("sample_decode", max_target_length, max_length)
    temperature = check_number("temperature", temperature, low=0, low_open=True)
    source_ids, return_alignments = check_decoder_arguments(
        model, source_ids, return_alignments
    )
    if top_k is not None:
        top_k = check_positive_int("top_k", top_k)
        if top_k > model.target_vocabulary_size:
            raise ValueError(
                "Argument `top_k` must be at most the target vocabulary size, "
                f"{model.target_vocabulary_size}. Received: top_k={top_k!r}"
            )
    seed = check_int_in("seed", seed, *SEED_RANGE)
    # TensorFlow flushes subnormal floats to zero. Below float64's smallest
    # normal number a temperature samples as it does at that number: any
    # nonzero log p − max log p (≥ 1.4e-45 in size) becomes ≤ −6e262 either
    # way, out of the noise's reach.
    temperature = max(temperature, sys.float_info.min)
    # Tensors, not Python numbers: one trace serves every seed and temperature.
    return compiled_sample(
        model, source_ids, length, tf.constant(temperature, tf.float64), top_k,
        tf.constant(seed, tf.int64), return_alignments,
    )


@tf.function(reduce_retracing=True)
def compiled_beam_search(
    model: DecodableModel,
    source_ids: TensorLike,
    width: int,
    max_length: int,
    alpha: float,
    return_alignments: bool,
) -> DecodeResult:
    """`beam_step` (`kerasrnn.seq2seq.beam`) in a `tf.while_loop`, which
    reorders whole hypotheses at every step and stops once every one ended."""
    state, context = initial_beam(model, source_ids, width, all_padding(source_ids))
    batch = tf.shape(source_ids)[0]
    sequences = tf.zeros([batch, width, max_length], tf.int32)
    alignments: dict[str, TensorLike] = {}
    if return_alignments:
        # Reordering every hypothesis's whole α history at every step would
        # move (batch, B, max_length, S) floats per step. Instead step t's α
        # is written once, by the beam that computed it, into `history`
        # (max_length, batch, B, S), and `slots` (batch, B, max_length) —
        # reordered like the sequences, a few ints — records that beam, each
        # hypothesis's ancestor before step t; one gather after the loop
        # reads the histories.
        alignments["slots"] = tf.zeros([batch, width, max_length], tf.int32)
        alignments["history"] = tf.zeros(
            [max_length, batch, width, tf.shape(source_ids)[1]], tf.float32
        )

    def step(
        t: TensorLike,
        state: BeamState,
        sequences: TensorLike,
        alignments: dict[str, TensorLike],
    ) -> tuple[TensorLike, BeamState, TensorLike, dict[str, TensorLike]]:
        stepped = beam_step(model, state, context, alpha, return_alignments)

        def reorder(tensor: TensorLike) -> TensorLike:
            return tf.gather(tensor, stepped.parents, batch_dims=1)

        sequences = append_token(
            reorder(sequences), t, tf.reshape(stepped.state.tokens, [batch, width])
        )
        if stepped.alignment is not None:
            # Step t's α, by the beam that computed it: each hypothesis's
            # parent, which `slots` records.
            alignments = {
                "history": tf.tensor_scatter_nd_update(
                    alignments["history"], [[t]],
                    tf.reshape(stepped.alignment, [1, batch, width, -1]),
                ),
                "slots": append_token(reorder(alignments["slots"]), t, stepped.parents),
            }
        return t + 1, stepped.state, sequences, alignments

    _, state, sequences, alignments = tf.while_loop(
        lambda t, state, *_: (t < max_length)
        & any_live(state, model.target_vocabulary_size),
        keep_shapes(step),
        (tf.constant(0), state, sequences, alignments),
    )
    history = None
    if return_alignments:
        # Steps the loop did not run have zero α in every beam.
        history = tf.gather(
            alignments["history"], tf.transpose(alignments["slots"], [2, 0, 1]),
            batch_dims=2,
        )
        history = tf.transpose(history, [1, 2, 0, 3])
    sequences, log_probs, scores, history = rank_beam(
        model, source_ids, sequences, state, history, alpha, unrolled=False
    )
    sequences, history = read_left_to_right(model, sequences, history)
    return DecodeResult(sequences, log_probs, scores, history)


def beam_search_decode(
    model: DecodableModel,
    source_ids: TensorLike,
    beam_width: int | None = None,
    max_target_length: int | None = None,
    length_penalty: float | None = None,
    return_alignments: bool = False,
    *,
    decoding: DecodingSpec | None = None,
    max_length: int | None = None,
) -> DecodeResult:
    """Beam search: keep the `beam_width` best hypotheses at every step.

    At step t every live hypothesis is extended by every token and every
    ended hypothesis is carried over unchanged; the B (`beam_width`)
    candidates with the best score log p(y_1 … y_L | x) / lp(L), lp(L) =
    ((5 + L)/6)^α and L the hypothesis length with `<end>`, survive. With
    α = 0 the score is the log-probability, and B = 1 is greedy decoding.
    The decoder states — the attentional vector of Luong's input feeding
    included — are reordered with the hypotheses at every step.

    Where fewer than B hypotheses exist (a beam wider than the vocabulary
    allows in `max_target_length` steps), the last beams are placeholders:
    empty sequences whose log-probability and score are −1e9
    (`FORBIDDEN_LOG_PROB`), ranked last.

    Args:
        model: A `DecodableModel`: a `Seq2Seq` or `Seq2SeqEnsemble`.
        source_ids: `(batch, S)` int ids padded with 0 (anywhere: see the
            module doc); a dense array, not a ragged one, read whole.
        beam_width: Deprecated: pass `decoding` instead.
        max_target_length: Deprecated: pass `decoding` instead.
        length_penalty: Deprecated: pass `decoding` instead. The three
            work until the next release, with a `DeprecationWarning`
            (`beam_width` and `max_target_length` required, α 0 unless
            passed).
        return_alignments: Also return α (attention models only).
        decoding: A `DecodingSpec`, required: its `beam_width` B (a
            positive int), `max_target_length` T (in [1,
            `MAX_DECODE_LENGTH`], 65536: the most tokens per hypothesis)
            and `length_penalty` α (in [0, `MAX_LENGTH_PENALTY`], 8:
            larger favours longer hypotheses; the bound keeps lp(L) within
            float32 for every allowed L). Its `max_source_length` is the
            exporters': the source is read whole.
        max_length: The older deprecated name of `max_target_length`.

    Returns:
        A `DecodeResult`, best first by score: sequences `(batch, B, T)`
        int32, log_probs and scores `(batch, B)` float32, and alignments
        `(batch, B, T, S)` with `return_alignments` (else None). For an
        ensemble with right-to-left rescorers, `log_probs` stay the decoding
        members' and `scores` add λ times the rescorers' log-probability.

    Raises:
        TypeError: Neither `decoding` nor the deprecated keywords are
            passed, or only some of `beam_width` and `max_target_length`.
        ValueError: An argument is out of range, or a deprecated keyword is
            passed with `decoding` (each named as the caller typed it).

    Example:

    >>> result = beam_search_decode(
    ...     model, source_ids, decoding=DecodingSpec(beam_width=4, max_target_length=20)
    ... )  # doctest: +SKIP
    """
    spec = decoder_spec(
        "beam_search_decode",
        decoding,
        {
            "beam_width": beam_width,
            "max_target_length": max_target_length,
            "length_penalty": length_penalty,
        },
        max_length,
        ("beam_width", "max_target_length"),
    )
    source_ids, return_alignments = check_decoder_arguments(
        model, source_ids, return_alignments
    )
    return compiled_beam_search(
        model, source_ids, spec.beam_width, spec.max_target_length, spec.length_penalty,
        return_alignments,
    )
