"""Export a trained `Seq2Seq` model (or `Seq2SeqEnsemble`) as a string-in,
string-out SavedModel.

The SavedModel holds the weights, both vocabularies (a
`tf.lookup.StaticHashTable` for the source, a constant string tensor for the
target) and beam search (`beam_search_decode`) in one graph. Its
`serving_default` signature takes `texts`, a 1-D `tf.string` batch, and
returns:

- `outputs` `(batch,)` string: the best hypothesis, target tokens joined by
  `separator` (`<end>` and padding left out);
- `log_probs` `(batch,)` float32: its log-probability under the model;
- `beam_outputs` `(batch, beam_width)` string and `beam_log_probs`
  `(batch, beam_width)`: every hypothesis of the beam, best first;

and, for a model with attention, the best hypothesis's alignment:

- `alignments` `(batch, T, S)` float32: row t is the attention α_t with which
  output token t was emitted, over the S source tokens read; padded with
  zeros to the longest output (T) and input (S) of the batch;
- `output_lengths` `(batch,)` int32: the tokens in `outputs` (rows of
  `alignments` that are real);
- `input_lengths` `(batch,)` int32: the source tokens read (columns that are
  real).

Loading needs TensorFlow only: `tf.saved_model.load(path)
.signatures["serving_default"](texts=tf.constant(["hello"]))`.

`texts` must be a 1-D batch: a scalar or a 2-D tensor is refused with an
`InvalidArgumentError` that says so. Every string gets an answer, never an
error:

| input | result |
|---|---|
| leading/trailing whitespace | stripped first |
| upper case | lower-cased first (`TextSpec.lowercase`, Unicode-aware) |
| tokens not in the source vocabulary (unseen characters, digits) | dropped |
| inner spaces with `split="characters"`, invalid UTF-8 bytes | dropped |
| empty, whitespace only, or nothing left after dropping | `""` with log-probability 0.0 |
| more than `max_source_length` tokens | only the first `max_source_length` are read |
| a hypothesis that has not ended after `max_target_length` tokens | cut there |

A source vocabulary of which no token can come out of text under
`lowercase` and `split` (upper-case letters with `lowercase=True`, words
with `split="characters"`) is refused with a `ValueError` naming its tokens;
one with only some such tokens is exported with a `UserWarning` naming them.

What the SavedModel decodes with and how it reads text are the two specs it
was exported with, `DecodingSpec` and `TextSpec`
(`kerasrnn.seq2seq.specs`), the same that `export_litert` takes; it records
them in `assets.extra/specs.json` (`SPECS_FILE`), `{"decoding": {...},
"text": {...}}`, which a client reads without TensorFlow
(`DecodingSpec(**specs["decoding"])` makes the spec again).

With `jit_compile=True` (the default) the numeric core — encoder, beam
search and every number of the answer — is one XLA-compiled function inside
the serving graph; the string handling around it (splitting, vocabulary
lookup, one gather and join of the output strings) cannot be compiled and
stays a TensorFlow graph. XLA
compiles once per input shape, so the ids are padded to a few shapes first:
the batch with empty strings to the next power of two up to 64, then to the
next multiple of 64, and the source length to the next multiple of 8.
Padding changes no answer (the encoder and the attention mask it, and an
empty row starts ended). The answers are those of `jit_compile=False` up to
float rounding, since XLA fuses and orders sums differently:
log-probabilities and alignments agree to about 1e-5, and the ranking of two
hypotheses can differ only where their scores are that close (an untrained
model's, nearly tied, do).
What it costs: every process that loads the SavedModel compiles each padded
shape on the first call that has it (words of 1–8 letters at batch 1 are one
shape), and up to twice the compute for a batch just above a power of two.
What it gains is measured by `python -m benchmarks`, which prints the ratio;
the documentation's Design notes give the figures.
"""

from __future__ import annotations

import json
import os
import pathlib
import warnings

import keras
import tensorflow as tf

from kerasrnn.seq2seq.decoding import (
    all_padding,
    beam_search_decode,
    check_decodable,
)
from kerasrnn.seq2seq.protocol import DecodableModel
from kerasrnn.seq2seq.renamed import renamed_keyword
from kerasrnn.seq2seq.specs import (
    SPECS_FILE,
    UNSET,
    DecodingSpec,
    TextSpec,
    Unset,
    check_beam_width_fits,
    spec_with_shortcuts,
)
from kerasrnn.seq2seq.vocabulary import PAD_ID, UNKNOWN_ID, Vocabulary, check_vocabularies
from kerasrnn.types import TensorLike
from kerasrnn.validation import check_bool

#: With XLA, the source length is rounded up to a multiple of this, so that
#: words of nearby lengths share one compiled program.
LENGTH_STEP = 8

#: With XLA, batches up to this size are rounded up to a power of two, larger
#: ones to a multiple of it: few shapes, and little padding on large batches.
BATCH_STEP = 64


class StringSeq2Seq(tf.Module):
    """Strings in, strings out: text normalisation, ids and beam search.

    The decoding and the text handling are two specs, `decoding` and `text`;
    each of their fields can also be passed alone, as a shortcut argument of
    the field's name, which makes the spec from the shortcuts passed (the
    other fields at the spec's defaults). A shortcut passed with its spec is
    refused: `dataclasses.replace(spec, field=...)` changes one field of a
    spec.

    Args:
        model: A trained `Seq2Seq` or `Seq2SeqEnsemble`.
        source_vocabulary: The source `Vocabulary` the model was trained
            with.
        target_vocabulary: The target `Vocabulary` the model was trained
            with.
        decoding: A `DecodingSpec`: `beam_width` (at most the target
            vocabulary size), `length_penalty`, `max_source_length` (source
            tokens read per input, at most) and `max_target_length` (target
            tokens per hypothesis, at most). None: `DecodingSpec()` with the
            shortcuts passed.
        text: A `TextSpec`: `split`, `lowercase`, `separator`. None:
            `TextSpec()` with the shortcuts passed.
        jit_compile: Whether the encoder and beam search run as one
            XLA-compiled function on padded shapes (see the module doc:
            faster, the same answers up to float rounding, a compile per new
            padded shape on its first call).
        beam_width: A shortcut for `decoding`'s field.
        length_penalty: A shortcut for `decoding`'s field.
        max_source_length: A shortcut for `decoding`'s field.
        max_target_length: A shortcut for `decoding`'s field.
        split: A shortcut for `text`'s field.
        lowercase: A shortcut for `text`'s field.
        separator: A shortcut for `text`'s field.
        max_input_length: The deprecated name of `max_source_length`: it
            works until the next release, with a `DeprecationWarning`.
        max_output_length: The deprecated name of `max_target_length`: it
            works until the next release, with a `DeprecationWarning`.

    Raises:
        ValueError: An argument is out of range, named with its value and
            what is allowed (a spec's field as the spec refuses it); the
            beam is wider than the target vocabulary; a shortcut is passed
            with its spec, or a deprecated keyword with its new name; or the
            source vocabulary holds no token that text can become under
            `text` (some such tokens only warn: a `UserWarning` names them).
    """

    def __init__(
        self,
        model: DecodableModel,
        source_vocabulary: Vocabulary,
        target_vocabulary: Vocabulary,
        *,
        decoding: DecodingSpec | None = None,
        text: TextSpec | None = None,
        jit_compile: bool = True,
        beam_width: int | Unset = UNSET,
        length_penalty: float | Unset = UNSET,
        max_source_length: int | Unset = UNSET,
        max_target_length: int | Unset = UNSET,
        split: str | Unset = UNSET,
        lowercase: bool | Unset = UNSET,
        separator: str | Unset = UNSET,
        max_input_length: int | None = None,
        max_output_length: int | None = None,
    ) -> None:
        super().__init__(name="string_seq2seq")
        check_decodable(model)
        check_vocabularies(
            source_vocabulary,
            target_vocabulary,
            model.source_vocabulary_size,
            model.target_vocabulary_size,
        )
        decoding, text = serving_specs(
            "StringSeq2Seq",
            decoding,
            text,
            beam_width=beam_width,
            length_penalty=length_penalty,
            max_source_length=max_source_length,
            max_target_length=max_target_length,
            split=split,
            lowercase=lowercase,
            separator=separator,
            max_input_length=max_input_length,
            max_output_length=max_output_length,
        )
        check_beam_width_fits(decoding.beam_width, model.target_vocabulary_size)
        self.model = model
        self.decoding = decoding
        self.text = text
        self.jit_compile = check_bool("jit_compile", jit_compile)
        check_reachable(self, source_vocabulary)
        self.with_attention = model.has_attention
        # One trace for every shape; XLA then compiles per concrete shape.
        self.compiled_decode = tf.function(
            self.decode,
            input_signature=[tf.TensorSpec([None, None], tf.int32)],
            jit_compile=True,
        )
        self.source_table = source_lookup_table(source_vocabulary)
        # The answer is joined from pieces without a ragged pass: piece 0 is
        # "" (padding, <start>, <end>), piece 1 + id the token of that id,
        # piece 1 + V + id the separator and the token (every token but the
        # first), so one gather and one join make the string.
        tokens = target_vocabulary.id_to_token()
        self.output_pieces = tf.constant(
            [""] + tokens + [text.separator + token for token in tokens]
        )

    def source_ids(self, texts: TensorLike) -> TensorLike:
        """`(batch,)` strings -> `(batch, S)` source ids, right-padded with 0.

        There is always at least one padding column, so that an all-empty
        batch still has a time axis for the encoder.
        """
        tokens = self.source_tokens(tf.strings.strip(texts))
        ids = tf.ragged.map_flat_values(self.source_table.lookup, tokens)
        ids = tf.ragged.boolean_mask(ids, ids >= 0)[:, : self.decoding.max_source_length]
        batch = tf.shape(texts)[0]
        return tf.concat(
            [ids.to_tensor(PAD_ID), tf.zeros([batch, 1], tf.int32)], axis=1
        )

    def source_tokens(self, texts: TensorLike) -> tf.RaggedTensor:
        """`(batch,)` strings -> `(batch, None)` ragged source tokens:
        lower-cased with `text.lowercase`, then split into characters or at
        whitespace, as `text.split` says."""
        if self.text.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        if self.text.split == "characters":
            return tf.strings.unicode_split(texts, "UTF-8", errors="replace")
        return tf.strings.split(texts)

    # Any shape is let in, so that a wrong rank is refused by a message that
    # names the expected one rather than by a strided slice deep inside.
    @tf.function(input_signature=[tf.TensorSpec(None, tf.string, name="texts")])
    def serve(self, texts: TensorLike) -> dict[str, TensorLike]:
        """The `serving_default` endpoint: `(batch,)` strings in, the best
        answers, their log-probabilities and the beams out (see the module
        doc for every output)."""
        rank_checked = tf.debugging.assert_rank(
            texts, 1,
            message="serving_default takes `texts`, a 1-D batch of strings "
            "of shape (batch,); wrap a single string as [text]",
        )
        # A reshape, not ensure_shape: shape inference would refuse a wrong
        # rank with its own message before the assertion runs.
        with tf.control_dependencies([rank_checked]):
            texts = tf.reshape(texts, [-1])
        source = self.source_ids(texts)
        if self.jit_compile:
            batch = tf.shape(source)[0]
            decoded = self.compiled_decode(padded_to_bucket(source))
            decoded = {name: value[:batch] for name, value in decoded.items()}
        else:
            decoded = self.decode(source)
        beam_outputs = tf.strings.reduce_join(
            tf.gather(self.output_pieces, decoded["pieces"]), axis=-1
        )
        served = {
            "outputs": beam_outputs[:, 0],
            "log_probs": decoded["log_probs"][:, 0],
            "beam_outputs": beam_outputs,
            "beam_log_probs": decoded["log_probs"],
        }
        if self.with_attention:
            # Cut to the batch's longest output and input.
            rows, columns = (
                tf.reduce_max(tf.concat([decoded[name], [0]], 0))
                for name in ("output_lengths", "input_lengths")
            )
            served.update(
                alignments=decoded["alignments"][:, :rows, :columns],
                output_lengths=decoded["output_lengths"],
                input_lengths=decoded["input_lengths"],
            )
        return served

    def decode(self, source: TensorLike) -> dict[str, TensorLike]:
        """Beam search over `(batch, S)` source ids, and every number of the
        answer, so that with XLA only a gather and a join of strings and a
        slice of α stay outside the compiled function.

        Returns:
            A dict of
            - `pieces` `(batch, B, T)` int32 (T = `max_target_length`):
              indices into `output_pieces` (0 from `<end>` on);
            - `log_probs` `(batch, B)`: 0.0 for an empty source;
            and for attention models
            - `alignments` `(batch, T, S)`: the best
              hypothesis's α, zero on the rows of `<end>` and after;
            - `output_lengths`, `input_lengths` `(batch,)` int32.
        """
        result = beam_search_decode(
            self.model, source, decoding=self.decoding, return_alignments=self.with_attention
        )
        sequences = result.sequences
        # The tokens before <end> are the hypothesis (padding, <start> and
        # <end> sort below UNKNOWN_ID).
        real = sequences >= UNKNOWN_ID
        after_first = tf.math.cumsum(tf.cast(real, tf.int32), axis=-1) > 1
        vocabulary_size = self.model.target_vocabulary_size
        pieces = tf.where(
            real,
            1 + sequences + vocabulary_size * tf.cast(after_first, tf.int32),
            0,
        )
        # An empty source starts ended: all padding, log-probability 0.
        empty = all_padding(source)
        decoded = {
            "pieces": pieces,
            "log_probs": tf.where(empty[:, None], 0.0, result.log_probs),
        }
        if self.with_attention:
            # Beam search returned them: return_alignments=self.with_attention.
            assert result.alignments is not None
            best_real = real[:, 0]
            decoded.update(
                alignments=tf.where(
                    best_real[..., None], result.alignments[:, 0], 0.0
                ),
                output_lengths=tf.reduce_sum(tf.cast(best_real, tf.int32), axis=1),
                input_lengths=tf.reduce_sum(tf.cast(source != PAD_ID, tf.int32), axis=1),
            )
        return decoded


def source_lookup_table(vocabulary: Vocabulary) -> tf.lookup.StaticHashTable:
    """A table from each token of `vocabulary` to its id (-1 for others),
    made without leaving anything behind in TensorFlow's global graph.

    TensorFlow initialises a table made eagerly at once, and adds the
    initialising op to the global graph's `table_initializer` collection
    even then, when there is no op: it adds `None`. Every graph traced
    later starts with that collection, and exporting one as a meta graph
    (as freezing variables does, for a LiteRT export in the same process)
    warns that it cannot serialize the `None`. Nothing reads the entry (a
    SavedModel restores the table from the tracked object), so it is taken
    out again.
    """
    initializers = tf.compat.v1.get_collection_ref(
        tf.compat.v1.GraphKeys.TABLE_INITIALIZERS
    )
    before = len(initializers)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocabulary.tokens, tf.string),
            tf.constant(vocabulary.encode(vocabulary.tokens), tf.int32),
        ),
        default_value=-1,
    )
    initializers[before:] = [op for op in initializers[before:] if op is not None]
    return table


def check_reachable(module: StringSeq2Seq, vocabulary: Vocabulary) -> None:
    """Refuse a source `vocabulary` of which text can become no token under
    the `module`'s `text` (its `lowercase` and `split`), and warn when it can become only
    some of them: the others can never be read, and an input made only of
    them is served the empty answer.

    A token is reachable when `source_tokens` turns it, as a text, into
    itself alone: lower-casing maps any text to text it leaves unchanged,
    and splitting never makes a piece it would split again. Stripping is
    left out, since an inner space is a character token too.
    """
    tokens = vocabulary.tokens
    pieces = module.source_tokens(tf.constant(tokens, tf.string)).to_list() if tokens else []
    unreachable = [
        token for token, piece in zip(tokens, pieces) if piece != [token.encode()]
    ]
    settings = f"lowercase={module.text.lowercase}, split={module.text.split!r}"
    shown = repr(unreachable[:20]) + (
        f" and {len(unreachable) - 20} more" if len(unreachable) > 20 else ""
    )
    if len(unreachable) == len(tokens):
        raise ValueError(
            "Argument `source_vocabulary` must hold tokens that text can "
            f"become with {settings}: single characters with "
            "split='characters', words without whitespace with "
            "split='whitespace', in lower case with lowercase=True. None of "
            "its tokens is, so every answer would be empty. Received: "
            f"source_vocabulary with the tokens {shown}"
        )
    if unreachable:
        warnings.warn(
            f"{len(unreachable)} of the source vocabulary's {len(tokens)} "
            f"tokens are never read: no text becomes them with {settings}. "
            f"They are {shown}",
            UserWarning,
            stacklevel=3,
        )


def round_up(size: TensorLike, step: int) -> TensorLike:
    """The multiple of `step` at or above `size` (int32 tensors)."""
    return (size + step - 1) // step * step


def padded_to_bucket(source: TensorLike) -> TensorLike:
    """`(batch, S)` ids padded with 0 to the shape XLA compiles for.

    The batch grows to the next power of two up to `BATCH_STEP`, then to the
    next multiple of `BATCH_STEP`, with rows of padding only (empty sources,
    which start ended); the length becomes the next multiple of `LENGTH_STEP`
    at or above the longest source (at least 1), padding or dropping columns
    that are padding in every row.

    Returns:
        `(batch', S')` int32 ids whose first `batch` rows and first S columns
        (or all S' columns, if fewer) are `source`'s.
    """
    batch = tf.shape(source)[0]
    lengths = tf.reduce_sum(tf.cast(source != PAD_ID, tf.int32), axis=1)
    longest = tf.reduce_max(tf.concat([lengths, [1]], 0))
    length = round_up(longest, LENGTH_STEP)
    powers = tf.constant([2**k for k in range(BATCH_STEP.bit_length())], tf.int32)
    padded_batch = tf.where(
        batch <= BATCH_STEP,
        tf.reduce_min(tf.where(powers >= batch, powers, BATCH_STEP)),
        round_up(batch, BATCH_STEP),
    )
    source = source[:, :length]
    return tf.pad(
        source, [[0, padded_batch - batch], [0, length - tf.shape(source)[1]]]
    )


def serving_specs(
    function: str,
    decoding: DecodingSpec | None,
    text: TextSpec | None,
    *,
    beam_width: int | Unset,
    length_penalty: float | Unset,
    max_source_length: int | Unset,
    max_target_length: int | Unset,
    split: str | Unset,
    lowercase: bool | Unset,
    separator: str | Unset,
    max_input_length: int | None,
    max_output_length: int | None,
) -> tuple[DecodingSpec, TextSpec]:
    """`(decoding, text)`: the specs `function` (`export_serving` or
    `StringSeq2Seq`) was given, or made of its shortcut arguments, the
    deprecated `max_input_length` and `max_output_length` standing in for
    `max_source_length` and `max_target_length` (with a
    `DeprecationWarning` pointing at the caller of `function`); an error
    names the keyword the caller typed, the old one included."""
    lengths = {}
    typed = {}
    for old, old_value, new, new_value in (
        ("max_input_length", max_input_length, "max_source_length", max_source_length),
        ("max_output_length", max_output_length, "max_target_length", max_target_length),
    ):
        value = renamed_keyword(
            function, old, old_value, new, None if new_value is UNSET else new_value,
            stacklevel=4,
        )
        lengths[new] = UNSET if value is None else value
        if old_value is not None:
            typed[new] = old
    decoding = spec_with_shortcuts(
        DecodingSpec,
        "decoding",
        decoding,
        {"beam_width": beam_width, "length_penalty": length_penalty, **lengths},
        typed,
    )
    text = spec_with_shortcuts(
        TextSpec,
        "text",
        text,
        {"split": split, "lowercase": lowercase, "separator": separator},
    )
    return decoding, text


def export_serving(
    model: DecodableModel,
    path: str | os.PathLike[str],
    source_vocabulary: Vocabulary,
    target_vocabulary: Vocabulary,
    *,
    decoding: DecodingSpec | None = None,
    text: TextSpec | None = None,
    jit_compile: bool = True,
    beam_width: int | Unset = UNSET,
    length_penalty: float | Unset = UNSET,
    max_source_length: int | Unset = UNSET,
    max_target_length: int | Unset = UNSET,
    split: str | Unset = UNSET,
    lowercase: bool | Unset = UNSET,
    separator: str | Unset = UNSET,
    max_input_length: int | None = None,
    max_output_length: int | None = None,
) -> StringSeq2Seq:
    """Write `model` and its vocabularies as one SavedModel at `path`, and
    its specs in `assets.extra/specs.json` (`SPECS_FILE`).

    The decoding and the text handling are the specs `decoding` and `text`,
    which `export_litert` takes too, with the same defaults. Each field can
    also be passed alone as a shortcut argument of its name (the spec is
    then made of the shortcuts passed, the other fields at its defaults);
    a shortcut passed with its spec is refused.

    Args:
        model: A trained `Seq2Seq` or `Seq2SeqEnsemble`.
        path: Directory to write.
        source_vocabulary: The source `Vocabulary`.
        target_vocabulary: The target `Vocabulary`.
        decoding: A `DecodingSpec` (beam width at most the target
            vocabulary size), or None: `DecodingSpec()` with the shortcuts
            passed.
        text: A `TextSpec`, or None: `TextSpec()` with the shortcuts
            passed.
        jit_compile: Whether the numeric core is XLA-compiled (see
            `StringSeq2Seq` and the module doc).
        beam_width: A shortcut for `decoding`'s field.
        length_penalty: A shortcut for `decoding`'s field.
        max_source_length: A shortcut for `decoding`'s field.
        max_target_length: A shortcut for `decoding`'s field.
        split: A shortcut for `text`'s field.
        lowercase: A shortcut for `text`'s field.
        separator: A shortcut for `text`'s field.
        max_input_length: The deprecated name of `max_source_length`: it
            works until the next release, with a `DeprecationWarning`.
        max_output_length: The deprecated name of `max_target_length`: it
            works until the next release, with a `DeprecationWarning`.

    Returns:
        The `StringSeq2Seq` module that was saved (callable in process as
        `module.serve(texts)`; its `decoding` and `text` are the specs).

    Raises:
        TypeError: `path` is not a str or `os.PathLike`.
        ValueError: `path` is an existing file or lies under one, an
            argument is out of range (named, with its value and what is
            allowed), the beam is wider than the target vocabulary, a
            shortcut is passed with its spec or a deprecated keyword with
            its new name, or the source vocabulary holds no token that text
            can become under `text` (some such tokens only warn: a
            `UserWarning` names them).
    """
    decoding, text = serving_specs(
        "export_serving",
        decoding,
        text,
        beam_width=beam_width,
        length_penalty=length_penalty,
        max_source_length=max_source_length,
        max_target_length=max_target_length,
        split=split,
        lowercase=lowercase,
        separator=separator,
        max_input_length=max_input_length,
        max_output_length=max_output_length,
    )
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            "Argument `path` must be a str or os.PathLike, the directory to "
            f"write the SavedModel into. Received: path={path!r}"
        )
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(
            "Argument `path` must be a directory to write the SavedModel into. "
            f"Received: path={str(path)!r}, an existing file"
        )
    # The nearest ancestor that exists must be a directory to make it in.
    for parent in pathlib.Path(path).parents:
        if os.path.exists(parent):
            if not os.path.isdir(parent):
                raise ValueError(
                    "Argument `path` must be a directory to write the "
                    "SavedModel into, made with its missing parents. "
                    f"Received: path={str(path)!r}, whose parent "
                    f"{str(parent)!r} is a file, not a directory"
                )
            break
    module = StringSeq2Seq(
        model,
        source_vocabulary,
        target_vocabulary,
        decoding=decoding,
        text=text,
        jit_compile=jit_compile,
    )
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(module.source_table)
    archive.add_endpoint("serving_default", module.serve)
    archive.write_out(str(path), verbose=False)
    specs_path = pathlib.Path(path) / SPECS_FILE
    specs_path.parent.mkdir(exist_ok=True)
    specs = {"decoding": decoding.to_json(), "text": text.to_json()}
    specs_path.write_text(json.dumps(specs, indent=1, ensure_ascii=False) + "\n")
    return module
