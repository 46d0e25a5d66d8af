"""Faults: datasets missing offline, NaN losses, and a run killed mid-way."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from argparse import Namespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from pipelines.data.tfds import load_tfds
from pipelines.faults import DatasetNotOnDisk, TrainingDiverged
from pipelines.training import RunContext
from tests.pipelines.conftest import REPOSITORY, subprocess_env


def test_a_tfds_dataset_missing_offline_fails_at_once_saying_how_to_get_it(
    tmp_path,
):
    with pytest.raises(DatasetNotOnDisk) as error:
        load_tfds("imdb_reviews", ["train"], data_dir=str(tmp_path))
    message = str(error.value)
    assert "TFDS dataset 'imdb_reviews' is not on disk" in message
    assert "tfds build imdb_reviews" in message
    assert "--data embedded" in message


def test_an_unknown_tfds_name_is_reported(tmp_path):
    with pytest.raises(
        DatasetNotOnDisk, match="TFDS has no dataset named 'no_such_set'"
    ):
        load_tfds("no_such_set", ["train"], data_dir=str(tmp_path))


def test_the_command_line_reports_a_missing_dataset(
    train, capsys, monkeypatch, tmp_path
):
    # TFDS reads its data directory at import; point the default at an empty one.
    import tensorflow_datasets as tfds

    monkeypatch.setattr(
        tfds.core.constants, "DATA_DIR", str(tmp_path / "empty")
    )
    code, _ = train("tag", "--quick", "--data", "conll2003")
    assert code == 1
    error = capsys.readouterr().err
    assert (
        "kerasrnn-train tag: TFDS dataset 'conll2003' is not on disk" in error
    )


class RecordWeights(keras.callbacks.Callback):
    """Keeps a copy of the weights at each epoch end (the reference)."""

    def __init__(self):
        super().__init__()
        self.by_epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.by_epoch.append([w.copy() for w in self.model.get_weights()])


def test_a_nan_loss_stops_training_and_keeps_the_last_good_weights(
    tmp_path, rng
):
    x = rng.normal(size=(32, 4, 2)).astype("float32")
    y = rng.normal(size=(32, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    config = Namespace(epochs=5, learning_rate=0.01, clipnorm=None)
    context = RunContext(config, tf.distribute.get_strategy(), tmp_path)
    model = keras.Sequential(
        [keras.Input((4, 2)), keras.layers.SimpleRNN(3), keras.layers.Dense(1)]
    )
    # Sane for the first epoch (4 steps), then a step size that overflows.
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay(
        [4], [0.01, 1e38]
    )
    model.compile(optimizer=keras.optimizers.SGD(schedule), loss="mse")
    recorder = RecordWeights()
    with pytest.raises(TrainingDiverged) as error:
        context.fit(model, dataset, callbacks=[recorder])
    message = str(error.value)
    assert "at epoch 2, batch" in message
    assert "last_good.weights.h5" in message
    assert len(recorder.by_epoch) == 1  # epoch 2 never finished
    for kept, reference in zip(model.get_weights(), recorder.by_epoch[0]):
        np.testing.assert_array_equal(kept, reference)
    fresh = keras.models.clone_model(model)
    fresh.load_weights(tmp_path / "last_good.weights.h5")
    for kept, reference in zip(fresh.get_weights(), recorder.by_epoch[0]):
        np.testing.assert_array_equal(kept, reference)
    # The backup stays at the last finished epoch, for a rerun to resume.
    metadata = json.loads(
        (tmp_path / "backup" / "training_metadata.json").read_text()
    )
    assert metadata["epoch"] == 1


def test_the_command_line_reports_a_diverged_run(train, capsys):
    code, out = train("forecast", "--quick", "--learning-rate", "1e30")
    assert code == 1
    error = capsys.readouterr().err
    assert "kerasrnn-train forecast: the training loss became" in error
    assert "--clipnorm" in error
    assert not (out / "metrics.json").exists()


def raw_rows(path):
    if not path.exists():
        return []
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_killing_a_run_and_rerunning_it_loses_no_finished_epoch(
    tmp_path, train, capsys
):
    out = tmp_path / "run"
    argv = ["forecast", "--quick", "--epochs", "40", "--window", "4"]
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines", *argv, "--out", str(out)],
        cwd=REPOSITORY,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while len(raw_rows(out / "history_raw.csv")) < 3:
            assert process.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    before = {
        int(row["epoch"]): float(row["loss"])
        for row in raw_rows(out / "history_raw.csv")
    }
    backed_up = json.loads(
        (out / "backup" / "training_metadata.json").read_text()
    )["epoch"]
    # Three logged epochs mean the second was backed up before the third began.
    assert 2 <= backed_up < 40 and not (out / "metrics.json").exists()

    capsys.readouterr()
    code, _ = train(*argv, out=out)
    assert code == 0
    printed = capsys.readouterr().out
    # The rerun starts after the last backed-up epoch, not at epoch 1.
    assert f"Epoch {backed_up + 1}/40" in printed
    assert "Epoch 1/40" not in printed
    with open(out / "history.csv") as handle:
        history = list(csv.DictReader(handle))
    assert [int(row["epoch"]) for row in history] == list(range(1, 41))
    for row in history[:backed_up]:
        assert float(row["loss"]) == before[int(row["epoch"]) - 1]
    assert not (out / "backup").exists()
