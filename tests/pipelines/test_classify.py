"""`classify`: digits row by row (embedded) and imdb_reviews (TFDS, mocked)."""

import keras
import numpy as np
import pytest
import tensorflow_datasets as tfds
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from tests.pipelines.conftest import read_metrics


@pytest.mark.slow
def test_quick_run_on_digits_reports_accuracy_of_model_and_baseline(train):
    code, out = train("classify", "--quick", "--cell", "gru")
    assert code == 0
    metrics = read_metrics(out)
    assert metrics["args"]["bidirectional"] is True
    # Even one epoch of reading the rows in order beats averaging them.
    assert metrics["test_accuracy"] > metrics["baseline_test_accuracy"] + 0.1
    assert metrics["worse_than_baseline"] is False

    # The test split written out independently: 20 % stratified, seed 0;
    # each image read as 8 time steps of 8 pixels in [0, 1].
    digits = load_digits()
    _, test_x, _, test_y = train_test_split(
        digits.images / 16.0,
        digits.target,
        test_size=0.2,
        stratify=digits.target,
        random_state=0,
    )
    model = keras.saving.load_model(out / "model.keras")
    assert isinstance(
        model.get_layer("recurrent_1"), keras.layers.Bidirectional
    )
    predicted = model.predict(test_x.astype("float32"), verbose=0).argmax(
        axis=1
    )
    assert metrics["test_accuracy"] == pytest.approx(
        np.mean(predicted == test_y), abs=1e-6
    )
    # Through the LiteRT interpreter: the same classes, but where two
    # probabilities tie to float32 round-off (one digit at most).
    assert (out / "model.tflite").stat().st_size == metrics["litert_bytes"]
    assert metrics["litert_test_accuracy"] == pytest.approx(
        metrics["test_accuracy"], abs=1 / len(test_y) + 1e-9
    )


@pytest.mark.slow
def test_imdb_reviews_path_runs_on_mocked_tfds(train):
    with tfds.testing.mock_data(num_examples=24):
        code, out = train("classify", "--quick", "--data", "imdb_reviews")
    assert code == 0
    metrics = read_metrics(out)
    assert metrics["data"].startswith("TFDS imdb_reviews")
    model = keras.saving.load_model(out / "model.keras")
    assert model.get_layer("embedding").mask_zero
    # The reviews' file loops over any length; 24 reviews, one tie at most.
    assert (out / "model.tflite").exists()
    assert metrics["litert_test_accuracy"] == pytest.approx(
        metrics["test_accuracy"], abs=1 / 24 + 1e-9
    )
