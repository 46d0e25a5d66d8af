"""`tag`: CMUDict stress labels, majority baseline, entity F1, conll2003 path."""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from kerasrnn.seq2seq import Vocabulary
from kerasrnn_pipelines.tasks import tag
from tests.pipelines.conftest import read_metrics


@pytest.mark.slow
def test_stress_labels_of_known_pronunciations():
    # none for consonants, then stress 0, 1, 2 as ids 1, 2, 3.
    assert tag.stress_labels(("AH0", "B", "AW1", "T")) == [1, 0, 2, 0]
    assert tag.stress_labels(("T", "AH0", "M", "EY1", "T", "OW2")) == [
        0,
        1,
        0,
        2,
        0,
        3,
    ]
    tokens, labels = tag.stress_examples("train")
    examples = set(zip(tokens, map(tuple, labels)))
    # "about" and both "tomato"s are training words (crc32 % 20 = 11, 14).
    assert (("AH", "B", "AW", "T"), (1, 0, 2, 0)) in examples
    assert (("T", "AH", "M", "AA", "T", "OW"), (0, 1, 0, 2, 0, 3)) in examples
    assert all(len(t) == len(y) for t, y in zip(tokens, labels))


def test_majority_tagger_by_hand():
    majority = tag.majority_tagger(
        [("a", "b"), ("a", "c"), ("a", "b"), ("c",)],
        [(1, 0), (1, 0), (2, 3), (0,)],
    )
    # a: 1 twice, 2 once; b: 0 and 3 once each (first seen wins); c: 0
    # twice; unseen tokens get the overall majority, 0 (3 of 7).
    assert majority(("a", "b", "c", "zzz")) == [1, 0, 0, 0]


@pytest.mark.parametrize(
    "tags, spans",
    [
        (["B-PER", "I-PER", "O", "B-LOC"], {("PER", 0, 2), ("LOC", 3, 4)}),
        (["I-ORG", "I-ORG", "B-ORG"], {("ORG", 0, 2), ("ORG", 2, 3)}),
        (["B-PER", "I-LOC", "O"], {("PER", 0, 1), ("LOC", 1, 2)}),
        (["O", "O"], set()),
    ],
)
def test_entity_spans_read_iob2_as_conlleval_does(tags, spans):
    assert tag.entity_spans(tags) == spans


def test_entity_f1_by_hand():
    references = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predictions = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "B-MISC"]]
    # Gold 3 spans, predicted 3, right 2: P = R = 2/3, F1 = 2/3.
    assert tag.entity_f1(references, predictions) == pytest.approx(2 / 3)
    assert tag.entity_f1([["O"]], [["O"]]) == 0.0


@pytest.mark.slow
def test_quick_run_on_cmudict_and_serving(train, serve_without_kerasrnn):
    code, out = train("tag", "--quick", "--cell", "leaky")
    assert code == 0
    metrics = read_metrics(out)
    assert metrics["test_sequences"] == 1000
    model = keras.saving.load_model(out / "model.keras")

    # Both accuracies recomputed from the first 1,000 pronunciations of
    # each split (--quick's --limit), model.keras and a majority count
    # written out here.
    train_tokens, train_labels = (part[:1000] for part in tag.stress_examples("train"))
    test_tokens, test_labels = (part[:1000] for part in tag.stress_examples("test"))
    counts = collections.defaultdict(collections.Counter)
    for tokens, labels in zip(train_tokens, train_labels):
        for token, label in zip(tokens, labels):
            counts[token][label] += 1
    vocabulary = Vocabulary(sorted(counts))
    longest = max(map(len, test_tokens))
    padded = np.array(
        [vocabulary.encode(t) + [0] * (longest - len(t)) for t in test_tokens], "int32"
    )
    guesses = model.predict(padded, verbose=0).argmax(axis=-1)
    right = baseline_right = total = 0
    for tokens, labels, guessed in zip(test_tokens, test_labels, guesses):
        right += int(np.sum(guessed[: len(labels)] == labels))
        baseline_right += sum(
            counts[token].most_common(1)[0][0] == label
            for token, label in zip(tokens, labels)
        )
        total += len(labels)
    assert metrics["test_token_accuracy"] == pytest.approx(right / total, abs=1e-9)
    assert metrics["baseline_token_accuracy"] == pytest.approx(
        baseline_right / total, abs=1e-9
    )
    # Through the LiteRT interpreter: the same tags, but where two
    # probabilities tie to float32 round-off (a few tokens at most).
    assert (out / "model.tflite").stat().st_size == metrics["litert_bytes"]
    assert metrics["litert_test_token_accuracy"] == pytest.approx(
        metrics["test_token_accuracy"], abs=3 / total
    )
    ids = np.array([[5, 9, 3, 0, 0], [7, 2, 11, 4, 6]], "int32")
    expected = model.predict(ids, verbose=0)
    np.testing.assert_allclose(
        serve_without_kerasrnn(out / "saved_model", ids),
        expected,
        rtol=1e-5,
        atol=1e-6,
    )
    # Padding is masked: the first row's real steps do not see the zeros.
    np.testing.assert_allclose(
        model.predict(ids[:1, :3], verbose=0)[0],
        expected[0, :3],
        rtol=1e-5,
        atol=1e-6,
    )


NER = [
    "O",
    "B-PER",
    "I-PER",
    "B-ORG",
    "I-ORG",
    "B-LOC",
    "I-LOC",
    "B-MISC",
    "I-MISC",
]
SENTENCES = [
    (["John", "lives", "in", "Paris", "."], ["B-PER", "O", "O", "B-LOC", "O"]),
    (["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"]),
    (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
]


def conll_splits(self, split, **kwargs):
    """A conll2003-shaped split written here: tokens and NER tags aligned."""

    def examples():
        for index in range(12):
            tokens, tags = SENTENCES[index % len(SENTENCES)]
            yield {
                "tokens": tokens,
                "ner": [NER.index(t) for t in tags],
                "pos": [0] * len(tokens),
                "chunks": [0] * len(tokens),
            }

    return tf.data.Dataset.from_generator(
        examples,
        output_signature={
            "tokens": tf.TensorSpec([None], tf.string),
            "ner": tf.TensorSpec([None], tf.int64),
            "pos": tf.TensorSpec([None], tf.int64),
            "chunks": tf.TensorSpec([None], tf.int64),
        },
    )


@pytest.mark.slow
def test_conll2003_path_reports_entity_f1(train):
    with tfds.testing.mock_data(as_dataset_fn=conll_splits):
        code, out = train("tag", "--quick", "--data", "conll2003")
    assert code == 0
    metrics = read_metrics(out)
    # Every test token was seen in training with one tag, so the majority
    # baseline tags the test split perfectly.
    assert metrics["baseline_token_accuracy"] == 1.0
    assert metrics["baseline_entity_f1"] == 1.0


def test_misaligned_tfds_records_are_reported_with_position(train, capsys):
    # TFDS's random mock draws tokens and tags of independent lengths.
    with tfds.testing.mock_data(num_examples=4):
        code, _ = train("tag", "--quick", "--data", "conll2003")
    assert code == 1
    error = capsys.readouterr().err
    assert "kerasrnn-train tag: train record 0 has" in error
    assert "a tag is needed for every step" in error
