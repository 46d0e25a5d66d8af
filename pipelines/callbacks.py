"""The callbacks every run trains with: the NaN guard, the task's own, the
epoch line, the epoch log, the backup of each finished epoch and
TensorBoard."""

import math
import os
import pathlib
import time
from collections.abc import Iterable
from typing import Any

import keras

from kerasrnn_pipelines import durable
from kerasrnn_pipelines import run_directory as layout
from kerasrnn_pipelines.backups import TrainingBackup
from kerasrnn_pipelines.faults import TrainingDiverged


def save_weights_atomically(model: keras.Model, path: pathlib.Path) -> None:
    """`model.save_weights(path)` that a kill leaves whole or untouched."""
    scratch = durable.scratch_name(path)
    model.save_weights(scratch, overwrite=True)
    durable.fsync_path(scratch)
    durable.move_into_place(scratch, path)


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first NaN or infinite loss, keeping good weights.

    `keras.callbacks.TerminateOnNaN` lets the epoch end normally, so the
    callbacks after it (the backup, checkpoints) would save the
    diverged weights. This one saves the weights after every finite epoch
    to `path`, and on a non-finite batch loss puts them back into the model
    and raises `TrainingDiverged`, which ends `fit` before any callback can
    save the diverged state.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = pathlib.Path(path)
        self.epoch = 0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.diverge(batch, loss)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        save_weights_atomically(self.model, self.path)

    def diverge(self, batch: int, loss: float) -> None:
        """Put the last finite epoch's weights back and raise
        `TrainingDiverged` for the non-finite `loss` of `batch`."""
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


class EpochLine(keras.callbacks.Callback):
    """Prints one plain line per epoch: what `fit` logged, and its time.

    `Epoch 3/8: loss 0.4215, val_loss 0.512 (12.4 s)`. Where standard
    output is not a terminal (a CI log, `nohup`, a cluster job) this
    replaces Keras's progress bar, whose redraws fill a file with carriage
    returns and colour codes.
    """

    def __init__(self) -> None:
        super().__init__()
        self.started = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs or {}
        # The losses first; Keras orders the rest by name.
        names: list[str] = [name for name in ("loss", "val_loss") if name in logs]
        names += [name for name in logs if name not in names]
        values = ", ".join(f"{name} {float(logs[name]):.4g}" for name in names)
        seconds = time.perf_counter() - self.started
        print(
            f"Epoch {epoch + 1}/{self.params['epochs']}: {values} ({seconds:.1f} s)",
            flush=True,
        )


class BackupEachEpoch(keras.callbacks.Callback):
    """Writes a `kerasrnn_pipelines.backups.TrainingBackup` generation at the end of
    every epoch, with the time its epochs took over all sittings: the
    restored generation's, plus this sitting's since `fit` began. An epoch
    a kill interrupted is not counted: the resumed run trains it again."""

    def __init__(self, backup: TrainingBackup) -> None:
        super().__init__()
        self.backup = backup
        self.sitting_began = 0.0
        self.before: float | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.sitting_began = time.perf_counter()
        self.before = self.backup.training_seconds

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        seconds = None
        if self.before is not None:
            seconds = self.before + time.perf_counter() - self.sitting_began
        self.backup.save(self.model, epoch + 1, seconds)


def training_callbacks(
    run_directory: layout.RunDirectory,
    backup: TrainingBackup | None,
    extra: Iterable[keras.callbacks.Callback] = (),
    epoch_lines: bool = False,
) -> list[keras.callbacks.Callback]:
    """The callbacks of one run, in the order they must run.

    Args:
        run_directory: The claimed `RunDirectory`; the files go to its
            `work_dir`.
        backup: The `TrainingBackup` to write after each epoch, or None on
            a process that does not write the backup.
        extra: The task's callbacks.
        epoch_lines: Print an `EpochLine` per epoch.
    """
    file = run_directory.working_file
    return [
        StopOnNonFiniteLoss(file(layout.LAST_GOOD)),
        # Before the log and the backup: a learning rate the task's
        # callbacks change at an epoch's end is logged and backed up.
        *extra,
        *([EpochLine()] if epoch_lines else []),
        # Before the backup: a kill between the two repeats the epoch,
        # and `read_history` keeps the last row of each epoch.
        keras.callbacks.CSVLogger(str(file(layout.RAW_HISTORY)), append=True),
        *([BackupEachEpoch(backup)] if backup is not None else []),
        keras.callbacks.TensorBoard(str(file(layout.TENSORBOARD))),
    ]
