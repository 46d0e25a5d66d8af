"""What every task shares: strategy, compile, callbacks, fit, outputs.

A task builds its data and model and calls, through the `RunContext` it
receives, `compile`, `fit` and `save`; `run_task` wraps the task with the
seed, the strategy, the clock and `metrics.json`. Everything a run writes
lands in `config.out`:

    metrics.json        final metrics, resolved arguments, data source, wall time
    history.csv         one row per epoch (column `epoch`, from 1), across resumes
    learning_curves.png every logged quantity against the epoch
    model.keras         the trained model (needs kerasrnn to load)
    saved_model/        `model.export`: serves without kerasrnn
    tensorboard/        TensorBoard logs
    history_raw.csv     the epoch log as `keras.callbacks.CSVLogger` appends it
    backup/             the training state while a run is unfinished: the two
                        newest generations `epoch-NNNNNN/`, each with the
                        weights (optimizer included) and its epoch in
                        `training_metadata.json`; rerunning the same command
                        resumes from the newest one that is intact
    last_good.weights.h5  the weights after the last epoch whose loss was finite

A kill may land at any moment, so no file a rerun reads is ever written in
place (see `TrainingBackup`). `keras.callbacks.BackupAndRestore` (Keras 3.15)
is not used for this reason: it overwrites `latest.weights.h5` and then
truncates and rewrites `training_metadata.json`; a kill in between leaves an
empty or partial JSON file whose `JSONDecodeError` its restore does not
catch, or a metadata file without weights, which it silently resumes from
with untrained weights; its `double_checkpoint` copies are not atomic either.

Distribution (`--strategy`): `default` is one device; `mirrored` is
`tf.distribute.MirroredStrategy` over the local GPUs, or over the logical CPU
devices when there are several; `multiworker` is
`tf.distribute.MultiWorkerMirroredStrategy`, configured by `TF_CONFIG`.
Keras 3's `model.fit` does not run under the multi-worker strategy
(keras-team/keras#20585), so for it `RunContext.fit` drives the same
compiled model through its own loop: `strategy.experimental_distribute_dataset`
and `strategy.run(model.train_step)` in one `tf.function` per step. The
global batch is split across replicas; only the chief (worker 0) writes
outputs.

Running on a real cluster: start the same command on every machine, each
with a `TF_CONFIG` naming all workers and its own index, e.g. on worker 1 of 2:
`TF_CONFIG='{"cluster": {"worker": ["host0:12345", "host1:12345"]},
"task": {"type": "worker", "index": 1}}' kerasrnn-train forecast
--strategy multiworker --out /shared/run`. `--out` should be storage every
worker can read (the backup is restored from it); worker 0 writes.
"""

import csv
import hashlib
import json
import math
import os
import pathlib
import re
import shutil
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

from pipelines.durable import fsync_path
from pipelines.faults import BackupUnusable, RunFailed, TrainingDiverged

__all__ = ["RunContext", "RunFailed", "make_strategy", "run_task"]


def make_strategy(name):
    """The `tf.distribute.Strategy` that `--strategy name` asks for.

    Args:
        name: `"default"`, `"mirrored"` or `"multiworker"`.

    Raises:
        ValueError: an unknown name, or `"multiworker"` without `TF_CONFIG`.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if tf.config.list_logical_devices("GPU"):
            return tf.distribute.MirroredStrategy()
        cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=cpus)
    if name == "multiworker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "Argument `strategy` is 'multiworker', which reads the cluster "
                "from the TF_CONFIG environment variable, and TF_CONFIG is "
                "not set. See `pipelines.training` for an example."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(
        "Argument `strategy` must be one of 'default', 'mirrored', "
        f"'multiworker'. Received: strategy={name!r}"
    )


def is_multiworker(strategy):
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first NaN or infinite loss, keeping good weights.

    `keras.callbacks.TerminateOnNaN` lets the epoch end normally, so the
    callbacks after it (the backup, checkpoints) would save the
    diverged weights. This one saves the weights after every finite epoch
    to `path`, and on a non-finite batch loss puts them back into the model
    and raises `TrainingDiverged`, which ends `fit` before any callback can
    save the diverged state.
    """

    def __init__(self, path):
        super().__init__()
        self.path = pathlib.Path(path)
        self.epoch = 0
        self.good_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.diverge(batch, loss)

    def on_epoch_end(self, epoch, logs=None):
        save_weights_atomically(self.model, self.path)
        self.good_epoch = epoch + 1

    def diverge(self, batch, loss):
        if self.path.exists():
            self.model.load_weights(self.path)
            kept = (
                f"The weights of the last finite epoch are in {self.path} "
                "and in the backup, from which rerunning resumes."
            )
        else:
            kept = "No epoch finished, so there are no good weights to keep."
        raise TrainingDiverged(
            f"the training loss became {float(loss)} at epoch {self.epoch + 1}, "
            f"batch {batch + 1}; training stopped. {kept} Try a lower "
            "--learning-rate or --clipnorm (eq:rnn-clip)."
        )


def save_weights_atomically(model, path):
    """`model.save_weights(path)` that a kill leaves whole or untouched.

    The weights go to a scratch file beside `path` that `os.replace` then
    renames over it in one step.
    """
    path = pathlib.Path(path)
    scratch = path.with_name(f".partial-{path.name}")
    model.save_weights(scratch, overwrite=True)
    fsync_path(scratch)
    os.replace(scratch, path)


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class TrainingBackup:
    """The training state after each finished epoch, safe against kills.

    Each backup is a generation directory `epoch-NNNNNN/` (N finished
    epochs) holding `model.weights.h5` (the model's and the optimizer's
    variables) and `training_metadata.json` (`epoch` and the SHA-256 of the
    weights file). A generation is written under a `.partial` name and
    renamed into place in one step, so a kill leaves either the whole
    generation or none of it; the two newest are kept. Restoring takes the
    newest generation whose metadata parses, names its own epoch, matches
    its weights' checksum and loads; a damaged one falls back to the one
    before it.

    Args:
        directory: The `backup/` directory.
        keep: Generations kept.
    """

    WEIGHTS = "model.weights.h5"
    METADATA = "training_metadata.json"
    NAME = re.compile(r"epoch-(\d{6})")

    def __init__(self, directory, keep=2):
        self.directory = pathlib.Path(directory)
        self.keep = keep

    def generations(self):
        """`(epoch, directory)` of every complete generation, newest first."""
        if not self.directory.is_dir():
            return []
        found = []
        for entry in self.directory.iterdir():
            match = self.NAME.fullmatch(entry.name)
            if match and entry.is_dir():
                found.append((int(match.group(1)), entry))
        return sorted(found, reverse=True)

    def exists(self):
        """Whether anything of a backup is on disk, complete or not."""
        return self.directory.exists()

    def save(self, model, epoch):
        """Write the generation of `epoch` finished epochs; drop old ones."""
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"epoch-{epoch:06d}"
        partial = self.directory / f"epoch-{epoch:06d}.partial"
        # Left by a kill while this epoch was being written before.
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        weights = partial / self.WEIGHTS
        model.save_weights(weights, overwrite=True)
        fsync_path(weights)
        metadata = partial / self.METADATA
        digest = file_sha256(weights)
        metadata.write_text(
            json.dumps({"epoch": epoch, "weights_sha256": digest})
        )
        fsync_path(metadata)
        fsync_path(partial)
        if final.exists():
            # A damaged generation the restore skipped: this one replaces it.
            self.retire(final)
        os.replace(partial, final)
        fsync_path(self.directory)
        for _, older in self.generations()[self.keep :]:
            self.retire(older)

    def retire(self, generation):
        """Remove a generation; renamed first so that no kill leaves half of
        it under a generation's name."""
        doomed = generation.with_name(f"{generation.name}.retired")
        shutil.rmtree(doomed, ignore_errors=True)
        os.replace(generation, doomed)
        shutil.rmtree(doomed)

    def problem(self, epoch, generation, model):
        """Why a generation cannot be restored, or None after loading it."""
        weights = generation / self.WEIGHTS
        try:
            metadata = json.loads((generation / self.METADATA).read_text())
        except (OSError, ValueError) as error:
            return f"{self.METADATA} is unreadable ({error})"
        if not isinstance(metadata, dict) or metadata.get("epoch") != epoch:
            return f"{self.METADATA} does not name epoch {epoch}: {metadata!r}"
        try:
            digest = file_sha256(weights)
        except OSError as error:
            return f"{self.WEIGHTS} is unreadable ({error})"
        if digest != metadata.get("weights_sha256"):
            return f"{self.WEIGHTS} does not match its recorded checksum"
        try:
            model.load_weights(weights)
        except Exception as error:  # noqa: BLE001
            # h5py and Keras raise many types for a file that does not fit.
            kind = type(error).__name__
            return f"{self.WEIGHTS} does not load ({kind}: {error})"
        return None

    def restore(self, model):
        """Load the newest usable generation into `model`.

        `model` must be built and compiled; call inside the strategy scope.

        Returns:
            The number of finished epochs restored: 0 when there is no
            complete generation (a fresh run, or a kill during the first
            backup).

        Raises:
            BackupUnusable: generations exist and none of them can be
                restored; the message lists each one and what is wrong.
        """
        generations = self.generations()
        if not generations:
            return 0
        if model.optimizer is not None and not model.optimizer.built:
            # The backup holds the optimizer's variables too.
            model.optimizer.build(model.trainable_variables)
        problems = []
        for epoch, generation in generations:
            problem = self.problem(epoch, generation, model)
            if problem is None:
                for _, damaged in generations[: len(problems)]:
                    self.retire(damaged)
                if problems:
                    print(
                        "The newest backup is damaged ("
                        + "; ".join(problems)
                        + "); resuming from the one before it, "
                        f"epoch {epoch}.",
                        flush=True,
                    )
                return epoch
            problems.append(f"{generation}: {problem}")
        raise BackupUnusable(
            "the run in this output directory was interrupted and no backup "
            "in it can be restored:\n  "
            + "\n  ".join(problems)
            + f"\nDelete {self.directory} to start the run over from epoch 1, "
            "or pass another --out."
        )

    def delete(self):
        """Remove the whole backup once training finished."""
        if not self.directory.exists():
            return
        doomed = self.directory.with_name(f"{self.directory.name}.finished")
        shutil.rmtree(doomed, ignore_errors=True)
        # One rename, so that a kill during the removal cannot leave damaged
        # generations for a rerun to refuse.
        os.replace(self.directory, doomed)
        shutil.rmtree(doomed)


class BackupEachEpoch(keras.callbacks.Callback):
    """Writes a `TrainingBackup` generation at the end of every epoch."""

    def __init__(self, backup):
        super().__init__()
        self.backup = backup

    def on_epoch_end(self, epoch, logs=None):
        self.backup.save(self.model, epoch + 1)


def keep_history_before(path, epoch):
    """Keep in a raw epoch log only the complete rows of epochs < `epoch`.

    Rows of later epochs (trained after the restored backup) are trained
    again; a row cut short by a kill has no line end.
    """
    path = pathlib.Path(path)
    if not path.exists():
        return
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.endswith("\n")]
    kept = lines[:1] + [
        line
        for line in lines[1:]
        if int(next(csv.reader([line]))[0]) < epoch
    ]
    scratch = path.with_name(f".partial-{path.name}")
    with open(scratch, "w", newline="") as handle:
        handle.writelines(kept)
    os.replace(scratch, path)


class RunContext:
    """The strategy, the output directory and the steps tasks share.

    A task builds and compiles its model inside `scope()` with `compile`
    (or its own `model.compile(optimizer=context.optimizer(), ...)`),
    trains it with `fit` and writes it with `save`. Files a task writes
    itself go to `write_dir` and only when `is_chief`.

    Args:
        config: The resolved `argparse.Namespace` (see `pipelines.tasks`).
        strategy: The `tf.distribute.Strategy` models are built under.
        out_dir: Where outputs go (`config.out`).

    Attributes:
        is_chief: Whether this process writes the run's outputs (always,
            except on workers other than 0 of a multi-worker run).
        write_dir: `out_dir` on the chief; a scratch directory elsewhere.
        replicas: Number of replicas the global batch is split across.
    """

    def __init__(self, config, strategy, out_dir):
        self.config = config
        self.strategy = strategy
        self.out_dir = pathlib.Path(out_dir)
        self.is_chief = self.find_chief()
        # Non-chief workers write their (required) copies to a scratch
        # directory so that only the chief's outputs appear in `out_dir`.
        self.write_dir = (
            self.out_dir
            if self.is_chief
            else pathlib.Path(tempfile.mkdtemp(prefix="kerasrnn-worker-"))
        )

    def find_chief(self):
        if not is_multiworker(self.strategy):
            return True
        resolver = self.strategy.cluster_resolver
        return resolver.task_type in (None, "chief") or (
            resolver.task_type == "worker" and resolver.task_id == 0
        )

    @property
    def replicas(self):
        """Number of replicas the global batch is split across."""
        return self.strategy.num_replicas_in_sync

    def scope(self):
        """`strategy.scope()`: build and compile models inside it."""
        return self.strategy.scope()

    def optimizer(self):
        """Adam with `--learning-rate` and `--clipnorm` (eq:rnn-clip)."""
        return keras.optimizers.Adam(
            learning_rate=self.config.learning_rate,
            clipnorm=self.config.clipnorm,
        )

    def compile(self, model, loss, metrics=None, weighted_metrics=None):
        """Compile `model` with the shared optimizer.

        Call inside `scope()`, right after building the model.
        """
        model.compile(
            optimizer=self.optimizer(),
            loss=loss,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
        )

    # ------------------------------------------------------------------ fit
    def callbacks(self, extra=()):
        """Progress, NaN guard, history, backup and TensorBoard callbacks."""
        write = self.write_dir
        return [
            StopOnNonFiniteLoss(write / "last_good.weights.h5"),
            # Before the backup: a kill between the two repeats the epoch,
            # and `read_history` keeps the last row of each epoch.
            keras.callbacks.CSVLogger(
                str(write / "history_raw.csv"), append=True
            ),
            BackupEachEpoch(self.backup),
            keras.callbacks.TensorBoard(str(write / "tensorboard")),
            *extra,
        ]

    def fit(self, model, train, validation=None, callbacks=(), epochs=None):
        """Train `model` for `config.epochs`, resuming an interrupted run.

        Args:
            model: A model compiled with `compile`.
            train: `tf.data.Dataset` of `(x, y)` or `(x, y, sample_weight)`
                batches of the global batch size.
            validation: Optional dataset of the same structure.
            callbacks: Extra Keras callbacks (e.g. state resets).
            epochs: Overrides `config.epochs`.

        Returns:
            The whole history as a dict name -> list per epoch, including
            epochs finished before a resume.

        Raises:
            TrainingDiverged: the loss became NaN or infinite.
        """
        epochs = epochs or self.config.epochs
        self.write_dir.mkdir(parents=True, exist_ok=True)
        start = self.resume(model)
        if is_multiworker(self.strategy):
            self.fit_multiworker(model, train, validation, start, epochs)
        else:
            model.fit(
                train,
                validation_data=validation,
                epochs=epochs,
                initial_epoch=start,
                callbacks=self.callbacks(callbacks),
                verbose=1 if self.is_chief else 0,
                shuffle=False,  # the datasets shuffle themselves, seeded
            )
        if self.is_chief:
            self.backup.delete()
        history = self.finish_history()
        return history

    @property
    def backup(self):
        """The run's `TrainingBackup`, read by every worker."""
        return TrainingBackup(self.out_dir / "backup")

    def resume(self, model):
        """Restore an interrupted run's backup into `model`.

        Returns:
            The number of finished epochs restored (0 for a fresh run).

        Raises:
            BackupUnusable: there is a backup and none of it restores.
        """
        with self.strategy.scope():
            start = self.backup.restore(model)
        raw = self.write_dir / "history_raw.csv"
        good = self.write_dir / "last_good.weights.h5"
        if start == 0:
            # A fresh run: good weights and epochs left by an earlier run in
            # the same directory must not be mixed into this one.
            good.unlink(missing_ok=True)
            raw.unlink(missing_ok=True)
            return 0
        if self.is_chief:
            print(
                f"Resuming after epoch {start} from {self.backup.directory}."
            )
        keep_history_before(raw, start)
        # The good weights are now the restored ones, not those of an epoch
        # the interrupted run finished after its last backup.
        save_weights_atomically(model, good)
        return start

    def fit_multiworker(self, model, train, validation, start, epochs):
        """The training loop for `MultiWorkerMirroredStrategy`.

        The same `model.train_step` / `test_step` that `fit` runs, called on
        every replica through `strategy.run` inside one `tf.function`;
        batches come from `experimental_distribute_dataset`, which splits
        each global batch across the replicas of all workers. Backup, NaN
        guard and history follow the single-device callbacks.
        """
        strategy = self.strategy
        write = self.write_dir
        history_path = write / "history_raw.csv"

        with strategy.scope():
            if not model.optimizer.built:
                model.optimizer.build(model.trainable_variables)

        # Bucketed batches differ in length; without reduce_retracing every
        # new length would compile another graph.
        @tf.function(reduce_retracing=True)
        def train_step(batch):
            return strategy.run(model.train_step, args=(batch,))

        @tf.function(reduce_retracing=True)
        def test_step(batch):
            return strategy.run(model.test_step, args=(batch,))

        def first_replica(logs):
            return {
                name: float(strategy.experimental_local_results(value)[0])
                for name, value in logs.items()
            }

        guard = StopOnNonFiniteLoss(write / "last_good.weights.h5")
        guard.set_model(model)
        writer = tf.summary.create_file_writer(str(write / "tensorboard"))
        distributed_train = strategy.experimental_distribute_dataset(train)
        distributed_validation = (
            strategy.experimental_distribute_dataset(validation)
            if validation is not None
            else None
        )
        for epoch in range(start, epochs):
            guard.on_epoch_begin(epoch)
            for metric in model.metrics:
                metric.reset_state()
            progress = None
            for step, batch in enumerate(distributed_train):
                logs = first_replica(train_step(batch))
                guard.on_train_batch_end(step, logs)
                if progress is None:
                    # The logs are already running means over the epoch.
                    progress = keras.utils.Progbar(
                        None,
                        verbose=1 if self.is_chief else 0,
                        stateful_metrics=list(logs),
                    )
                progress.update(step + 1, list(logs.items()))
            row = dict(logs)
            if distributed_validation is not None:
                for metric in model.metrics:
                    metric.reset_state()
                for batch in distributed_validation:
                    val_logs = first_replica(test_step(batch))
                row.update({f"val_{k}": v for k, v in val_logs.items()})
            guard.on_epoch_end(epoch)
            write_history_row(history_path, epoch, row)
            with writer.as_default():
                for name, value in row.items():
                    tf.summary.scalar(name, value, step=epoch)
            if self.is_chief:
                self.backup.save(model, epoch + 1)
            print(
                f"Epoch {epoch + 1}/{epochs} "
                + " ".join(f"{k}={v:.4f}" for k, v in row.items()),
                flush=True,
            )

    def finish_history(self):
        """Write `history.csv` and the learning curves; return the history."""
        raw = self.write_dir / "history_raw.csv"
        history = read_history(raw) if raw.exists() else {"epoch": []}
        if self.is_chief:
            write_history(self.write_dir / "history.csv", history)
            plot_learning_curves(
                history, self.write_dir / "learning_curves.png"
            )
        return history

    # ----------------------------------------------------------------- save
    def save(self, model, export=True):
        """Write `model.keras` and, with `export`, the SavedModel.

        `saved_model/` comes from `model.export`: a graph with the trained
        weights whose `serve` signature needs TensorFlow only, not kerasrnn.
        """
        if not self.is_chief:
            return
        model.save(self.write_dir / "model.keras")
        if export:
            model.export(str(self.write_dir / "saved_model"), verbose=False)


def write_history_row(path, epoch, row):
    """Append one epoch to the CSV that `keras.callbacks.CSVLogger` writes."""
    path = pathlib.Path(path)
    fields = ["epoch", *sorted(row)]
    new = not path.exists()
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow({"epoch": epoch, **row})


def read_history(path):
    """Read a raw epoch log into a dict name -> list, epochs from 1.

    A resume may repeat an epoch: its last row wins. `CSVLogger` writes
    `NA` for a quantity an epoch did not log; columns with nothing else
    are dropped.
    """
    rows = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            rows[int(row["epoch"])] = row
    epochs = sorted(rows)
    history = {"epoch": [epoch + 1 for epoch in epochs]}
    names = sorted({name for row in rows.values() for name in row} - {"epoch"})
    for name in names:
        values = [rows[epoch].get(name) or "NA" for epoch in epochs]
        if any(value != "NA" for value in values):
            history[name] = [
                float("nan") if value == "NA" else float(value)
                for value in values
            ]
    return history


def write_history(path, history):
    """`history.csv`: column `epoch` then one column per logged quantity."""
    names = list(history)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for values in zip(*(history[name] for name in names)):
            writer.writerow(values)


def plot_learning_curves(history, path):
    """One panel per quantity (training and `val_` together) vs epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    names = [
        name
        for name in history
        if name != "epoch"
        and not name.startswith("val_")
        and name != "learning_rate"
    ]
    if not names or not history["epoch"]:
        return
    figure, axes = plt.subplots(
        1, len(names), figsize=(4 * len(names), 3), squeeze=False
    )
    for axis, name in zip(axes[0], names):
        axis.plot(history["epoch"], history[name], marker="o", label="train")
        if f"val_{name}" in history:
            axis.plot(
                history["epoch"],
                history[f"val_{name}"],
                marker="o",
                label="validation",
            )
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_xlabel("epoch")
        axis.set_title(name)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def run_task(task_module, config):
    """Run one task end to end and write `metrics.json`.

    Args:
        task_module: A module following the `pipelines.tasks` contract.
        config: Its resolved `argparse.Namespace`.

    Returns:
        The dict written to `metrics.json`: the task's metrics, plus
        `task`, `data`, `args` and `wall_time_s`.
    """
    keras.utils.set_random_seed(config.seed)
    strategy = make_strategy(config.strategy)
    context = RunContext(config, strategy, config.out)
    context.out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    metrics = task_module.run(config, context)
    report = {
        "task": config.task,
        **{name: to_json(value) for name, value in metrics.items()},
        "data": task_module.DATA_SOURCES[config.data],
        "args": vars(config),
        "wall_time_s": round(time.perf_counter() - started, 2),
        "replicas": context.replicas,
    }
    if context.is_chief:
        (context.out_dir / "metrics.json").write_text(
            json.dumps(report, indent=2) + "\n"
        )
        print(
            json.dumps(
                {k: v for k, v in report.items() if k != "args"}, indent=2
            )
        )
    return report


def to_json(value):
    """Plain Python numbers for NumPy/TensorFlow scalars."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, tf.Tensor):
        return value.numpy().tolist()
    return value
