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
  - for attention models exported with `alignments=True` (the default)
    only, `alignments`, float32 `[batch,
    max_target_length, max_source_length]`: row t is the attention α_t
    with which token t of `target_ids` was emitted (the `end_id` row
    included), zero on padding columns and after the answer.

  A source that is all padding gets the empty answer: only `pad_id`, score 0.
- Buckets (optional): further signatures `source_N`, the same input and
  outputs with `max_source_length` N and a `max_target_length` of their
  own, for sources of at most N tokens. The encoder is unrolled over N
  steps, so short sources cost less; a client calls the first bucket
  (shortest first) whose N holds the source. A bucket's shorter
  `max_target_length` cuts a longer answer there.
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
right): no `WHILE` loop and no tensor list there, where an encoder loop
measured slower in large batches. The beam search is one `WHILE` loop of
builtin operators that stops once every hypothesis has ended, as
`beam_search_decode` does, so a call decodes as many steps as its longest
answer needs, at most `max_target_length`; its body is one step's
operators, held once in the file. Against the same search unrolled over
all `max_target_length` steps, the loop gave the same answers and ran
faster at batch 1 and level in large batches on the default g2p model
(the documentation's Design notes give the figures). Every reshape keeps the
batch as −1, so resizing the input resizes the whole graph, the loop's
body included.

The beam search is `beam_search_decode`'s, the same code
(`kerasrnn.seq2seq.beam`): `initial_beam`, then `beam_step` — candidates,
scores with the length penalty, top-k, the placeholders that fill a beam
wider than the hypotheses that exist, and the decoder states reordered by
one gather each, by rows — then `rank_beam`, which asks the model to
`rescore` (an ensemble's right-to-left members; `unrolled=True` steps them
in a Python loop) and ranks. `beam_search_decode` and this module
(`looped_beam_search`) both drive the step with a `tf.while_loop` under
the same condition; only their bookkeeping differs: here each
hypothesis's tokens and α are reordered whole at every step, in tensors
of fixed shape, which at a file's lengths costs fewer operators than
`beam_search_decode`'s slots.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from kerasrnn.allowed import MAX_LITERT_UNROLLED_LENGTH
from kerasrnn.export.converter import (
    check_litert_path,
    check_quantize,
    convert_concrete_functions,
    write_atomically,
)
from kerasrnn.export.rnn_loop import (
    traceable_for_litert,
)
from kerasrnn.seq2seq.beam import BeamState, any_live, beam_step, initial_beam, rank_beam
from kerasrnn.seq2seq.decoding import (
    DecodeResult,
    all_padding,
    check_decodable,
    keep_shapes,
    read_left_to_right,
)
from kerasrnn.seq2seq.ensemble import Seq2SeqEnsemble
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
from kerasrnn.validation import check_bool, check_positive_int

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
    alignments: bool = True,
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
    a shortcut passed with its spec is refused. The file unrolls its
    encoder over `max_source_length` (and an ensemble's right-to-left
    rescorers over `max_target_length`): pass the bounds the task needs
    rather than the defaults (64 each), which make a large file that
    converts slowly.

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
            tokens `serving_default` reads per row, its
            `max_target_length` T the most target tokens it decodes, its
            `beam_width` B at most the target vocabulary size. S is at
            most `MAX_LITERT_UNROLLED_LENGTH` (128), and so is T for an
            ensemble whose right-to-left members rescore: the file unrolls
            the encoder over S and the rescorers over T, and the
            conversion's time grows faster than the steps (about four
            times per doubling), so a longer one would not convert in
            useful time.
        text: A `TextSpec`, or None: `TextSpec()` with the shortcuts
            passed. The file reads ids, not text: the spec is recorded in
            `vocabulary.json` for its clients.
        buckets: `(source_length, target_length)` pairs, each a further
            signature `source_{source_length}` for sources of at most
            `source_length` < S tokens, decoding at most `target_length` ≤ T
            tokens: fewer unrolled steps for short sources.
        quantize: None (float32), `"float16"` or `"dynamic_int8"`
            (`kerasrnn.export.converter.QUANTIZE_OPTIONS`).
        alignments: Whether the signatures of an attention model give
            `alignments`, the α of each answer token. Without them the beam
            search carries no α from step to step: fewer operators per
            step, the same `target_ids` and `scores`. Models without attention
            give none either way.
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
            what is allowed; a length above `MAX_LITERT_UNROLLED_LENGTH`
            included), the beam is wider than the
            target vocabulary, or a shortcut is passed with its spec, before
            any conversion; or
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
    check_unrollable(
        model,
        decoding,
        {
            field: field
            for field, value in (
                ("max_source_length", max_source_length),
                ("max_target_length", max_target_length),
            )
            if value is not UNSET
        },
    )
    lengths = check_buckets(buckets, decoding.max_source_length, decoding.max_target_length)
    lengths[SIGNATURE] = (decoding.max_source_length, decoding.max_target_length)
    text = spec_with_shortcuts(
        TextSpec, "text", text, {"split": split, "lowercase": lowercase, "separator": separator}
    )
    quantize = check_quantize(quantize)
    alignments = check_bool("alignments", alignments)
    path = check_litert_path(path)
    vocabulary_path = path.parent / VOCABULARY_FILE
    if vocabulary_path.is_dir():
        raise ValueError(
            f"Argument `path` must be in a directory where `{VOCABULARY_FILE}` "
            f"can be written. Received: path={str(path)!r}, beside the directory "
            f"{str(vocabulary_path)!r}"
        )

    with_alignments = model.has_attention and alignments
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


def check_unrollable(
    model: DecodableModel, decoding: DecodingSpec, typed: dict[str, str]
) -> None:
    """Refuse, before any work, a length the file would unroll past
    `MAX_LITERT_UNROLLED_LENGTH`: `max_source_length` (the encoder's
    steps), and `max_target_length` for a model whose right-to-left members
    rescore (their decoder's steps); the conversion would not finish in
    useful time.

    Args:
        model: The model exported.
        decoding: The export's `DecodingSpec`.
        typed: Field name -> the keyword that set it; a field missing here
            came with `decoding` (the message then names
            `decoding.<field>`).

    Raises:
        ValueError: A length is above the bound, named as the caller set
            it, with the reason.
    """
    unrolled = {"max_source_length": "its encoder over every source step"}
    if isinstance(model, Seq2SeqEnsemble) and model.rescorers():
        unrolled["max_target_length"] = (
            "its right-to-left rescorers' decoder over every target step"
        )
    for field, what in unrolled.items():
        length = getattr(decoding, field)
        if length <= MAX_LITERT_UNROLLED_LENGTH:
            continue
        name = typed.get(field, f"decoding.{field}")
        raise ValueError(
            f"Argument `{name}` must be at most {MAX_LITERT_UNROLLED_LENGTH} for "
            f"a LiteRT export of this model: the file unrolls {what}, and the "
            "conversion's time grows faster than the steps (about four times per "
            "doubling), so a longer one would not convert in useful time. Cut the "
            "sequences to a shorter length, or serve long ones with "
            f"`export_serving`, which loops. Received: {name}={length!r}"
        )


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
    `UNKNOWN_ID`) -> the best hypothesis of `looped_beam_search` with B =
    `width`, T = `max_length` and α = `alpha`, as a dict: `target_ids`
    `(batch, T)` int32, `scores` `(batch,)` float32 and, with
    `with_alignments`, `alignments` `(batch, T, S)` float32."""

    def serve(source_ids: TensorLike) -> dict[str, TensorLike]:
        source_ids = tf.where(
            (source_ids >= 0) & (source_ids < model.source_vocabulary_size),
            source_ids,
            UNKNOWN_ID,
        )
        beam = looped_beam_search(
            model, source_ids, width, max_length, alpha, with_alignments
        )
        best = {"target_ids": beam.sequences[:, 0], "scores": beam.scores[:, 0]}
        if beam.alignments is not None:
            best["alignments"] = beam.alignments[:, 0]
        return best

    return serve


def looped_beam_search(
    model: DecodableModel,
    source_ids: TensorLike,
    width: int,
    max_length: int,
    alpha: float,
    with_alignments: bool,
) -> DecodeResult:
    """`beam_step` (`kerasrnn.seq2seq.beam`) in a `tf.while_loop` of at most
    `max_length` steps, which stops once every hypothesis has ended: the
    whole beam, as `beam_search_decode` returns it.

    Each hypothesis's tokens and α are rows of `(batch·B, T)` and
    `(batch·B, T, S)` tensors of fixed shape, reordered by the step's
    parent rows (one `GATHER` each, none with B = 1) and written at column
    t by a `SELECT_V2`: no tensor lists, no shape that changes from one
    step to the next, so LiteRT allocates nothing inside the loop. Moving
    the whole history at every step costs little at these lengths;
    `beam_search_decode`, which serves longer ones, keeps α by slots
    instead.

    Args:
        model: A `DecodableModel`.
        source_ids: `(batch, S)` int32 ids in the source vocabulary.
        width: B.
        max_length: T, the most steps.
        alpha: The length penalty α.
        with_alignments: Whether to return α (attention models).

    Returns:
        A `DecodeResult`, best first: sequences `(batch, B, T)` int32,
        log_probs and scores `(batch, B)` float32, and alignments `(batch,
        B, T, S)` with `with_alignments` (else None); the steps the loop
        did not run hold padding and zero α.
    """
    state, context = initial_beam(model, source_ids, width, all_padding(source_ids))
    # Zeros of the batch's rows broadcast from the state, the batch left −1.
    history = {"tokens": tf.zeros_like(state.tokens)[:, None] + tf.zeros([1, max_length], tf.int32)}
    if with_alignments:
        history["alignments"] = tf.zeros_like(state.log_probs)[:, :, None] + tf.zeros(
            [1, max_length, source_ids.shape[1]]
        )
    columns = tf.range(max_length)

    def step(
        t: TensorLike, state: BeamState, history: dict[str, TensorLike]
    ) -> tuple[TensorLike, BeamState, dict[str, TensorLike]]:
        stepped = beam_step(model, state, context, alpha, with_alignments)
        at_t = tf.equal(columns, t)

        def reorder(tensor: TensorLike) -> TensorLike:
            return tensor if width == 1 else tf.gather(tensor, stepped.rows)

        stepped_history = {
            "tokens": tf.where(at_t, stepped.state.tokens[:, None], reorder(history["tokens"]))
        }
        if with_alignments:
            # A hypothesis emitted its token with the α its parent computed.
            stepped_history["alignments"] = tf.where(
                at_t[:, None],
                reorder(stepped.alignment)[:, None],
                reorder(history["alignments"]),
            )
        return t + 1, stepped.state, stepped_history

    _, state, history = tf.while_loop(
        lambda t, state, _: (t < max_length) & any_live(state, model.target_vocabulary_size),
        keep_shapes(step),
        (tf.constant(0), state, history),
    )
    sequences = tf.reshape(history["tokens"], [-1, width, max_length])
    alignments = None
    if with_alignments:
        alignments = tf.reshape(
            history["alignments"], [-1, width, max_length, source_ids.shape[1]]
        )
    sequences, log_probs, scores, alignments = rank_beam(
        model, source_ids, sequences, state, alignments, alpha, unrolled=True
    )
    sequences, alignments = read_left_to_right(model, sequences, alignments)
    return DecodeResult(sequences, log_probs, scores, alignments)
