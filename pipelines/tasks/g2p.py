"""`g2p`: grapheme-to-phoneme conversion on CMUDict with `kerasrnn.seq2seq`.

A word's letters in, its ARPAbet phonemes out, with stress digits, or
without them under `--no-stress` (variants that then coincide count once). Data:
the `cmudict` package (BSD), read by `kerasrnn_pipelines.data.cmudict`, split by
`zlib.crc32(word.encode()) % 20` (0 test, 1 validation, else train). Every
pronunciation of a training word is one training pair.

Model (`kerasrnn.seq2seq.Seq2Seq`): letter embeddings (`--embedding`) →
`--layers` encoder layers of `--cell` with `--units` (bidirectional by
default) → a decoder of the same cell, given the context as `--context`
says and attending over the encoder's outputs as `--attention` says
(Luong by default) → softmax over phonemes (`kerasrnn_pipelines.encoder_decoder`);
`--cell-dropout` is every cell's input dropout. `--ensemble N` trains N
such models side by side and decodes with the mean of their next-token
probabilities (`kerasrnn.seq2seq.Seq2SeqEnsemble`; `--preset full` uses 3).
Training batches are grouped by word length, one dataset per length bucket
(`kerasrnn_pipelines.data.batching.bucketed_batches`).
Training is teacher forcing, or scheduled sampling with
`--scheduled-sampling` (ε = 1/2 at `--sampling-midpoint` steps); the
learning rate is held, then halved at each of the last four epochs
(`kerasrnn_pipelines.encoder_decoder.step_decay`). Test words are
decoded by beam search (`--beam-width`, `--length-penalty`).

Metrics on the test split (`test_*`), each word once:

- WER: the fraction of words whose predicted pronunciation equals none of
  the word's reference pronunciations;
- PER: Σ_words d(prediction, closest reference) / Σ_words len(closest
  reference), d the Levenshtein distance over phonemes and the closest
  reference the one with the smallest d (the shorter one on a tie);

both with stress digits removed (`test_wer`, `test_per`: the usual CMUDict
convention) and, unless `--no-stress`, with stress (`test_wer_stress`,
`test_per_stress`), and
`test_wer_by_length`: the WER of the test words of ≤ 4, 5–6, 7–8, 9–10 and
≥ 11 letters (keys `"<=4"` … `">=11"`), where the fixed-context bottleneck
shows. The
baseline (`baseline_wer`, `baseline_per`, without stress) gives each test
word the pronunciation of the training word that shares its longest prefix.

Outputs are the shared ones (`kerasrnn_pipelines.training`), except that
`saved_model/` is the string-in, string-out export of `kerasrnn.seq2seq.export_serving` — its
`serving_default` maps words to space-separated phonemes with beam search
in the graph (see that module for what odd inputs give); with attention
it also serves the best answer's alignment. An attention model's run also
writes `alignments.png`, heatmaps of α for a dozen test words (letters
across, phonemes down), and logs them to TensorBoard (`tensorboard/alignments`).
A run also writes `model.tflite` and `vocabulary.json`
(`kerasrnn.seq2seq.export_litert`: letter ids in, phoneme ids out, the beam
search inside, a signature per word-length bucket, `LITERT_SOURCE_BUCKETS`,
except in a `--quick` run, whose file holds `serving_default` alone);
`metrics.json` records its `litert_quantize` (`--litert-quantize`), its
`litert_bytes` and its `litert_test_wer` and `litert_test_per` (stress
removed), computed through the LiteRT interpreter.

With `--members RUN_DIR ...` nothing trains: the finished runs' models
are assembled into one `Seq2SeqEnsemble` (`mixture`: left-to-right models
mixed, right-to-left ones rescoring), which the run decodes, saves,
exports and scores as above; `metrics.json` adds `members`, each run's
record. `--teacher` takes several runs, which teach as that mixture.

Besides the epoch lines and the summary, a run prints what it trains and
where its outputs go before training, and a line before each export and
before decoding the test words (`kerasrnn_pipelines.console.progress`).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import pathlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from kerasrnn import seq2seq
from kerasrnn.seq2seq.distillation import TEACHER_LOGITS
from kerasrnn_pipelines import alignments, edit_distance, encoder_decoder
from kerasrnn_pipelines.console import progress
from kerasrnn_pipelines.data import cmudict as cmudict_data
from kerasrnn_pipelines.data import unlabelled_words
from kerasrnn_pipelines.data.batching import AUTOTUNE, bucketed_batches
from kerasrnn_pipelines.data.cmudict import Entry
from kerasrnn_pipelines.faults import RunFailed
from kerasrnn_pipelines.litert_outputs import litert_file_metrics
from kerasrnn_pipelines.options import CELLS
from kerasrnn_pipelines.run_directory import TENSORBOARD
from kerasrnn_pipelines.tasks.options.g2p_config import TEACHER_FIGURES, read_run_metrics

if TYPE_CHECKING:
    from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig
    from kerasrnn_pipelines.training import RunContext

class TeacherMismatch(RunFailed):
    """A `--teacher` or `--members` run does not speak this run's letters
    or phonemes."""


HEADLINE_METRIC = ("test_per", "baseline_per", "lower")

#: Test words decoded per beam-search call.
DECODE_BATCH = 512

#: `test_wer_by_length` buckets: name -> (fewest, most) letters.
LENGTH_BUCKETS = {
    "<=4": (1, 4),
    "5-6": (5, 6),
    "7-8": (7, 8),
    "9-10": (9, 10),
    ">=11": (11, 10**6),
}

#: Test words whose alignments are drawn: this many, spread over lengths.
DRAWN_WORDS = 12

#: Words printed with their predictions at the end of a run.
SHOWN_WORDS = ("hello", "kerasrnn", "tensorflow", "pronunciation", "xylophone",
               "though", "through", "rough")


# ------------------------------------------------------------------ metrics
def error_rates(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
    stress: bool = True,
) -> tuple[float, float]:
    """WER and PER of predicted pronunciations.

    Args:
        predictions: One phoneme sequence per word.
        references: Per word, the list of its reference pronunciations.
        stress: Compare phonemes with their stress digits; False strips them
            from predictions and references first.

    Returns:
        `(wer, per)`, both fractions (see the module docstring).
    """
    if not stress:
        predictions = [cmudict_data.strip_stress(p) for p in predictions]
        references = [
            [cmudict_data.strip_stress(p) for p in pronunciations]
            for pronunciations in references
        ]
    return edit_distance.error_rates(predictions, references)


def wer_by_length(
    words: Sequence[str],
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
) -> dict[str, float]:
    """WER (stress removed) of the words in each of `LENGTH_BUCKETS`.

    Returns:
        Bucket name -> WER, for the buckets that hold a word.
    """
    by_length: dict[str, float] = {}
    for name, (fewest, most) in LENGTH_BUCKETS.items():
        members = [i for i, word in enumerate(words) if fewest <= len(word) <= most]
        if members:
            by_length[name], _ = error_rates(
                [predictions[i] for i in members],
                [references[i] for i in members],
                stress=False,
            )
    return by_length


def nearest_spelling(
    train_words: Sequence[Entry], words: Sequence[str]
) -> list[cmudict_data.Pronunciation]:
    """The baseline: each word gets the first pronunciation of the training
    word that shares its longest prefix, always one of its two alphabetical
    neighbours (the one before it when both share as much).

    Args:
        train_words: `(word, pronunciations)` pairs sorted by word.
        words: The words to pronounce.
    """
    spellings = [word for word, _ in train_words]
    predictions = []
    for word in words:
        index = bisect.bisect_left(spellings, word)
        neighbours = [i for i in (index - 1, index) if 0 <= i < len(spellings)]
        best = max(
            neighbours,
            key=lambda i: (len(os.path.commonprefix([spellings[i], word])), -i),
        )
        predictions.append(train_words[best][1][0])
    return predictions


# --------------------------------------------------------------------- data
def without_stress(words: Sequence[Entry]) -> list[Entry]:
    """`(word, pronunciations)` pairs with the stress digits removed; variants
    that differ only in stress are kept once, in their first place."""
    return [
        (word, tuple(dict.fromkeys(map(cmudict_data.strip_stress, pronunciations))))
        for word, pronunciations in words
    ]


def load_words(*, stress: bool, limit: int, seed: int) -> dict[str, list[Entry]]:
    """`{split: [(word, pronunciations)]}`, without stress under `--no-stress`,
    cut to a seeded sample by `--limit`.

    Args:
        stress: `--stress`: keep the vowels' stress digits.
        limit: `--limit`: the training words kept (a tenth of it for the
            validation and test splits); 0 keeps all.
        seed: `--seed`, of the sample.
    """
    splits = {name: cmudict_data.load_split(name) for name in cmudict_data.SPLITS}
    if not stress:
        splits = {name: without_stress(words) for name, words in splits.items()}
    if limit:
        rng = np.random.default_rng(seed)
        for name, words in splits.items():
            keep = limit if name == "train" else max(1, limit // 10)
            picked = rng.permutation(len(words))[:keep]
            splits[name] = [words[i] for i in sorted(picked)]
    return splits


def make_vocabularies(
    train_words: Sequence[Entry],
) -> tuple[seq2seq.Vocabulary, seq2seq.Vocabulary]:
    """The vocabularies of the training words' letters and phonemes, sorted."""
    letters = sorted({letter for word, _ in train_words for letter in word})
    phonemes = sorted(
        {p for _, prons in train_words for pron in prons for p in pron}
    )
    return seq2seq.Vocabulary(letters), seq2seq.Vocabulary(phonemes)


def pair_dataset(
    words: Sequence[Entry],
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    batch_size: int,
    shuffle: bool,
    seed: int,
    teacher: seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble | None = None,
) -> tf.data.Dataset:
    """Teacher-forcing batches of (letters, phonemes), grouped by word length.

    With a `teacher`, each batch's inputs also hold its logits under
    `"teacher_logits"` (`kerasrnn.seq2seq.Distiller` then does not run it),
    computed here once (`teacher_distributions`): the batches are the same
    in number and order as without it.
    """
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for word, pronunciations in words:
        for pronunciation in pronunciations:
            sources.append(np.array(letters.encode(word), np.int32))
            targets.append(np.array(phonemes.encode(pronunciation), np.int32))
    if teacher is None:
        batches = bucketed_batches(sources, targets, batch_size, shuffle, seed)
        # The per-step weights are not needed: the loss masks padding itself.
        return batches.map(
            lambda source, target, weight: seq2seq.teacher_forcing_pair(source, target),
            num_parallel_calls=AUTOTUNE,
        ).prefetch(AUTOTUNE)
    logits = teacher_distributions(teacher, sources, targets)
    batches = bucketed_batches(
        sources, targets, batch_size, shuffle, seed, per_step_extra=logits
    )

    def with_logits(
        source: tf.Tensor, target: tf.Tensor, weight: tf.Tensor, logits: tf.Tensor
    ) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        inputs, labels = seq2seq.teacher_forcing_pair(source, target)
        return {**inputs, TEACHER_LOGITS: logits}, labels

    return batches.map(with_logits, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)


def teacher_distributions(
    teacher: seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble,
    sources: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """The teacher's logits for each (source, target) pair under teacher
    forcing (`kerasrnn.seq2seq.teacher_logits`): `(len(target) + 1, V)`
    float32, row t its distribution of y_t (the last, of <end>).

    They are computed in batches of `DECODE_BATCH` pairs of like lengths,
    in one fixed order, so that every sitting of a run computes the same
    values. A decoder step reads only the steps before it, and the padding
    of the source is masked, so a pair's rows do not depend on its batch.
    """
    ids = tf.TensorSpec([None, None], tf.int32)

    # One trace for every batch's shape.
    @tf.function(input_signature=[ids, ids])
    def forward(source: tf.Tensor, decoder_input: tf.Tensor) -> tf.Tensor:
        return seq2seq.teacher_logits(
            teacher, {"source": source, "decoder_input": decoder_input}
        )

    order = sorted(range(len(targets)), key=lambda i: (len(targets[i]), len(sources[i])))
    logits: list[np.ndarray] = [np.empty(0)] * len(targets)
    for start in range(0, len(order), DECODE_BATCH):
        rows = order[start : start + DECODE_BATCH]
        padded = [
            tf.ragged.constant([pairs[i] for i in rows], tf.int32).to_tensor(0)
            for pairs in (sources, targets)
        ]
        inputs, _ = seq2seq.teacher_forcing_pair(*padded)
        for i, row in zip(rows, forward(inputs["source"], inputs["decoder_input"]).numpy()):
            logits[i] = row[: len(targets[i]) + 1]
    return logits


# ------------------------------------------------------------------ console
def model_description(config: G2PConfig) -> str:
    """What the run trains, in words: `an encoder-decoder of LSTM cells
    (128 units, bidirectional encoder, Luong attention)`."""
    details = [f"{config.units} units"]
    if config.layers > 1:
        details.append(f"{config.layers} encoder layers")
    if config.bidirectional:
        details.append("bidirectional encoder")
    if config.attention == "none":
        details.append("no attention")
    else:
        details.append(f"{config.attention.capitalize()} attention")
    if config.input_feeding:
        details.append("input feeding")
    if config.right_to_left:
        details.append(f"{config.right_to_left} more reading the target right to left")
    if config.ensemble == 0:
        # --right-to-left 1 alone: one model, not "1 more".
        details[-1] = "reading the target right to left"
    members = (
        "an encoder-decoder" if config.ensemble in (0, 1)
        else f"{config.ensemble} encoder-decoders"
    )
    cell = CELLS[config.cell].removesuffix("Cell")
    return f"{members} of {cell} cells ({', '.join(details)})"


def start_lines(
    config: G2PConfig, splits: dict[str, list[Entry]], directory: pathlib.Path
) -> list[str]:
    """The lines a run starts with: the model, the words, the epochs and
    where the outputs go (`directory`, the run directory)."""
    if config.members is not None:
        return [
            f"kerasrnn-train g2p: assembling the {len(config.members)} runs "
            f"{', '.join(config.members)} into one ensemble, to decode "
            f"{len(splits['test']):,} test words",
            f"  outputs go to {directory}/",
        ]
    return [
        f"kerasrnn-train g2p: training {model_description(config)} for "
        f"{config.epochs} epochs on {len(splits['train']):,} words "
        f"({len(splits['validation']):,} for validation, "
        f"{len(splits['test']):,} for the test)",
        f"  outputs go to {directory}/",
    ]


# ----------------------------------------------------------------- decoding
def decoding_spec(
    train_words: Sequence[Entry], beam_width: int, length_penalty: float
) -> seq2seq.DecodingSpec:
    """A run's beam search (`--beam-width`, `--length-penalty`) over words
    of up to the longest training word's letters, into pronunciations of up
    to four phonemes more than the longest training pronunciation."""
    return seq2seq.DecodingSpec(
        beam_width=beam_width,
        length_penalty=length_penalty,
        max_source_length=max(len(word) for word, _ in train_words),
        max_target_length=max(len(p) for _, prons in train_words for p in prons) + 4,
    )


def predict(
    model: seq2seq.DecodableModel,
    words: Sequence[str],
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
) -> list[list[str]]:
    """Beam-search pronunciations (phoneme lists) of `words`, by the run's
    `decoding` (`--beam-width`, `--length-penalty`, at most
    `max_target_length` phonemes; the words are read whole)."""
    predictions: list[list[str]] = []
    for start in range(0, len(words), DECODE_BATCH):
        chunk = [letters.encode(word) for word in words[start : start + DECODE_BATCH]]
        source = tf.ragged.constant(chunk, tf.int32).to_tensor(0)
        predictions.extend(
            encoder_decoder.beam_search(model, source, phonemes, decoding)
        )
    return predictions


def draw_test_alignments(
    model: seq2seq.DecodableModel,
    words: Sequence[str],
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
    context: RunContext,
) -> None:
    """`alignments.png` and its TensorBoard image: α of `DRAWN_WORDS` test
    words spread over the lengths, by the run's beam search, `decoding`
    (`--beam-width`, `--length-penalty`, at most `max_target_length`
    phonemes)."""
    by_length = sorted(words, key=len)
    picked = [
        by_length[int(i)]
        for i in np.linspace(0, len(by_length) - 1, min(DRAWN_WORDS, len(by_length)))
    ]
    source = tf.ragged.constant([letters.encode(w) for w in picked], tf.int32).to_tensor(0)
    result = seq2seq.beam_search_decode(
        model, source, decoding=decoding, return_alignments=True
    )
    outputs = [phonemes.decode(row) for row in result.sequences[:, 0].numpy()]
    # Asked for with return_alignments=True.
    assert result.alignments is not None
    alignments.write_alignments(
        alignments.alignment_examples(picked, outputs, result.alignments[:, 0].numpy()),
        context.write_dir / "alignments.png",
        context.directory.working_file(TENSORBOARD) / "alignments",
    )


# ------------------------------------------------------------------- LiteRT
#: The LiteRT file's source buckets: a signature per word length bound
#: (letters), so that a short word runs fewer unrolled encoder steps and a
#: batch's call stops decoding sooner. Measured on the default run, side by
#: side: these four served batches of 256 test words faster than 8 and 12
#: alone and single words as fast; finer sets (every two letters from 4 to
#: 16) gained nothing more.
LITERT_SOURCE_BUCKETS = (6, 8, 12, 16)

#: Phonemes a bucket decodes beyond its letters: 99.95% of CMUDict's
#: training pronunciations have at most 4 more phonemes than letters (the
#: rest are abbreviations such as "fyi"), and the run's own decoding allows
#: 4 beyond its longest pronunciation.
LITERT_EXTRA_PHONEMES = 4


def litert_buckets(
    train_words: Sequence[Entry], max_target_length: int
) -> list[tuple[int, int]]:
    """`(letters, phonemes)` bounds of the LiteRT buckets: the words of at
    most `letters` letters decode at most `letters + LITERT_EXTRA_PHONEMES`
    phonemes (never more than `max_target_length`). Bounds no shorter than the
    longest training word are left out: `serving_default` holds them."""
    longest_word = max(len(word) for word, _ in train_words)
    return [
        (letters, min(letters + LITERT_EXTRA_PHONEMES, max_target_length))
        for letters in LITERT_SOURCE_BUCKETS
        if letters < longest_word
    ]


def litert_metrics(
    path: pathlib.Path,
    words: Sequence[str],
    references: Sequence[Sequence[Sequence[str]]],
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    litert_quantize: str,
) -> dict[str, Any]:
    """`litert_quantize`, `litert_bytes`, `litert_operators`, and the WER
    and PER (stress removed) of the `model.tflite` at `path` on `words`,
    through the LiteRT interpreter (`litert_test_wer`, `litert_test_per`;
    left out, with a note, where `ai_edge_litert` is not installed)."""
    metrics = litert_file_metrics(path, litert_quantize)
    try:
        answers = encoder_decoder.litert_beam_search(path, [letters.encode(w) for w in words])
    except ImportError:
        print("ai-edge-litert is not installed: model.tflite is written but not evaluated")
        return metrics
    predictions = [phonemes.decode(answer) for answer in answers]
    metrics["litert_test_wer"], metrics["litert_test_per"] = error_rates(
        predictions, references, stress=False
    )
    return metrics


# --------------------------------------------------------------- distillation
class FinishedRun(NamedTuple):
    """A finished g2p run's model, loaded (`--teacher`, `--members`).

    Attributes:
        models: Its `Seq2Seq` models: the one, or an ensemble's members.
        record: What this run's `metrics.json` says of it: `run` (the
            directory as typed), its `TEACHER_FIGURES` and, where it has
            one, its `training_time_s`.
        args: Its `metrics.json`'s `args`.
    """

    models: list[seq2seq.Seq2Seq]
    record: dict[str, Any]
    args: dict[str, Any]


def load_finished_run(
    directory_name: str,
    argument: str,
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    stress: bool,
    context: RunContext,
) -> FinishedRun:
    """The model of the finished g2p run in `directory_name`, loaded in the
    run's strategy scope, after checking that it speaks this run's letters
    and phonemes.

    Args:
        argument: The option that named it, for the messages.
        letters, phonemes: This run's vocabularies, from its training words.
        stress: This run's `--stress`.

    Raises:
        TeacherMismatch: its `--stress` differs from this run's, its model
            is not an encoder-decoder, or its vocabulary sizes (or, where
            its `vocabulary.json` lists them, its tokens) differ from this
            run's.
    """
    directory = pathlib.Path(directory_name)
    metrics = read_run_metrics(directory_name, argument)
    where = f"the {argument} run {directory_name!r}"
    if metrics["args"].get("stress") != stress:
        raise TeacherMismatch(
            f"{where} was trained with stress={metrics['args'].get('stress')}, "
            f"this run with stress={stress}: the phonemes differ (pass "
            f"{'--stress' if metrics['args'].get('stress') else '--no-stress'} "
            f"or another {argument})."
        )
    with context.scope():
        model = keras.saving.load_model(directory / "model.keras")
    if not isinstance(model, (seq2seq.Seq2Seq, seq2seq.Seq2SeqEnsemble)):
        raise TeacherMismatch(
            f"{where} holds a {type(model).__name__} in model.keras, not a "
            "kerasrnn.seq2seq Seq2Seq or Seq2SeqEnsemble."
        )
    vocabulary_file = directory / "vocabulary.json"
    listed = json.loads(vocabulary_file.read_text()) if vocabulary_file.is_file() else {}
    for what, vocabulary, size, tokens in (
        ("letters", letters, model.source_vocabulary_size, listed.get("source_tokens")),
        ("phonemes", phonemes, model.target_vocabulary_size, listed.get("target_tokens")),
    ):
        if size != vocabulary.size or tokens not in (None, vocabulary.id_to_token()):
            raise TeacherMismatch(
                f"{where} knows other {what} than this run: {size} ids there, "
                f"{vocabulary.size} here, from this run's training words; its "
                "model is read token by token (pass its --limit and --seed, "
                f"or another {argument})."
            )
    models = list(model.members) if isinstance(model, seq2seq.Seq2SeqEnsemble) else [model]
    record = {"run": directory_name, **{name: metrics[name] for name in TEACHER_FIGURES}}
    # Absent from runs that trained nothing or resumed an unrecording backup.
    if "training_time_s" in metrics:
        record["training_time_s"] = metrics["training_time_s"]
    return FinishedRun(models, record, metrics["args"])


def mixture(
    runs: Sequence[FinishedRun], context: RunContext
) -> seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble:
    """One model of the runs' models, as `encoder_decoder.build_model`
    makes an ensemble: the left-to-right models first, mixed, then the
    right-to-left ones, which rescore with `RESCORING_WEIGHT` where both
    kinds are present; one model is itself.

    Each model is made again from its configuration, named `seq2seq_<k>`
    as a trained ensemble's members are, with its weights copied: names
    unique within the ensemble, and nothing shared with the loaded runs.
    """
    models = [model for run in runs for model in run.models]
    if len(models) == 1:
        return models[0]
    ordered = sorted(models, key=lambda model: model.reads_right_to_left)
    with context.scope():
        members = []
        for index, model in enumerate(ordered):
            copy = seq2seq.Seq2Seq.from_config({**model.get_config(), "name": f"seq2seq_{index}"})
            copy.set_weights(model.get_weights())
            members.append(copy)
        orders = {member.reads_right_to_left for member in members}
        return seq2seq.Seq2SeqEnsemble(
            members,
            rescoring_weight=encoder_decoder.RESCORING_WEIGHT if len(orders) == 2 else None,
            name="seq2seq_ensemble",
        )


class Teacher(NamedTuple):
    """The `--teacher` runs, loaded.

    Attributes:
        distillation: Their mixture (`mixture`) with
            `--distillation-weight` and `--distillation-temperature`, for
            `encoder_decoder.train`.
        records: What the student's `metrics.json` says of each run
            (`FinishedRun.record`).
        beam_width: The first run's `--beam-width`, with which the mixture
            pronounces `--unlabelled-words`.
        length_penalty: Its `--length-penalty`, likewise.
    """

    distillation: encoder_decoder.Distillation
    records: list[dict[str, Any]]
    beam_width: int
    length_penalty: float

    def described(self) -> dict[str, Any] | list[dict[str, Any]]:
        """`metrics.json`'s `teacher`: the one run's record, or the list of
        the runs' records."""
        return self.records[0] if len(self.records) == 1 else self.records


def load_teacher(
    config: G2PConfig,
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    context: RunContext,
) -> Teacher:
    """The models of the finished g2p runs `--teacher`, loaded and mixed
    (see `load_finished_run` and `mixture`).

    Raises:
        TeacherMismatch: see `load_finished_run`.
    """
    runs = [
        load_finished_run(directory, "--teacher", letters, phonemes, config.stress, context)
        for directory in config.teacher or ()
    ]
    first = runs[0].args
    return Teacher(
        encoder_decoder.Distillation(mixture(runs, context), *config.distillation()),
        [run.record for run in runs],
        int(first.get("beam_width", config.beam_width)),
        float(first.get("length_penalty", config.length_penalty)),
    )


def teacher_pronounced_words(
    teacher: Teacher,
    count: int,
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
    seed: int,
) -> list[Entry]:
    """`count` words CMUDict lacks, each with the teacher's pronunciation:
    training pairs for the student (sequence-level distillation,
    `kerasrnn.seq2seq.teacher_targets`).

    Args:
        teacher: The loaded `--teacher`; it decodes with its own beam width
            and length penalty.
        count: `--unlabelled-words`.
        letters: The source vocabulary; the words use its letters only.
        phonemes: The target vocabulary.
        decoding: The run's spec: the words have at most its
            `max_source_length` letters, the answers at most its
            `max_target_length` phonemes.
        seed: `--seed`, of the words' sample
            (`kerasrnn_pipelines.data.unlabelled_words`).

    Returns:
        `(word, (pronunciation,))` pairs, the words sorted.

    Raises:
        RunFailed: fewer than `count` words qualify, or `english-words` is
            not installed.
    """
    try:
        words = unlabelled_words.sample_unlabelled_words(
            count, letters.tokens, seed, decoding.max_source_length
        )
    except (ValueError, ModuleNotFoundError) as error:
        raise RunFailed(f"--unlabelled-words {count}: {error}") from None
    if not words:
        return []
    source = tf.ragged.constant([letters.encode(word) for word in words], tf.int32)
    answers = seq2seq.teacher_targets(
        teacher.distillation.teacher,
        source.to_tensor(0),
        beam_width=teacher.beam_width,
        max_target_length=decoding.max_target_length,
        batch_size=DECODE_BATCH,
        length_penalty=teacher.length_penalty,
    )
    return [(word, (tuple(phonemes.decode(row)),)) for word, row in zip(words, answers)]


def train_model(
    config: G2PConfig,
    context: RunContext,
    splits: dict[str, list[Entry]],
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
) -> tuple[seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble, dict[str, Any]]:
    """The model `config` describes, trained (with `--teacher`, as its
    student), in float32 whatever `--precision` trained it in.

    Returns:
        `(model, record)`: `record` holds what `metrics.json` adds with a
        teacher, `teacher` and `unlabelled_words`.
    """
    validation = pair_dataset(
        splits["validation"], letters, phonemes, config.batch_size, False, config.seed
    )
    teacher = None
    if config.teacher is not None:
        teacher = load_teacher(config, letters, phonemes, context)
        progress(
            f"  taught by {', '.join(record['run'] + '/' for record in teacher.records)} "
            f"({sum(record['parameters'] for record in teacher.records):,} parameters, "
            "test WER " + ", ".join(f"{record['test_wer']:.1%}" for record in teacher.records)
            + "), weight {:g}, temperature {:g}".format(*config.distillation()),
            context.is_chief,
        )
    # The teacher's words train the student only: the vocabularies, the
    # decoding bounds, the baseline and `train_words` are CMUDict's.
    added: list[Entry] = []
    if teacher is not None and config.unlabelled_words:
        # Minutes for a large teacher and many words: say so before.
        progress(
            f"  and {config.unlabelled_words:,} words CMUDict lacks, pronounced "
            f"by the teacher with beam {teacher.beam_width}...",
            context.is_chief,
        )
        added = teacher_pronounced_words(
            teacher, config.unlabelled_words, letters, phonemes, decoding, config.seed
        )
    if teacher is not None:
        progress(
            "  computing the teacher's next-phoneme distributions of the "
            f"{len(splits['train']) + len(added):,} training words once...",
            context.is_chief,
        )
    train = pair_dataset(
        splits["train"] + added, letters, phonemes, config.batch_size, config.shuffle,
        config.seed, None if teacher is None else teacher.distillation.teacher,
    )
    with dtype_policy(config.precision):
        model = encoder_decoder.train(
            config, context, letters, phonemes, train, validation,
            None if teacher is None else teacher.distillation,
        )
    if config.precision != "float32":
        # The weights are float32 variables under a mixed policy too; a
        # float32 model with them saves, serves and exports float32.
        with context.scope():
            trained = model
            model = encoder_decoder.build_model(config, letters, phonemes)
            model.set_weights(trained.get_weights())
    if teacher is None:
        return model, {}
    return model, {"teacher": teacher.described(), "unlabelled_words": len(added)}


@contextlib.contextmanager
def dtype_policy(name: str) -> Iterator[None]:
    """Keras's global dtype policy set to `name` (`--precision`) inside,
    and put back after."""
    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(before)


def assembled_model(
    config: G2PConfig,
    context: RunContext,
    letters: seq2seq.Vocabulary,
    phonemes: seq2seq.Vocabulary,
) -> tuple[seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble, dict[str, Any]]:
    """The `--members` runs' models in one ensemble (`mixture`), copied
    into this run, which trains nothing.

    Returns:
        `(model, record)`: `record` is `{"members": [...]}` for
        `metrics.json`: each run's record with `members`, its number of
        models.
    """
    runs = [
        load_finished_run(directory, "--members", letters, phonemes, config.stress, context)
        for directory in config.members or ()
    ]
    model = mixture(runs, context)
    models = [member for run in runs for member in run.models]
    backwards = sum(member.reads_right_to_left for member in models)
    progress(
        f"  assembled {len(models) - backwards} left-to-right and {backwards} "
        f"right-to-left encoder-decoders from {len(runs)} runs, "
        f"{model.count_params():,} parameters",
        context.is_chief,
    )
    return model, {"members": [{**run.record, "members": len(run.models)} for run in runs]}


def run(config: G2PConfig, context: RunContext) -> dict[str, Any]:
    """Train (or assemble `--members`), evaluate WER/PER on the test split,
    save and export."""
    splits = load_words(stress=config.stress, limit=config.limit, seed=config.seed)
    for line in start_lines(config, splits, context.directory.path):
        progress(line, context.is_chief)
    letters, phonemes = make_vocabularies(splits["train"])
    # One spec for the test decoding, the SavedModel and the LiteRT file.
    decoding = decoding_spec(splits["train"], config.beam_width, config.length_penalty)
    if config.members is not None:
        model, record = assembled_model(config, context, letters, phonemes)
    else:
        model, record = train_model(config, context, splits, letters, phonemes, decoding)
    context.save(model, export=False)
    litert_path = encoder_decoder.export_model(
        model,
        context,
        letters,
        phonemes,
        decoding=decoding,
        text=seq2seq.TextSpec(split="characters", lowercase=True, separator=" "),
        # A --quick run's file holds serving_default only: each bucket is a
        # graph of its own to trace and convert, most of the export's time.
        buckets=[]
        if config.quick
        else litert_buckets(splits["train"], decoding.max_target_length),
        litert_quantize=config.litert_quantize,
    )

    test_words = [word for word, _ in splits["test"]]
    references = [prons for _, prons in splits["test"]]
    progress(
        f"decoding {len(test_words):,} test words with beam {config.beam_width}...",
        context.is_chief,
    )
    predictions = predict(model, test_words, letters, phonemes, decoding)
    wer, per = error_rates(predictions, references, stress=False)
    if context.is_chief and model.has_attention:
        draw_test_alignments(model, test_words, letters, phonemes, decoding, context)
    baseline_wer, baseline_per = error_rates(
        nearest_spelling(splits["train"], test_words), references, stress=False
    )
    shown = predict(model, list(SHOWN_WORDS), letters, phonemes, decoding)
    examples = {
        word: " ".join(p)
        for word, p in [*zip(SHOWN_WORDS, shown), *zip(test_words[:5], predictions[:5])]
    }
    for word, pronunciation in examples.items():
        print(f"{word:>16}  {pronunciation}")
    metrics = {"test_wer": wer, "test_per": per}
    if config.stress:
        metrics["test_wer_stress"], metrics["test_per_stress"] = error_rates(
            predictions, references, stress=True
        )
    if litert_path is not None:
        metrics.update(
            litert_metrics(
                litert_path, test_words, references, letters, phonemes, config.litert_quantize
            )
        )
    return {
        **metrics,
        "test_wer_by_length": wer_by_length(test_words, predictions, references),
        "baseline_wer": baseline_wer,
        "baseline_per": baseline_per,
        "test_words": len(test_words),
        "train_words": len(splits["train"]),
        "parameters": model.count_params(),
        **record,
        "examples": examples,
    }
