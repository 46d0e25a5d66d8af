"""The callbacks every run trains with: the NaN guard and the backup of
each finished epoch."""

import math
import pathlib

import keras

from pipelines import durable
from pipelines.faults import TrainingDiverged


def save_weights_atomically(model, path):
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

    def __init__(self, path):
        super().__init__()
        self.path = pathlib.Path(path)
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.diverge(batch, loss)

    def on_epoch_end(self, epoch, logs=None):
        save_weights_atomically(self.model, self.path)

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


class BackupEachEpoch(keras.callbacks.Callback):
    """Writes a `pipelines.backups.TrainingBackup` generation at the end of
    every epoch."""

    def __init__(self, backup):
        super().__init__()
        self.backup = backup

    def on_epoch_end(self, epoch, logs=None):
        self.backup.save(self.model, epoch + 1)
