"""The TFDS translation path, offline with tfds.testing.mock_data."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn_pipelines.data.translation import (
    BUCKET_BOUNDARIES,
    TranslationConfig,
    batch_count,
    load_translation,
    most_frequent,
)


def test_vocabulary_keeps_the_most_frequent_words():
    vocabulary = most_frequent([["a", "b", "b"], ["c", "b", "a"], ["d"]], 2)
    assert vocabulary.tokens == ["b", "a"]
    assert vocabulary.encode(["a", "d"]) == [5, seq2seq.UNKNOWN_ID]


def test_batch_count_is_what_tf_data_groups_and_batches():
    # Lengths on both sides of every boundary, in groups of 1 to 7.
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 45, 60).tolist() + [7, 8, 15, 16, 23, 24, 31, 32]
    targets = [[4] * length for length in lengths]
    grouped = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant(targets, tf.int32)
    ).map(lambda t: t).bucket_by_sequence_length(
        element_length_func=lambda t: tf.shape(t)[0],
        bucket_boundaries=list(BUCKET_BOUNDARIES),
        bucket_batch_sizes=[3] * (len(BUCKET_BOUNDARIES) + 1),
    )
    assert batch_count(targets, 3) == sum(1 for _ in grouped)
    assert batch_count([[4] * 3, [4] * 7, [4] * 8, [4] * 40], 2) == 3


@pytest.mark.slow
def test_mock_ted_hrlr_trains_a_seq2seq_model():
    config = TranslationConfig(vocabulary_size=50, max_length=6, batch_size=8)
    with tfds.testing.mock_data(num_examples=24):
        datasets, source, target = load_translation(config)
    # Each split states its number of batches, so that Keras knows an
    # epoch's length before the first ends.
    for dataset in datasets.values():
        assert dataset.cardinality() == sum(1 for _ in dataset) > 0
    inputs, labels = next(iter(datasets["train"]))
    assert inputs["source"].shape[1] <= 6 and labels.shape[1] <= 7
    # Each target row: words, then exactly one <end>, then padding.
    for row in labels.numpy():
        ends = np.flatnonzero(row == seq2seq.END_ID)
        assert len(ends) == 1 and not row[ends[0] + 1 :].any() and row[: ends[0]].all()
    np.testing.assert_array_equal(inputs["decoder_input"][:, 0], seq2seq.START_ID)
    shifted = labels.numpy()[:, :-1]
    np.testing.assert_array_equal(
        inputs["decoder_input"][:, 1:], np.where(shifted == seq2seq.END_ID, 0, shifted)
    )
    model = seq2seq.Seq2Seq(source.size, target.size, kerasrnn.GRUCell(8), embedding_dim=8)
    model.compile(keras.optimizers.Adam(0.01), seq2seq.SequenceCrossEntropy())
    # The datasets shuffle themselves; `fit` shuffles only arrays.
    history = model.fit(
        datasets["train"], validation_data=datasets["validation"], epochs=3, shuffle=False,
        verbose=0,
    )
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_bad_config():
    with pytest.raises(ValueError, match="`max_length`.*Received: max_length=0"):
        TranslationConfig(max_length=0)
