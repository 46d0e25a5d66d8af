"""What every task shares: compile, callbacks, fit, outputs, `metrics.json`.

A task builds its data and model and calls, through the `RunContext` it
receives, `compile`, `fit` and `save`; `run_task` wraps the task with the
seed, the strategy, the clock and `metrics.json`. Everything a run writes
lands in its run directory, `--out` (see `kerasrnn_pipelines.run_directory` for the
lock and the rules of reuse):

    metrics.json        final metrics, resolved arguments, data source, wall
                        time of this sitting, training time over all
                        sittings, and `worse_than_baseline` (see `run_task`)
    history.csv         one row per epoch (column `epoch`, from 1), across resumes
    learning_curves.png every logged quantity against the epoch
    model.keras         the trained model (needs kerasrnn to load)
    saved_model/        `model.export`: serves without kerasrnn
    run.json            the run's task, configuration fingerprint and outputs
    .lock               locked while a process uses the directory
    tensorboard/        TensorBoard logs
    history_raw.csv     the epoch log as `keras.callbacks.CSVLogger` appends it
    backup/             the training state while a run is unfinished: the two
                        newest generations `epoch-NNNNNN/` (see
                        `kerasrnn_pipelines.backups`); rerunning the same command
                        resumes from the newest one that is intact
    last_good.weights.h5  the weights after the last epoch whose loss was finite

A kill may land at any moment, so no file a rerun reads is ever written in
place. The final outputs (the first five above and any a task adds) are
written into `.outputs.partial/` and renamed into place, `metrics.json`
last; only then is `backup/` removed. A rerun of a run killed before
`metrics.json` resumes from the backup (after the last epoch it trains
nothing and writes the outputs again); after it, the rerun finds the run
complete and exits. `keras.callbacks.BackupAndRestore` (Keras 3.15) is not
used because it overwrites `latest.weights.h5` and then truncates and
rewrites `training_metadata.json`; a kill in between leaves an empty or
partial JSON file whose `JSONDecodeError` its restore does not catch, or a
metadata file without weights, which it silently resumes from with
untrained weights; its `double_checkpoint` copies are not atomic either.
"""

import contextlib
import dataclasses
import json
import pathlib
import sys
import time
import types
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from kerasrnn_pipelines import history as epoch_log
from kerasrnn_pipelines import run_directory as layout
from kerasrnn_pipelines.backups import TrainingBackup
from kerasrnn_pipelines.callbacks import save_weights_atomically, training_callbacks
from kerasrnn_pipelines.console import Headline, held_back_native_output, summary
from kerasrnn_pipelines.distributed import fit_multiworker, is_multiworker, make_strategy
from kerasrnn_pipelines.faults import RunFailed
from kerasrnn_pipelines.options import RunConfig
from kerasrnn_pipelines.run_directory import RunDirectory

__all__ = ["RunContext", "RunFailed", "run_task"]


class RunContext:
    """The strategy, the run directory and the steps tasks share.

    A task builds and compiles its model inside `scope()` with `compile`
    (or its own `model.compile(optimizer=context.optimizer(), ...)`),
    trains it with `fit` and writes it with `save`. Files a task writes
    itself go to `write_dir` and only when `is_chief`.

    Args:
        config: The task's resolved configuration.
        strategy: The `tf.distribute.Strategy` models are built under.
        run_directory: The claimed `kerasrnn_pipelines.run_directory.RunDirectory`.

    Attributes:
        is_chief: Whether this process writes the run's outputs (not so on
            workers other than 0 of a multi-worker run).
        write_dir: Where final outputs go until `run_task` renames them
            into the run directory together; its first use begins the run
            in its directory (`RunDirectory.start_staging`).
    """

    def __init__(
        self,
        config: RunConfig,
        strategy: tf.distribute.Strategy,
        run_directory: RunDirectory,
    ) -> None:
        self.config = config
        self.strategy = strategy
        self.directory = run_directory
        self.is_chief = run_directory.chief
        self.backup = TrainingBackup(
            run_directory.backup_dir,
            run_directory.task,
            run_directory.fingerprint,
        )

    @property
    def write_dir(self) -> pathlib.Path:
        """The run directory's staging folder, the run begun at first use:
        a task that stops before it (its data missing, say) writes
        nothing."""
        return self.directory.start_staging()

    @property
    def replicas(self) -> int:
        """Number of replicas the global batch is split across."""
        return self.strategy.num_replicas_in_sync

    def scope(self) -> contextlib.AbstractContextManager[Any]:
        """`strategy.scope()`: build and compile models inside it."""
        return self.strategy.scope()

    def optimizer(self) -> keras.optimizers.Optimizer:
        """Adam with `--learning-rate`, `--clipnorm` (eq:rnn-clip) and
        `--ema-momentum`.

        With a momentum m the optimizer keeps w̄ ← m·w̄ + (1 − m)·w after
        every step (Keras's `use_ema`; w̄ starts at the first step's
        weights), and `fit` ends by copying w̄ into the model. The average
        is an optimizer variable, so backups carry it and a resumed run
        continues it.
        """
        averaging: dict[str, Any] = {}
        if self.config.ema_momentum is not None:
            averaging = {"use_ema": True, "ema_momentum": self.config.ema_momentum}
        return keras.optimizers.Adam(
            learning_rate=self.config.learning_rate,
            clipnorm=self.config.clipnorm,
            **averaging,
        )

    def compile(
        self,
        model: keras.Model,
        loss: Any,
        metrics: list[Any] | None = None,
        weighted_metrics: list[Any] | None = None,
    ) -> None:
        """Compile `model` with the shared optimizer; call inside `scope()`."""
        model.compile(
            optimizer=self.optimizer(),
            loss=loss,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
        )

    def fit(
        self,
        model: keras.Model,
        train: tf.data.Dataset,
        validation: tf.data.Dataset | None = None,
        callbacks: Iterable[keras.callbacks.Callback] = (),
        epochs: int | None = None,
    ) -> dict[str, list[float]]:
        """Train `model` for `config.epochs`, resuming an interrupted run.

        Args:
            model: A model compiled with `compile`.
            train: `tf.data.Dataset` of `(x, y)` or `(x, y, sample_weight)`
                batches of the global batch size.
            validation: Optional dataset of the same structure.
            callbacks: The task's Keras callbacks (e.g. a learning-rate
                schedule), run under every strategy.
            epochs: Overrides `config.epochs`.

        Returns:
            The whole history as a dict name -> list per epoch, including
            epochs finished before a resume.

        Raises:
            TrainingDiverged: the loss became NaN or infinite.
        """
        epochs = epochs or self.config.epochs
        start = resume(model, self.strategy, self.backup, self.directory)
        skip_shuffles(train, start)
        backup = self.backup if self.is_chief else None
        # Keras's progress bar on a terminal; in a file, one line per epoch.
        progress_bar = self.is_chief and sys.stdout.isatty()
        arguments: dict[str, Any] = dict(
            initial_epoch=start,
            epochs=epochs,
            callbacks=training_callbacks(
                self.directory,
                backup,
                callbacks,
                epoch_lines=self.is_chief and not progress_bar,
            ),
            verbose=1 if progress_bar else 0,
        )
        if is_multiworker(self.strategy):
            fit_multiworker(model, self.strategy, train, validation, **arguments)
        else:
            # The datasets shuffle themselves, seeded.
            model.fit(
                train, validation_data=validation, shuffle=False, **arguments
            )
        return epoch_log.finish_history(
            self.directory.working_file(layout.RAW_HISTORY),
            self.write_dir if self.is_chief else None,
        )

    def save(self, model: keras.Model, export: bool = True) -> None:
        """Write `model.keras` and, with `export`, the SavedModel.

        `saved_model/` comes from `model.export`: a graph with the trained
        weights whose `serve` signature needs TensorFlow only, not kerasrnn.
        """
        if not self.is_chief:
            return
        model.save(self.write_dir / "model.keras")
        if export:
            model.export(str(self.write_dir / "saved_model"), verbose=False)


def print_onednn_notice_held_back() -> None:
    """Have TensorFlow print its oneDNN data-type notice now, held back.

    TensorFlow's oneDNN graph pass prints `oneDNN supports DT_BOOL only on
    platforms with AVX-512. Falling back to the default Eigen-based
    implementation if present.` at error level, which a quiet log level
    does not hide, once per process: the first time it optimises a graph
    that transposes a tensor of a type this processor's oneDNN lacks. In a
    run that is the first training step, where a recurrent layer with a
    mask transposes the boolean mask to time-major. Optimising such a
    graph while native output is held back (`held_back_native_output`)
    spends that once; with `--verbose` the notice is shown here instead.
    Call after the strategy is made: running a graph starts TensorFlow's
    runtime, which the multi-worker strategy must configure first.
    """
    with held_back_native_output():
        # Two by two: Grappler removes the transpose of a 1 x 1 tensor
        # before the oneDNN pass sees it.
        tf.function(tf.transpose)(tf.constant([[True, False], [False, True]]))


def skip_shuffles(train: tf.data.Dataset, epochs: int) -> None:
    """Bring `train`'s shuffle to where it stands after `epochs` epochs.

    The datasets reshuffle at every iterator made over them (a seeded
    `shuffle` with `reshuffle_each_iteration`), so a run resumed after N
    epochs would take epoch N + 1's batches in epoch 1's order. Keras's
    `fit` (3.15) makes two iterators per epoch over a dataset of known
    length: one as the epoch begins, and one as it ends that the next epoch
    does not use (one per epoch when the length is unknown). Making and
    dropping as many first gives the resumed epochs the orders the
    uninterrupted run had; no element is read. The kill tests compare a
    resumed run with an uninterrupted one, so a Keras release that counts
    otherwise fails them. Under the `mirrored` and `multiworker` strategies
    `fit` iterates a distributed copy of the dataset, which this does not
    reach: there a resumed run may take its batches in another order.
    """
    known_length = train.cardinality() >= 0
    for _ in range(epochs * (2 if known_length else 1)):
        iter(train)


def resume(
    model: keras.Model,
    strategy: tf.distribute.Strategy,
    backup: TrainingBackup,
    run_directory: RunDirectory,
) -> int:
    """Restore an interrupted run's backup into `model`, and its epoch log
    and good weights to match; return the number of finished epochs
    restored (0 for a fresh run).

    Raises:
        BackupUnusable, BackupOfAnotherRun: see `TrainingBackup.restore`.
    """
    with strategy.scope():
        start = backup.restore(model)
    # The run's first write: a backup of another run or none usable stops
    # the command above with the directory as it was.
    run_directory.start_staging()
    raw = run_directory.working_file(layout.RAW_HISTORY)
    good = run_directory.working_file(layout.LAST_GOOD)
    if start == 0:
        # Epochs and good weights left by a kill before the first backup
        # must not be mixed into this run.
        good.unlink(missing_ok=True)
        raw.unlink(missing_ok=True)
        return 0
    if run_directory.chief:
        print(f"Resuming after epoch {start} from {backup.directory}.")
    epoch_log.keep_history_before(raw, start)
    # The good weights are now the restored ones, not those of an epoch the
    # interrupted run finished after its last backup.
    save_weights_atomically(model, good)
    return start


def baseline_verdict(
    task_module: types.ModuleType, metrics: dict[str, Any]
) -> tuple[bool | None, str | None]:
    """Whether the run's headline metric is worse than its own baseline.

    Reads the task's `HEADLINE_METRIC = (metric, baseline, better)`, with
    `better` `"lower"` or `"higher"`; a NaN metric counts as worse.

    Returns:
        `(worse, message)`: `worse` is None for a task without a baseline;
        `message` is the warning to print when `worse`.
    """
    headline = getattr(task_module, "HEADLINE_METRIC", None)
    if headline is None:
        return None, None
    name, baseline, better = headline
    value, reference = float(metrics[name]), float(metrics[baseline])
    if better == "lower":
        worse = not value <= reference
    else:
        worse = not value >= reference
    message = (
        f"warning: {name} {value:.6g} is worse than the baseline's "
        f"{baseline} {reference:.6g} ({better} is better); the model "
        "learned less than the baseline: try other --learning-rate, "
        "--epochs or model size"
    )
    return worse, message


def config_values(config: RunConfig) -> dict[str, Any]:
    """The configuration's fields, name -> value."""
    return dataclasses.asdict(config)


def run_task(
    task_module: types.ModuleType, config: RunConfig, run_directory: RunDirectory
) -> dict[str, Any]:
    """Run one task end to end into its claimed run directory.

    A complete run (see `RunDirectory.complete`) is reported, not trained
    again. Otherwise the task trains, resuming from the backup, and its
    outputs with `metrics.json` are committed to the run directory.
    The claim is released when the run ends.

    Args:
        task_module: A module following the `kerasrnn_pipelines.tasks` contract.
        config: Its resolved configuration.
        run_directory: From `kerasrnn_pipelines.run_directory.claim_run_directory`.

    Returns:
        The dict written to `metrics.json`: the task's metrics, plus
        `task`, `data`, `args`, `wall_time_s` (this sitting's), `training_time_s` (what
        `fit` took, summed over the sittings; absent where it trained
        nothing or resumed a backup that did not record it), `replicas`
        and, for a task with a baseline, `worse_than_baseline`.
    """
    headline = getattr(task_module, "HEADLINE_METRIC", None)
    with run_directory:
        if run_directory.complete:
            print(
                f"kerasrnn-train {config.task}: the run in "
                f"{run_directory.path} is already complete (metrics.json); "
                "nothing to train. --restart trains it again."
            )
            report = json.loads((run_directory.path / layout.METRICS).read_text())
            print_summary(config.task, report, headline, run_directory.path)
            return report
        keras.utils.set_random_seed(config.seed)
        strategy = make_strategy(config.strategy)
        print_onednn_notice_held_back()
        context = RunContext(config, strategy, run_directory)
        started = time.perf_counter()
        metrics = task_module.run(config, context)
        report = {
            "task": config.task,
            **{name: to_json(value) for name, value in metrics.items()},
            "data": type(config).DATA_SOURCES[config.data],
            "args": config_values(config),
            "wall_time_s": round(time.perf_counter() - started, 2),
            "replicas": context.replicas,
        }
        # What `fit` took over all sittings; unknown for a run resumed from
        # an earlier release's backup, and nothing for a run that trains
        # nothing (an assembly).
        if context.backup.training_seconds is not None:
            report["training_time_s"] = round(context.backup.training_seconds, 1)
        worse, warning = baseline_verdict(task_module, report)
        if worse is not None:
            report["worse_than_baseline"] = worse
        if context.is_chief:
            run_directory.commit(
                json.dumps(report, indent=2, default=str) + "\n"
            )
            print_summary(config.task, report, headline, run_directory.path)
            if worse:
                print(f"kerasrnn-train {config.task}: {warning}", file=sys.stderr)
        return report


def print_summary(
    task: str, report: dict[str, Any], headline: Headline | None, directory: pathlib.Path
) -> None:
    """Print `kerasrnn_pipelines.console.summary`, flushed: a log file shows
    it as soon as the run ends."""
    print("\n".join(summary(task, report, headline, directory)), flush=True)


def to_json(value: Any) -> Any:
    """Plain Python numbers for NumPy/TensorFlow scalars."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, tf.Tensor):
        return value.numpy().tolist()
    return value
