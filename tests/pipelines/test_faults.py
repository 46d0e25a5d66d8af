"""Faults: datasets missing offline, NaN losses, a run killed mid-way, and
the torn backups a kill can leave."""

import csv
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from argparse import Namespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn_pipelines.backups import TrainingBackup
from kerasrnn_pipelines.data.tfds import held_log_records, load_tfds
from kerasrnn_pipelines.faults import (
    BackupOfAnotherRun,
    BackupUnusable,
    DatasetNotOnDisk,
    TrainingDiverged,
)
from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.tasks import load_task
from kerasrnn_pipelines.training import RunContext, baseline_verdict
from tests.isolated import REPOSITORY, subprocess_env
from tests.pipelines.conftest import read_metrics
from tests.pipelines.interruptions import KillAtEpochBegin, Killed


def test_a_tfds_dataset_missing_offline_fails_at_once_saying_how_to_get_it(
    tmp_path,
):
    with pytest.raises(DatasetNotOnDisk) as error:
        load_tfds("imdb_reviews", ["train"], data_dir=str(tmp_path))
    message = str(error.value)
    assert "TFDS dataset 'imdb_reviews' is not on disk" in message
    assert "tfds build imdb_reviews" in message


def test_log_records_are_held_inside_the_block_only(caplog):
    logger = logging.getLogger("absl")
    with held_log_records("absl") as held:
        logger.warning("inside %s", "the block")
    logger.warning("after it")
    assert [record.getMessage() for record in held] == ["inside the block"]
    assert [record.getMessage() for record in caplog.records] == ["after it"]


def test_an_unknown_tfds_name_is_reported(tmp_path):
    with pytest.raises(
        DatasetNotOnDisk, match="TFDS has no dataset named 'no_such_set'"
    ):
        load_tfds("no_such_set", ["train"], data_dir=str(tmp_path))


@pytest.mark.slow
def test_the_command_line_reports_a_missing_dataset(
    train, capsys, caplog, monkeypatch, tmp_path
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
    assert "`kerasrnn-train tag --data embedded` runs now" in error
    # TFDS's own notice of a version folder without dataset_info.json is
    # held back: the one line above says what is missing.
    assert not [record for record in caplog.records if "dataset_info" in record.getMessage()]

    # translate has no data of its own: no offline hint it cannot follow.
    code, _ = train("translate", "--quick", out=tmp_path / "translate")
    assert code == 1
    error = capsys.readouterr().err
    assert (
        "kerasrnn-train translate: TFDS dataset 'ted_hrlr_translate/pt_to_en' "
        "is not on disk" in error
    )
    assert "--data embedded" not in error
    # Stopped before its first write, the run leaves no directory behind.
    assert not (tmp_path / "translate").exists()


def claim(path):
    """The run directory of a test that trains through `RunContext`."""
    return claim_run_directory(
        path, "test", {}, restart=False, overwrite=False
    )


def backed_up_epochs(backup):
    """Epochs of a backup directory's complete generations, newest first."""
    if not backup.is_dir():
        return []
    return sorted(
        (
            int(entry.name.removeprefix("epoch-"))
            for entry in backup.iterdir()
            if entry.name.startswith("epoch-") and entry.name[6:].isdigit()
        ),
        reverse=True,
    )


class RecordWeights(keras.callbacks.Callback):
    """Keeps a copy of the weights at each epoch end (the reference)."""

    def __init__(self):
        super().__init__()
        self.by_epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.by_epoch.append([w.copy() for w in self.model.get_weights()])


@pytest.mark.slow
def test_a_nan_loss_stops_training_and_keeps_the_last_good_weights(
    tmp_path, rng
):
    x = rng.normal(size=(32, 4, 2)).astype("float32")
    y = rng.normal(size=(32, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    config = Namespace(epochs=5, learning_rate=0.01, clipnorm=None)
    context = RunContext(config, tf.distribute.get_strategy(), claim(tmp_path))
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
    assert backed_up_epochs(tmp_path / "backup") == [1]
    metadata = json.loads(
        (tmp_path / "backup" / "epoch-000001" / "training_metadata.json")
        .read_text()
    )
    assert metadata["epoch"] == 1


@pytest.mark.slow
def test_the_command_line_reports_a_diverged_run(train, capsys):
    code, out = train("forecast", "--quick", "--learning-rate", "1e30")
    assert code == 1
    error = capsys.readouterr().err
    assert "kerasrnn-train forecast: the training loss became" in error
    assert "--clipnorm" in error
    assert not (out / "metrics.json").exists()


def raw_rows(path):
    """The complete rows of a raw epoch log (a kill may cut the last one)."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.endswith("\n")]
    return list(csv.DictReader(lines))


def start_run(argv, out, log=None):
    """`kerasrnn-train ARGV --out OUT` as a real process, output to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "kerasrnn_pipelines", *argv, "--out", str(out)],
        cwd=REPOSITORY,
        env=dict(subprocess_env(), PYTHONUNBUFFERED="1"),
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        # Lower priority, so that on busy cores the polling test always
        # sees what it waits for long before the run moves on.
        preexec_fn=lambda: os.nice(10),
    )


def kill_when(process, ready):
    """SIGKILL `process` as soon as `ready()` holds (polled every 20 ms)."""
    try:
        # Only a hang guard: importing TensorFlow on two busy cores is slow.
        deadline = time.monotonic() + 900
        while not ready():
            assert process.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.slow
def test_killing_a_run_and_rerunning_it_loses_no_finished_epoch(
    tmp_path, train, capsys
):
    out = tmp_path / "run"
    # Shuffled batches and dropout masks: what the rerun must draw as the
    # uninterrupted run draws them.
    argv = [
        "forecast", "--quick", "--epochs", "40", "--window", "4", "--cell-dropout", "0.3",
    ]
    # Wherever the kill lands (mid-epoch, mid-row, mid-backup), the rerun
    # must resume from the newest complete backup.
    kill_when(
        start_run(argv, out),
        lambda: len(raw_rows(out / "history_raw.csv")) >= 3,
    )
    before = {
        int(row["epoch"]): float(row["loss"])
        for row in raw_rows(out / "history_raw.csv")
    }
    backed_up = backed_up_epochs(out / "backup")[0]
    # Three logged epochs mean the second was backed up before the third's
    # row; the kill came before the end (40 epochs leave the backup in place).
    assert 2 <= backed_up < 40 and not (out / "metrics.json").exists()
    first_sitting_training = json.loads(
        (out / "backup" / f"epoch-{backed_up:06d}" / "training_metadata.json").read_text()
    )["training_seconds"]

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

    # It ends where the same command run without a kill ends, to the digit.
    code, whole = train(*argv, out=tmp_path / "uninterrupted")
    assert code == 0
    assert (out / "history.csv").read_text() == (whole / "history.csv").read_text()
    resumed, uninterrupted = read_metrics(out), read_metrics(whole)
    # The resumed run's training time counts its first sitting's epochs.
    assert resumed["training_time_s"] > first_sitting_training
    for report in (resumed, uninterrupted):
        del report["wall_time_s"], report["training_time_s"], report["args"]["out"]
        # Its tensors are named after the layers, whose default names count
        # up within one process (rnn, rnn_1, ...): a second run in this
        # process writes other names, not other numbers.
        del report["litert_bytes"]
    assert resumed == uninterrupted


@pytest.mark.slow
def test_kills_after_the_last_epoch_resume_without_training_or_find_the_run_complete(
    tmp_path, train, capsys
):
    out = tmp_path / "run"
    argv = ["forecast", "--quick", "--epochs", "3", "--window", "4"]
    staged = out / ".outputs.partial" / "model.keras"
    # Killed while the final outputs are written (the SavedModel export
    # takes seconds): trained to the end, nothing committed yet.
    kill_when(start_run(argv, out), staged.exists)
    assert backed_up_epochs(out / "backup") == [3, 2]
    assert not (out / "metrics.json").exists()
    assert not (out / "model.keras").exists()
    trained = tmp_path / "epoch-3.weights.h5"
    shutil.copyfile(
        out / "backup" / "epoch-000003" / "model.weights.h5", trained
    )

    # The rerun resumes after epoch 3 and trains nothing; killed as soon as
    # metrics.json is in place, with or without its backup removed.
    with open(tmp_path / "rerun.log", "w") as log:
        kill_when(
            start_run(argv, out, log), (out / "metrics.json").exists
        )
    printed = (tmp_path / "rerun.log").read_text()
    assert f"Resuming after epoch 3 from {out / 'backup'}." in printed
    assert "Epoch " not in printed

    capsys.readouterr()
    code, _ = train(*argv, out=out)
    assert code == 0
    printed = capsys.readouterr().out
    assert f"the run in {out} is already complete" in printed
    assert "Epoch " not in printed
    assert not (out / "backup").exists()
    assert not (out / ".outputs.partial").exists()
    # The model is epoch 3's backup, not a model trained again.
    model = keras.saving.load_model(out / "model.keras")
    final = [weights.copy() for weights in model.get_weights()]
    model.load_weights(trained)
    for a, b in zip(final, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with open(out / "history.csv") as handle:
        assert [line.split(",")[0] for line in handle][1:] == ["1", "2", "3"]


@pytest.mark.slow
def test_a_run_worse_than_its_baseline_says_so(train, capsys):
    code, out = train("forecast", "--quick", "--learning-rate", "1e6")
    assert code == 0
    metrics = read_metrics(out)
    assert metrics["test_rmse"] > 1000 * metrics["persistence_rmse"]
    assert metrics["worse_than_baseline"] is True
    (warning,) = capsys.readouterr().err.splitlines()[-1:]
    assert warning.startswith(
        "kerasrnn-train forecast: warning: test_rmse "
    )
    assert "is worse than the baseline's persistence_rmse" in warning


@pytest.mark.parametrize(
    "task, metrics, worse",
    [
        ("forecast", {"test_rmse": 20.0, "persistence_rmse": 25.0}, False),
        ("forecast", {"test_rmse": 30.0, "persistence_rmse": 25.0}, True),
        ("forecast", {"test_rmse": math.nan, "persistence_rmse": 25.0}, True),
        (
            "classify",
            {"test_accuracy": 0.9, "baseline_test_accuracy": 0.6},
            False,
        ),
        (
            "classify",
            {"test_accuracy": 0.5, "baseline_test_accuracy": 0.6},
            True,
        ),
    ],
)
def test_the_headline_metric_is_compared_with_the_baseline_the_way_it_improves(
    task, metrics, worse
):
    verdict, warning = baseline_verdict(load_task(task), metrics)
    assert verdict is worse
    (name, baseline, better) = load_task(task).HEADLINE_METRIC
    assert f"{baseline}" in warning and f"({better} is better)" in warning


def test_a_backup_written_with_other_options_is_left_alone_not_damaged(
    tmp_path, rng
):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    model.optimizer.build(model.trainable_variables)
    TrainingBackup(tmp_path, "forecast", {"seed": 0}).save(model, 2)
    before = (tmp_path / "epoch-000002" / "model.weights.h5").read_bytes()
    for task, fingerprint, what in [
        ("forecast", {"seed": 1}, "a run with other options (--seed 0 there, 1 now)"),
        ("g2p", {"seed": 0}, "a forecast run"),
    ]:
        with pytest.raises(BackupOfAnotherRun) as error:
            TrainingBackup(tmp_path, task, fingerprint).restore(model)
        assert str(error.value) == (
            f"{tmp_path / 'epoch-000002'} was written by {what}; this run "
            "leaves it in place and does not resume from it: pass another --out"
        )
    assert (tmp_path / "epoch-000002" / "model.weights.h5").read_bytes() == before
    assert TrainingBackup(tmp_path, "forecast", {"seed": 0}).restore(model) == 2


class KillAfterAPause(keras.callbacks.Callback):
    """Raises `Killed` a second into epoch `epoch` (0-based): time an
    interrupted epoch spent."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            time.sleep(1.0)
            raise Killed()


@pytest.mark.slow
def test_training_time_sums_the_sittings_without_the_killed_epoch(tmp_path, rng):
    dataset, model_and_context = resumable_setup(tmp_path, rng, epochs=4)
    model, context = model_and_context()
    began = time.perf_counter()
    with pytest.raises(Killed):
        context.fit(model, dataset, callbacks=[KillAfterAPause(2)])
    first_sitting = time.perf_counter() - began
    metadata = tmp_path / "backup" / "epoch-000002" / "training_metadata.json"
    recorded = json.loads(metadata.read_text())["training_seconds"]
    # Two epochs, written before the pause and the kill.
    assert 0 < recorded < first_sitting - 1.0

    model, context = model_and_context()
    began = time.perf_counter()
    context.fit(model, dataset)
    second_sitting = time.perf_counter() - began
    # Both sittings' epochs, and not the second the killed epoch spent.
    assert recorded < context.backup.training_seconds < recorded + second_sitting


@pytest.mark.slow
def test_a_backup_that_did_not_record_training_time_leaves_it_unknown(tmp_path, rng):
    dataset, model_and_context = resumable_setup(tmp_path, rng, epochs=3)
    model, context = model_and_context()
    with pytest.raises(Killed):
        context.fit(model, dataset, callbacks=[KillAtEpochBegin(2)])
    # As an earlier release wrote it.
    for generation in backed_up_epochs(tmp_path / "backup"):
        metadata = tmp_path / "backup" / f"epoch-{generation:06d}" / "training_metadata.json"
        fields = json.loads(metadata.read_text())
        del fields["training_seconds"]
        metadata.write_text(json.dumps(fields))

    model, context = model_and_context()
    context.fit(model, dataset)
    assert context.backup.training_seconds is None
    written = tmp_path / "backup" / "epoch-000003" / "training_metadata.json"
    assert "training_seconds" not in json.loads(written.read_text())


def resumable_setup(tmp_path, rng, epochs):
    x = rng.normal(size=(24, 5, 2)).astype("float32")
    y = rng.normal(size=(24, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    config = Namespace(epochs=epochs, learning_rate=0.05, clipnorm=None)
    run_directory = claim(tmp_path)

    def model_and_context():
        keras.utils.set_random_seed(11)  # the same initial weights each time
        model = keras.Sequential(
            [
                keras.Input((5, 2)),
                keras.layers.SimpleRNN(4),
                keras.layers.Dense(1),
            ]
        )
        # Adam: resuming must restore its moments and step count too.
        model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
        strategy = tf.distribute.get_strategy()
        return model, RunContext(config, strategy, run_directory)

    return dataset, model_and_context


def damage(generation, how):
    """What a kill or a bad disk can leave of a generation's files."""
    metadata = generation / "training_metadata.json"
    weights = generation / "model.weights.h5"
    if how == "empty metadata":  # the failure seen: truncated, never rewritten
        metadata.write_text("")
    elif how == "half the metadata":
        metadata.write_text(metadata.read_text()[:10])
    elif how == "half the weights":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif how == "weights of another epoch":
        other = generation.with_name("epoch-000003") / "model.weights.h5"
        shutil.copyfile(other, weights)
    elif how == "no weights":
        weights.unlink()


@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    [
        "empty metadata",
        "half the metadata",
        "half the weights",
        "weights of another epoch",
        "no weights",
    ],
)
def test_a_torn_newest_backup_resumes_from_the_one_before_losing_nothing(
    tmp_path, rng, capsys, how
):
    dataset, model_and_context = resumable_setup(tmp_path, rng, epochs=6)
    # The reference: the same training, never interrupted, no backups.
    reference, _ = model_and_context()
    reference_weights = RecordWeights()
    reference_loss = reference.fit(
        dataset,
        epochs=6,
        shuffle=False,
        verbose=0,
        callbacks=[reference_weights],
    ).history["loss"]

    model, context = model_and_context()
    with pytest.raises(Killed):
        context.fit(model, dataset, callbacks=[KillAtEpochBegin(4)])
    backup = tmp_path / "backup"
    assert backed_up_epochs(backup) == [4, 3]  # two generations kept
    damage(backup / "epoch-000004", how)
    # A kill while writing epoch 5: its row cut short, its backup unfinished.
    with open(tmp_path / "history_raw.csv", "a", newline="") as handle:
        handle.write("4,0.12")
    shutil.copytree(backup / "epoch-000003", backup / "epoch-000005.partial")
    damage(backup / "epoch-000005.partial", "half the weights")

    capsys.readouterr()
    model, context = model_and_context()
    resumed = RecordWeights()
    history = context.fit(model, dataset, callbacks=[resumed])
    printed = capsys.readouterr().out
    assert "The newest backup is damaged" in printed
    assert "Resuming after epoch 3" in printed
    # Epochs 4, 5 and 6 were trained again, from exactly epoch 3's state.
    assert len(resumed.by_epoch) == 3
    for got, want in zip(resumed.by_epoch, reference_weights.by_epoch[3:]):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert history["epoch"] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(history["loss"], reference_loss, rtol=1e-5)
    with open(context.write_dir / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["epoch"]) for row in rows] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(
        [float(row["loss"]) for row in rows], reference_loss, rtol=1e-5
    )
    # Removed only once the run's outputs are committed, not by `fit`.
    assert backed_up_epochs(backup) == [6, 5]


@pytest.mark.slow
def test_a_backup_with_no_usable_generation_is_refused_not_restarted(
    tmp_path, rng
):
    dataset, model_and_context = resumable_setup(tmp_path, rng, epochs=4)
    model, context = model_and_context()
    with pytest.raises(Killed):
        context.fit(model, dataset, callbacks=[KillAtEpochBegin(3)])
    backup = tmp_path / "backup"
    assert backed_up_epochs(backup) == [3, 2]
    damage(backup / "epoch-000003", "empty metadata")
    damage(backup / "epoch-000002", "half the weights")
    model, context = model_and_context()
    untrained = [w.copy() for w in model.get_weights()]
    with pytest.raises(BackupUnusable) as error:
        context.fit(model, dataset)
    message = str(error.value)
    assert "no backup in it can be restored" in message
    assert "epoch-000003: training_metadata.json is unreadable" in message
    assert "epoch-000002: model.weights.h5 does not match" in message
    assert "--restart to start it over" in message
    # Nothing was trained and nothing removed: the user decides.
    for a, b in zip(model.get_weights(), untrained):
        np.testing.assert_array_equal(a, b)
    assert backed_up_epochs(backup) == [3, 2]


@pytest.mark.slow
def test_a_kill_during_the_first_backup_starts_the_run_afresh(tmp_path, rng):
    dataset, model_and_context = resumable_setup(tmp_path, rng, epochs=2)
    reference, _ = model_and_context()
    reference_loss = reference.fit(
        dataset, epochs=2, shuffle=False, verbose=0
    ).history["loss"]
    # What a kill leaves while the first epoch's backup is being written.
    partial = tmp_path / "backup" / "epoch-000001.partial"
    partial.mkdir(parents=True)
    (partial / "model.weights.h5").write_bytes(b"\x89HDF")
    with open(tmp_path / "history_raw.csv", "w", newline="") as handle:
        handle.write("epoch,loss\r\n0,0.5")
    model, context = model_and_context()
    history = context.fit(model, dataset)
    assert history["epoch"] == [1, 2]
    np.testing.assert_allclose(history["loss"], reference_loss, rtol=1e-5)
    assert backed_up_epochs(tmp_path / "backup") == [2, 1]
