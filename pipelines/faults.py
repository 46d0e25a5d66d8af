"""The faults a run reports to its user as one clear message.

`kerasrnn-train` prints these without a traceback and exits with status 1:
they describe the user's data, environment or hyperparameters, not a bug.
"""


class RunFailed(Exception):
    """A run stopped on a fault its message explains."""


class TrainingDiverged(RunFailed):
    """The training loss became NaN or infinite."""


class DatasetNotOnDisk(RunFailed):
    """A TFDS dataset was asked for offline and is not prepared on disk."""


class MalformedRecord(RunFailed, ValueError):
    """A record of the user's data cannot be used; the message says which."""


class BackupUnusable(RunFailed):
    """An interrupted run left a backup from which nothing can be restored."""


class BackupOfAnotherRun(RunFailed):
    """The backup in the output directory was written by another run (another
    task or other options): not damaged, and not this run's to resume."""
