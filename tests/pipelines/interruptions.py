"""A kill in the middle of `fit`, as tests of resuming stage it."""

import keras


class Killed(Exception):
    """Stands for SIGKILL: nothing after it runs."""


class KillAtEpochBegin(keras.callbacks.Callback):
    """Raises `Killed` as epoch `epoch` (0-based) begins."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise Killed()
