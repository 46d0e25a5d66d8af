"""`charlm`: truncated-BPTT batches, the unigram baseline, sampling, TFDS."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from kerasrnn.seq2seq import Vocabulary
from kerasrnn_pipelines.options import ConfigError
from kerasrnn_pipelines.tasks import charlm
from kerasrnn_pipelines.tasks.options.charlm_config import CharLMConfig
from tests.pipelines.conftest import read_metrics


def test_stream_batches_carry_each_stream_through_consecutive_chunks():
    # 0..24 with B=2 streams of 12 characters, T=3: stream 0 is 0..11,
    # stream 1 is 12..23; batch k holds chunk k of both.
    batches = [
        (x.numpy(), y.numpy())
        for x, y in charlm.stream_batches(np.arange(25, dtype="int32"), 2, 3)
    ]
    assert len(batches) == 4
    np.testing.assert_array_equal(batches[0][0], [[0, 1, 2], [12, 13, 14]])
    np.testing.assert_array_equal(batches[1][0], [[3, 4, 5], [15, 16, 17]])
    np.testing.assert_array_equal(batches[3][0], [[9, 10, 11], [21, 22, 23]])
    np.testing.assert_array_equal(batches[3][1], [[10, 11, 12], [22, 23, 24]])
    with pytest.raises(
        ValueError, match="need at least 7 characters; received a text of 5"
    ):
        charlm.stream_batches(np.arange(5, dtype="int32"), 2, 3)


def test_unigram_bits_per_char_by_hand():
    # Training "aab": symbols unknown, a, b with add-one counts (1, 3, 2),
    # p = (1/6, 1/2, 1/3); validation "ab" costs -(log2 1/2 + log2 1/3) / 2.
    vocabulary, train_ids, validation_ids = charlm.encode_texts("aab", "ab")
    assert vocabulary.id_to_token()[4:] == ["a", "b"]
    value = charlm.unigram_bits_per_char(train_ids, validation_ids, vocabulary.size)
    assert value == pytest.approx((1 + math.log2(3)) / 2)
    # An unseen validation character reads as unknown, probability 1/6.
    _, train_ids, validation_ids = charlm.encode_texts("aab", "z")
    value = charlm.unigram_bits_per_char(train_ids, validation_ids, vocabulary.size)
    assert value == pytest.approx(math.log2(6))


def test_states_are_reset_at_each_epoch_and_before_evaluation():
    config = CharLMConfig(cell="elman", units=4)
    model = charlm.build_model(
        config, vocabulary=5, batch_size=2, stateful=True
    )
    layer = model.get_layer("recurrent_1")
    callback = charlm.ResetStates()
    callback.set_model(model)

    def state_norm():
        return sum(
            float(np.abs(keras.ops.convert_to_numpy(s)).sum())
            for s in layer.states
        )

    for hook in (lambda: callback.on_epoch_begin(1), callback.on_test_begin):
        model(np.ones((2, 3), "int32"))
        assert state_norm() > 0  # the state carried over from the batch
        hook()
        assert state_norm() == 0


@pytest.mark.slow
def test_quick_run_reports_bits_per_char_and_samples(train, capsys):
    code, out = train("charlm", "--quick")
    assert code == 0
    metrics = read_metrics(out)
    assert set(metrics["samples"]) == {"0.5", "1.0", "1.5"}
    assert all(len(text) == 20 for text in metrics["samples"].values())
    assert "sample at temperature 1.5" in capsys.readouterr().out
    # The exported model is stateless and batch-free.
    characters = json.loads((out / "vocabulary.json").read_text())
    assert len(characters) == metrics["vocabulary_size"]
    model = keras.saving.load_model(out / "model.keras")
    logits = model.predict(np.array([[1, 2, 3, 4]] * 3, "int32"), verbose=0)
    assert logits.shape == (3, 4, len(characters))
    # Two epochs over 4,000 characters already beat the unigram baseline.
    assert metrics["val_bits_per_char"] < metrics["unigram_bits_per_char"]


TRAIN_TEXT = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 8
)
VALIDATION_TEXT = "All:\nSpeak, speak.\n" * 12


def tiny_shakespeare_splits(self, split, **kwargs):
    """TFDS's tiny_shakespeare layout: one example per split, all its text."""
    text = TRAIN_TEXT if split == "train" else VALIDATION_TEXT
    return tf.data.Dataset.from_tensor_slices({"text": [text]})


@pytest.mark.slow
def test_tiny_shakespeare_path_reads_tfds_text(train):
    with tfds.testing.mock_data(as_dataset_fn=tiny_shakespeare_splits):
        code, out = train(
            "charlm", "--quick", "--epochs", "1", "--data", "tiny_shakespeare"
        )
    assert code == 0
    metrics = read_metrics(out)
    assert metrics["data"].startswith("TFDS tiny_shakespeare")
    assert metrics["train_characters"] == len(TRAIN_TEXT)
    assert metrics["validation_characters"] == len(VALIDATION_TEXT)
    characters = json.loads((out / "vocabulary.json").read_text())
    assert characters == Vocabulary(sorted(set(TRAIN_TEXT))).id_to_token()
    assert characters[:4] == ["<pad>", "<start>", "<end>", "<unk>"]


def test_charlm_refuses_distribution():
    with pytest.raises(ConfigError, match="--strategy: .*received 'mirrored'"):
        CharLMConfig(strategy="mirrored")
