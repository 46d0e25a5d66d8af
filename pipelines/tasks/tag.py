"""`tag`: many-to-many aligned tagging with a Bidirectional recurrent layer.

Every step of the input gets one label, read from both directions
(eq:rnn-bidir) and a softmax per step. Sequences of different lengths are
batched by length and padded; padding is masked in the model and carries
zero sample weight in the loss and metrics.

Embedded data: lexical stress on CMUDict (the `cmudict` package, BSD). The
input is a pronunciation's phonemes with the stress digits removed; the
label of each phoneme is its stress: `none` for a consonant, `0`, `1` or
`2` for a vowel. Every pronunciation of a word is one sequence; words are
split by `kerasrnn_pipelines.data.cmudict.split_of`. Online: TFDS `conll2003`
(named entities, IOB2 tags on word tokens).

The baseline, computed in the same run, is the per-token majority: each
phoneme (or word) gets the label it has most often in the training split
(unseen ones the overall majority).

Metrics: `test_token_accuracy` and `baseline_token_accuracy` (all tokens),
`litert_test_token_accuracy` and `litert_bytes` of `model.tflite` (a
`WHILE` loop over sequences of any length);
for CMUDict also `test_vowel_accuracy` / `baseline_vowel_accuracy` (the
tokens that carry stress) and `test_sequence_accuracy` (all labels of a
pronunciation right); for conll2003 `test_entity_f1` and
`baseline_entity_f1` (exact-match entity spans, as conlleval counts them).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import keras
import numpy as np

from kerasrnn.seq2seq import UNKNOWN_ID, Vocabulary
from kerasrnn.types import TensorLike
from kerasrnn_pipelines.data import cmudict as cmudict_data
from kerasrnn_pipelines.data.batching import (
    bucketed_batches,
    check_aligned,
    check_sequences,
)
from kerasrnn_pipelines.data.tfds import load_tfds
from kerasrnn_pipelines.litert_outputs import litert_metrics, write_litert
from kerasrnn_pipelines.recurrent import recurrent_stack

if TYPE_CHECKING:
    import tensorflow as tf

    from kerasrnn_pipelines.tasks.options.tag_config import TagConfig
    from kerasrnn_pipelines.training import RunContext

HEADLINE_METRIC = ("test_token_accuracy", "baseline_token_accuracy", "higher")

#: Stress labels of the CMUDict task: id -> name. Labels are classes, not
#: tokens: padding steps carry label 0 with sample weight 0.
STRESS_LABELS = ("none", "0", "1", "2")

#: One split: `(token sequences, label id sequences)`, aligned.
Examples: TypeAlias = tuple[list[Sequence[str]], list[list[int]]]


def stress_labels(phonemes: Iterable[str]) -> list[int]:
    """Label ids of `STRESS_LABELS` for ARPAbet phonemes with stress digits.

    `("AH0", "B", "AW1", "T")` -> `[1, 0, 2, 0]`.
    """
    return [
        0 if stress is None else 1 + int(stress)
        for stress in map(cmudict_data.stress_of, phonemes)
    ]


def stress_examples(split: str) -> Examples:
    """CMUDict pronunciations of one split as (phonemes, stress label ids)."""
    tokens: list[Sequence[str]] = []
    labels: list[list[int]] = []
    for _, pronunciations in cmudict_data.load_split(split):
        for phonemes in pronunciations:
            tokens.append(cmudict_data.strip_stress(phonemes))
            labels.append(stress_labels(phonemes))
    return tokens, labels


def conll_examples(dataset: tf.data.Dataset) -> Examples:
    """conll2003 sentences as (word tokens, NER tag ids)."""
    tokens: list[Sequence[str]] = []
    labels: list[list[int]] = []
    for example in dataset:
        words = [word.decode("utf-8") for word in example["tokens"].numpy()]
        if not words:
            continue
        tokens.append(words)
        labels.append(example["ner"].numpy().astype("int32").tolist())
    return tokens, labels


def load_examples(data: str, limit: int) -> tuple[dict[str, Examples], tuple[str, ...]]:
    """Token and label sequences per split, and the label names.

    Args:
        data: `--data`: `"embedded"` (CMUDict's stress) or `"conll2003"`
            (TFDS).
        limit: `--limit`: each split keeps only its first `limit`
            sequences; 0 keeps all.
    """
    label_names: tuple[str, ...]
    if data == "embedded":
        splits = {name: stress_examples(name) for name in cmudict_data.SPLITS}
        label_names = STRESS_LABELS
    else:
        datasets, info = load_tfds("conll2003", ["train", "validation", "test"])
        splits = {
            name: conll_examples(dataset)
            for name, dataset in zip(("train", "validation", "test"), datasets)
        }
        label_names = tuple(info.features["ner"].feature.names)
    if limit:
        splits = {
            name: (tokens[:limit], labels[:limit])
            for name, (tokens, labels) in splits.items()
        }
    return splits, label_names


def make_datasets(
    splits: dict[str, Examples], *, batch_size: int, shuffle: bool, seed: int
) -> tuple[Vocabulary, dict[str, tf.data.Dataset]]:
    """The vocabulary of the training tokens and every split's batches.

    Args:
        splits: Split name -> `(token sequences, label id sequences)`,
            as `load_examples` returns them.
        batch_size: Sequences per batch.
        shuffle: Reshuffle the training batches every epoch.
        seed: Their shuffle's seed.

    Returns:
        `(vocabulary, datasets)`: a `Vocabulary` of the training tokens and
        split name -> `tf.data.Dataset` of `(ids, labels, sample_weight)`
        batches grouped by length (only `"train"` shuffled).

    Raises:
        MalformedRecord: a record is empty, not integer, or has a label
            count different from its token count.
    """
    train_tokens, _ = splits["train"]
    vocabulary = Vocabulary(
        sorted({token for sequence in train_tokens for token in sequence})
    )
    datasets = {}
    for name, (tokens, labels) in splits.items():
        ids = check_sequences(
            [vocabulary.encode(s) for s in tokens], f"{name} tokens"
        )
        tags = check_sequences(labels, f"{name} labels")
        check_aligned(ids, tags, name)
        datasets[name] = bucketed_batches(
            ids,
            tags,
            batch_size,
            shuffle=shuffle and name == "train",
            seed=seed,
        )
    return vocabulary, datasets


def build_model(config: TagConfig, vocabulary: int, classes: int) -> keras.Model:
    """Embedding (masked) → Bidirectional stack (sequences) → per-step softmax.

    Every recurrent layer is handed the ids' padding mask and passes it on
    to the softmax's outputs, whichever Keras runs it, so that the loss and
    metrics count real steps only.
    """
    inputs = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    embedding = keras.layers.Embedding(
        vocabulary, config.embedding, mask_zero=True, name="embedding"
    )
    mask = embedding.compute_mask(inputs)
    states = recurrent_stack(embedding(inputs), config, return_sequences=True, mask=mask)
    outputs = keras.layers.Dense(classes, activation="softmax", name="tags")(
        states
    )
    return keras.Model(inputs, outputs, name="sequence_tagger")


def compile_model(model: keras.Model, context: RunContext) -> None:
    """Per-step cross-entropy and accuracy weighted to skip padding."""
    context.compile(
        model,
        loss="sparse_categorical_crossentropy",
        weighted_metrics=["accuracy"],
    )


def majority_tagger(
    tokens: Iterable[Sequence[Hashable]], labels: Iterable[Sequence[int]]
) -> Callable[[Sequence[Hashable]], list[int]]:
    """Per-token majority label from training pairs; unseen -> overall majority."""
    per_token: collections.defaultdict[Hashable, collections.Counter[int]] = (
        collections.defaultdict(collections.Counter)
    )
    overall: collections.Counter[int] = collections.Counter()
    for sequence, tags in zip(tokens, labels):
        for token, tag in zip(sequence, tags):
            per_token[token][tag] += 1
            overall[tag] += 1
    fallback = overall.most_common(1)[0][0]
    table = {
        token: counts.most_common(1)[0][0]
        for token, counts in per_token.items()
    }
    return lambda sequence: [table.get(token, fallback) for token in sequence]


def entity_spans(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """Entity spans `(type, start, end)` of an IOB2 tag sequence.

    A span starts at `B-X`, or at an `I-X` that does not continue an `X`
    span (conlleval's reading), and runs while `I-X` follows.
    """
    spans: set[tuple[str, int, int]] = set()
    start: int | None = None
    kind: str | None = None
    for position, tag in enumerate([*tags, "O"]):
        prefix, _, tag_kind = tag.partition("-")
        continues = prefix == "I" and tag_kind == kind
        if start is not None and kind is not None and not continues:
            spans.add((kind, start, position))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and not continues):
            start, kind = position, tag_kind
    return spans


def entity_f1(
    references: Iterable[Sequence[str]], predictions: Iterable[Sequence[str]]
) -> float:
    """Micro F1 of exact entity spans over sentences of IOB2 tag names."""
    true_positive = found = expected = 0
    for reference, prediction in zip(references, predictions):
        gold, guessed = entity_spans(reference), entity_spans(prediction)
        true_positive += len(gold & guessed)
        found += len(guessed)
        expected += len(gold)
    if true_positive == 0:
        return 0.0
    precision, recall = true_positive / found, true_positive / expected
    return 2 * precision * recall / (precision + recall)


def predict_tags(
    predict: Callable[[TensorLike], np.ndarray], dataset: tf.data.Dataset
) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Run a tagger over a dataset of `(ids, labels, weights)` batches.

    Args:
        predict: `ids (batch, time) -> (batch, time, classes)` scores (the
            model's `predict_on_batch`, or the LiteRT file's).
        dataset: The batches.

    Returns:
        `(token_ids, references, predictions)`: per sequence, in the
        dataset's (bucketed) order, cut to the sequence's real length.
    """
    token_ids: list[list[int]] = []
    references: list[list[int]] = []
    predictions: list[list[int]] = []
    for inputs, labels, weights in dataset:
        guessed = np.argmax(predict(inputs), axis=-1)
        lengths = np.sum(weights.numpy() > 0, axis=1)
        for row, length in enumerate(lengths):
            token_ids.append(inputs.numpy()[row, :length].tolist())
            references.append(labels.numpy()[row, :length].tolist())
            predictions.append(guessed[row, :length].tolist())
    return token_ids, references, predictions


def token_accuracy(
    references: Iterable[Sequence[int]],
    predictions: Iterable[Sequence[int]],
    keep: Callable[[int], bool] = lambda label: True,
) -> float:
    """Fraction of tokens (whose reference `keep` accepts) tagged right."""
    right = total = 0
    for reference, prediction in zip(references, predictions):
        for gold, guess in zip(reference, prediction):
            if keep(gold):
                total += 1
                right += gold == guess
    return right / total


def run(config: TagConfig, context: RunContext) -> dict[str, Any]:
    """Train the tagger; report token accuracy beside the majority baseline."""
    splits, label_names = load_examples(config.data, config.limit)
    train_tokens, train_labels = splits["train"]
    vocabulary, datasets = make_datasets(
        splits, batch_size=config.batch_size, shuffle=config.shuffle, seed=config.seed
    )
    with context.scope():
        model = build_model(config, vocabulary.size, len(label_names))
        compile_model(model, context)
    context.fit(model, datasets["train"], datasets["validation"])
    context.save(model)
    litert = write_litert(context, model, litert_quantize=config.litert_quantize)

    token_ids, references, predictions = predict_tags(model.predict_on_batch, datasets["test"])
    majority = majority_tagger(train_tokens, train_labels)
    # Unseen tokens decode to None, which the majority tagger, having never
    # seen them either, gives the overall majority.
    id_to_token = vocabulary.id_to_token()
    baseline = [
        majority([None if i == UNKNOWN_ID else id_to_token[i] for i in sequence])
        for sequence in token_ids
    ]
    metrics = {
        "test_token_accuracy": token_accuracy(references, predictions),
        "baseline_token_accuracy": token_accuracy(references, baseline),
        "test_sequence_accuracy": float(
            np.mean([r == p for r, p in zip(references, predictions)])
        ),
        "test_sequences": len(references),
        **litert_metrics(
            litert,
            config.litert_quantize,
            lambda predict: {
                "litert_test_token_accuracy": token_accuracy(
                    *predict_tags(lambda ids: predict(ids.numpy()), datasets["test"])[1:]
                )
            },
        ),
    }
    if config.data == "embedded":

        def is_vowel(label: int) -> bool:
            """Whether a stress label is a vowel's (consonants are 0)."""
            return label > 0

        metrics["test_vowel_accuracy"] = token_accuracy(
            references, predictions, is_vowel
        )
        metrics["baseline_vowel_accuracy"] = token_accuracy(
            references, baseline, is_vowel
        )
    else:

        def names(sequences: list[list[int]]) -> list[list[str]]:
            """NER tag ids as their names (`B-PER`, ...)."""
            return [
                [label_names[i] for i in sequence] for sequence in sequences
            ]

        metrics["test_entity_f1"] = entity_f1(
            names(references), names(predictions)
        )
        metrics["baseline_entity_f1"] = entity_f1(
            names(references), names(baseline)
        )
    return metrics
