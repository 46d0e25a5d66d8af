"""Export a trained `Seq2Seq` (or `Seq2SeqEnsemble`) as a LiteRT model:
ids in, the beam search's best answer out, the encoder and the beam search
inside one `.tflite` file of builtin ops, and beside it `vocabulary.json`,
which says how text becomes ids and back. A client needs the LiteRT
interpreter (`ai_edge_litert`) and NumPy, not TensorFlow.

The contract, for a client in any language:

- Signature `serving_default`, one input, `source_ids`: int32
  `[batch, max_source_length]`, each row a source's token ids followed by
  `pad_id` up to `max_source_length`. The file holds batch 1;
  `resize_tensor_input` (then `allocate_tensors`) sets any other batch.
  Ids outside `[0, len(source_tokens))` read as `unknown_id`, never an
  error. A source longer than `max_source_length` is the client's to
  refuse (or cut): the file cannot see it.
- Outputs:
  - `target_ids`, int32 `[batch, max_target_length]`: the beam's best
    hypothesis, then `end_id` (if it ended within `max_target_length`
    tokens), then `pad_id`;
  - `scores`, float32 `[batch]`: what the beam ranked it by, log p(y | x)
    (`eq:rnn-seq2seq`, `end_id` included) divided by the length penalty
    ((5 + L) / 6)^α, plus an ensemble's right-to-left rescoring;
  - for attention models only, `alignments`, float32 `[batch,
    max_target_length, max_source_length]`: row t is the attention α_t
    with which token t of `target_ids` was emitted (the `end_id` row
    included), zero on padding columns and after the answer.

  A source that is all padding gets the empty answer: only `pad_id`, score 0.
- Buckets (optional): further signatures `source_N`, the same input and
  outputs with `max_source_length` N and a `max_target_length` of their
  own, for sources of at most N tokens. The encoder and the beam search
  are unrolled over those lengths, so short sources cost less; a client
  calls the first bucket (shortest first) whose N holds the source. A
  bucket's shorter `max_target_length` cuts a longer answer there.
- `vocabulary.json`, in the same directory:
  - `signature`, `inputs`, `outputs`: the names above;
  - `source_tokens`, `target_tokens`: token strings, a token's index in
    its list is its id;
  - `pad_id`, `start_id`, `end_id`, `unknown_id`: the reserved ids, 0 to 3;
  - `max_source_length`, `max_target_length`: `serving_default`'s lengths;
  - `buckets`: every signature, shortest source first, as `signature`,
    `max_source_length`, `max_target_length` (`serving_default` last);
  - `beam_width`, `length_penalty`: the beam search inside;
  - `source_text`: `strip`, `lowercase` (booleans), `split`
    (`"characters"`: one token per Unicode character; `"whitespace"`: one
    per word) and `unknown_tokens` (`"drop"`);
  - `target_text`: `separator`, the string that joins the target tokens;
  - `decoding` and `text`: the `DecodingSpec` and `TextSpec` the file was
    exported with, their fields as they are (`kerasrnn.seq2seq.specs`; the
    keys above say the same for clients written before them), as the
    SavedModel of `export_serving` records them.

  Text to ids: strip surrounding whitespace, lower-case if `lowercase`,
  split, drop the tokens that `source_tokens` lacks, look up the rest,
  pad with `pad_id`. Ids to text: the `target_tokens` of the ids before
  the first `end_id`, `pad_id` left out, joined by `separator` (for
  grapheme-to-phoneme: letters in, one token per character; phonemes out,
  joined by a space). These are the steps `export_serving`'s SavedModel
  takes inside its graph, so both give the same answers.

Why the graph has this shape: the encoder's recurrences step their cells
through an unrolled loop of `max_source_length` steps
(`kerasrnn.export.rnn_loop`'s, which also masks the backward direction
right) and the beam search is a Python loop of `max_target_length` steps,
so the file holds no `WHILE` loop and no tensor list. Measured against the
same graphs with `WHILE` loops, the unrolled file is faster in large
batches and slower at batch 1 (Deploying's Speed section gives the
figures). An unrolled loop cannot stop early: every call runs all
`max_target_length` steps (an ended hypothesis only appends padding, so the
answer is the one `beam_search_decode` stops at). Every reshape keeps the
batch as −1, so resizing the input resizes the whole graph.

The beam search is `beam_search_decode`'s, the same code
(`kerasrnn.seq2seq.beam`): `initial_beam`, then `beam_step` — candidates,
scores with the length penalty, top-k, the placeholders that fill a beam
wider than the hypotheses that exist, and the decoder states reordered by
one gather each, by rows — then
`rank_beam`, which asks the model to `rescore` (an ensemble's right-to-left
members; `unrolled=True` steps them in a Python loop too) and ranks.
`beam_search_decode` drives the step with a `tf.while_loop`, this module
(`unrolled_beam_search`) with the Python loop, and only their bookkeeping
differs: instead of reordering every hypothesis's tokens and α at every
step, each step's tokens, α and parent rows are kept as they are, and
one walk back from the last step reads the whole beam, of which the file
returns the best.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from kerasrnn.export.converter import (
    check_litert_path,
    check_quantize,
    convert_concrete_functions,
    write_atomically,
)
from kerasrnn.export.rnn_loop import (
    traceable_for_litert,
)
from kerasrnn.seq2seq.beam import BeamStep, beam_step, initial_beam, rank_beam
from kerasrnn.seq2seq.decoding import (
    DecodeResult,
    all_padding,
    check_decodable,
    read_left_to_right,
)
from kerasrnn.seq2seq.protocol import DecodableModel
from kerasrnn.seq2seq.specs import (
    UNSET,
    DecodingSpec,
    TextSpec,
    Unset,
    check_beam_width_fits,
    spec_with_shortcuts,
)
from kerasrnn.seq2seq.vocabulary import (
    END_ID,
    PAD_ID,
    START_ID,
    UNKNOWN_ID,
    Vocabulary,
    check_vocabularies,
)
from kerasrnn.types import TensorLike
from kerasrnn.validation import check_positive_int

#: The signature of the full lengths.
SIGNATURE = "serving_default"

#: The file written beside the `.tflite`.
VOCABULARY_FILE = "vocabulary.json"


def bucket_signature(source_length: int) -> str:
    """The signature name of the bucket of sources of at most `source_length`
    tokens."""
    return f"source_{source_length}"


def export_litert(
    model: DecodableModel,
    path: str | os.PathLike[str],
    source_vocabulary: Vocabulary,
    target_vocabulary: Vocabulary,
    *,
    decoding: DecodingSpec | None = None,
    text: TextSpec | None = None,
    buckets: Sequence[tuple[int, int]] = (),
    quantize: str | None = None,
    beam_width: int | Unset = UNSET,
    length_penalty: float | Unset = UNSET,
    max_source_length: int | Unset = UNSET,
    max_target_length: int | Unset = UNSET,
    split: str | Unset = UNSET,
    lowercase: bool | Unset = UNSET,
    separator: str | Unset = UNSET,
) -> dict[str, Any]:
    """Write `model` with its beam search as a LiteRT file at `path`, and
    `vocabulary.json` beside it (see the module doc for the contract).

    The decoding and the text handling are the specs `decoding` and `text`,
    which `export_serving` takes too, with the same defaults. Each field can
    also be passed alone as a shortcut argument of its name (the spec is
    then made of the shortcuts passed, the other fields at its defaults);
    a shortcut passed with its spec is refused. The file unrolls its loops
    over `max_source_length` and `max_target_length`: pass the bounds the
    task needs rather than the defaults (64 each), which make a large file
    that converts slowly.

    Args:
        model: A trained `Seq2Seq` or `Seq2SeqEnsemble` (attention and
            right-to-left rescoring included).
        path: `str` or `os.PathLike`, the `.tflite` file to write; its
            directory must exist.
        source_vocabulary: The source `Vocabulary` the model was trained
            with.
        target_vocabulary: The target `Vocabulary` the model was trained
            with.
        decoding: A `DecodingSpec`, or None: `DecodingSpec()` with the
            shortcuts passed. Its `max_source_length` S is the source
            tokens `serving_default` reads per row, its `max_target_length`
            T the most target tokens it decodes, its `beam_width` B at most
            the target vocabulary size.
        text: A `TextSpec`, or None: `TextSpec()` with the shortcuts
            passed. The file reads ids, not text: the spec is recorded in
            `vocabulary.json` for its clients.
        buckets: `(source_length, target_length)` pairs, each a further
            signature `source_{source_length}` for sources of at most
            `source_length` < S tokens, decoding at most `target_length` ≤ T
            tokens: fewer unrolled steps for short sources.
        quantize: None (float32), `"float16"` or `"dynamic_int8"`
            (`kerasrnn.export.converter.QUANTIZE_OPTIONS`).
        beam_width: A shortcut for `decoding`'s field.
        length_penalty: A shortcut for `decoding`'s field.
        max_source_length: A shortcut for `decoding`'s field.
        max_target_length: A shortcut for `decoding`'s field.
        split: A shortcut for `text`'s field.
        lowercase: A shortcut for `text`'s field.
        separator: A shortcut for `text`'s field.

    Returns:
        The contents written to `vocabulary.json`, a dict.

    Raises:
        ValueError: An argument is out of range (named, with its value and
            what is allowed), the beam is wider than the target vocabulary,
            or a shortcut is passed with its spec, before any conversion; or
            the model holds an op that LiteRT has no builtin for. A failed
            export leaves the files at `path` and beside it as they were.
        TypeError: `path` is not a path.
    """
    check_decodable(model)
    check_vocabularies(
        source_vocabulary,
        target_vocabulary,
        model.source_vocabulary_size,
        model.target_vocabulary_size,
    )
    decoding = spec_with_shortcuts(
        DecodingSpec,
        "decoding",
        decoding,
        {
            "beam_width": beam_width,
            "length_penalty": length_penalty,
            "max_source_length": max_source_length,
            "max_target_length": max_target_length,
        },
    )
    check_beam_width_fits(decoding.beam_width, model.target_vocabulary_size)
    lengths = check_buckets(buckets, decoding.max_source_length, decoding.max_target_length)
    lengths[SIGNATURE] = (decoding.max_source_length, decoding.max_target_length)
    text = spec_with_shortcuts(
        TextSpec, "text", text, {"split": split, "lowercase": lowercase, "separator": separator}
    )
    quantize = check_quantize(quantize)
    path = check_litert_path(path)
    vocabulary_path = path.parent / VOCABULARY_FILE
    if vocabulary_path.is_dir():
        raise ValueError(
            f"Argument `path` must be in a directory where `{VOCABULARY_FILE}` "
            f"can be written. Received: path={str(path)!r}, beside the directory "
            f"{str(vocabulary_path)!r}"
        )

    with_alignments = model.has_attention
    functions = {}
    for name, (source_length, target_length) in lengths.items():
        spec = tf.TensorSpec([None, source_length], tf.int32, name="source_ids")
        serve = beam_search_graph(
            model, decoding.beam_width, target_length, decoding.length_penalty, with_alignments
        )
        # Every recurrence unrolled: the encoder over the source length, a
        # rescorer's teacher-forced decoder over the target's.
        with traceable_for_litert(model, source_length):
            functions[name] = tf.function(
                serve, input_signature=[spec], autograph=False
            ).get_concrete_function()
    content = convert_concrete_functions(functions, quantize=quantize, model=model)
    vocabulary = {
        "signature": SIGNATURE,
        "inputs": ["source_ids"],
        "outputs": ["target_ids", "scores"] + (["alignments"] if with_alignments else []),
        "source_tokens": source_vocabulary.id_to_token(),
        "target_tokens": target_vocabulary.id_to_token(),
        "pad_id": PAD_ID,
        "start_id": START_ID,
        "end_id": END_ID,
        "unknown_id": UNKNOWN_ID,
        "max_source_length": decoding.max_source_length,
        "max_target_length": decoding.max_target_length,
        "buckets": [
            {"signature": name, "max_source_length": source, "max_target_length": target}
            for name, (source, target) in lengths.items()
        ],
        "beam_width": decoding.beam_width,
        "length_penalty": decoding.length_penalty,
        "source_text": {
            "strip": True,
            "lowercase": text.lowercase,
            "split": text.split,
            "unknown_tokens": "drop",
        },
        "target_text": {"separator": text.separator},
        "decoding": decoding.to_json(),
        "text": text.to_json(),
    }
    write_atomically(
        vocabulary_path,
        (json.dumps(vocabulary, indent=1, ensure_ascii=False) + "\n").encode(),
    )
    write_atomically(path, content)
    return vocabulary


def check_buckets(
    buckets: object, max_source_length: int, max_target_length: int
) -> dict[str, tuple[int, int]]:
    """`buckets` as `{signature: (source_length, target_length)}`, shortest
    source first, if every pair lies inside the full lengths, else raise."""
    pairs = []
    if isinstance(buckets, (list, tuple)):
        for pair in buckets:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                break
            try:
                source_length = check_positive_int("source_length", pair[0])
                target_length = check_positive_int("target_length", pair[1])
            except ValueError:
                break
            if source_length >= max_source_length or target_length > max_target_length:
                break
            pairs.append((source_length, target_length))
    sources = [source for source, _ in pairs]
    if (
        not isinstance(buckets, (list, tuple))
        or len(pairs) != len(buckets)
        or len(set(sources)) != len(sources)
    ):
        raise ValueError(
            "Argument `buckets` must be a list of (source_length, "
            "target_length) pairs of positive ints, with distinct "
            f"source_length < max_source_length={max_source_length} and "
            f"target_length <= max_target_length={max_target_length}. "
            f"Received: buckets={buckets!r}"
        )
    return {bucket_signature(source): (source, target) for source, target in sorted(pairs)}


def beam_search_graph(
    model: DecodableModel, width: int, max_length: int, alpha: float, with_alignments: bool
) -> Callable[[TensorLike], dict[str, TensorLike]]:
    """The function one signature traces: `source_ids` `(batch, S)` int32,
    right-padded with `PAD_ID` (ids outside the source vocabulary read as
    `UNKNOWN_ID`) -> the best hypothesis of `unrolled_beam_search` with B =
    `width`, T = `max_length` and α = `alpha`, as a dict: `target_ids`
    `(batch, T)` int32, `scores` `(batch,)` float32 and, with
    `with_alignments`, `alignments` `(batch, T, S)` float32."""

    def serve(source_ids: TensorLike) -> dict[str, TensorLike]:
        source_ids = tf.where(
            (source_ids >= 0) & (source_ids < model.source_vocabulary_size),
            source_ids,
            UNKNOWN_ID,
        )
        beam = unrolled_beam_search(
            model, source_ids, width, max_length, alpha, with_alignments
        )
        best = {"target_ids": beam.sequences[:, 0], "scores": beam.scores[:, 0]}
        if beam.alignments is not None:
            best["alignments"] = beam.alignments[:, 0]
        return best

    return serve


def unrolled_beam_search(
    model: DecodableModel,
    source_ids: TensorLike,
    width: int,
    max_length: int,
    alpha: float,
    with_alignments: bool,
) -> DecodeResult:
    """`beam_step` (`kerasrnn.seq2seq.beam`) in a Python loop of
    `max_length` steps: the whole beam, as `beam_search_decode` returns it.

    Each step's tokens, parent rows and α are kept as they are; one walk
    back from the last step finds every hypothesis's ancestors, and one
    gather reads its tokens (one more its α). That takes fewer operators
    than reordering whole hypotheses at every step.

    Args:
        model: A `DecodableModel`.
        source_ids: `(batch, S)` int32 ids in the source vocabulary.
        width: B.
        max_length: T, the steps unrolled.
        alpha: The length penalty α.
        with_alignments: Whether to return α (attention models).

    Returns:
        A `DecodeResult`, best first: sequences `(batch, B, T)` int32,
        log_probs and scores `(batch, B)` float32, and alignments `(batch,
        B, T, S)` with `with_alignments` (else None).
    """
    state, context = initial_beam(model, source_ids, width, all_padding(source_ids))
    steps = []
    for _ in range(max_length):
        stepped = beam_step(model, state, context, alpha, with_alignments)
        steps.append(stepped)
        state = stepped.state
    by_step, every = walk_back(steps, with_alignments)
    sequences = tf.reshape(tf.transpose(by_step), [-1, width, max_length])
    alignments = None
    if every is not None:
        # (T, batch·B, S) -> (batch, B, T, S).
        alignments = tf.reshape(
            tf.transpose(every, [1, 0, 2]), [-1, width, max_length, every.shape[-1]]
        )
    sequences, log_probs, scores, alignments = rank_beam(
        model, source_ids, sequences, state, alignments, alpha, unrolled=True
    )
    sequences, alignments = read_left_to_right(model, sequences, alignments)
    return DecodeResult(sequences, log_probs, scores, alignments)


def walk_back(
    steps: list[BeamStep], with_alignments: bool
) -> tuple[TensorLike, TensorLike | None]:
    """Every final hypothesis's tokens and α, step by step: `(T, batch·B)`
    int32 and `(T, batch·B, S)` float32 (None without alignments), row r of
    step t from the ancestor of the hypothesis in row r.

    The ancestors are found by one gather per step, walking back from the
    last; one gather then reads every step's tokens (one more its α). With
    B = 1 each hypothesis is its own ancestor, and the steps are read as
    they are.
    """
    tokens = [stepped.state.tokens for stepped in steps]
    alignments = [stepped.alignment for stepped in steps] if with_alignments else None
    if steps[0].parents.shape[1] == 1:
        return tf.stack(tokens), None if alignments is None else tf.stack(alignments)
    # `ancestors[t]` holds, for each hypothesis, its ancestor's row in the
    # state after step t (the last step's are the hypotheses themselves),
    # `computed_by[t]` the row of the state before step t that computed its α_t.
    ancestors: list[TensorLike] = []
    computed_by = [steps[-1].rows]
    for stepped in reversed(steps[:-1]):
        ancestors.insert(0, computed_by[0])
        computed_by.insert(0, tf.gather(stepped.rows, computed_by[0]))
    if ancestors:
        earlier = tf.gather(tf.stack(tokens[:-1]), tf.stack(ancestors), batch_dims=1)
        by_step = tf.concat([earlier, tokens[-1][None]], axis=0)
    else:
        by_step = tokens[-1][None]
    if alignments is None:
        return by_step, None
    return by_step, tf.gather(tf.stack(alignments), tf.stack(computed_by), batch_dims=1)
