"""The run directory: one run's `--out`, locked, resumable, committed at once.

A run directory belongs to one run, named by its task and its configuration
fingerprint (the training-relevant options) in `run.json`:

- While a process uses it, it holds an OS lock (`fcntl.flock`) on `.lock`
  inside it; the kernel releases the lock when the process ends, however
  it ends. A second run on the same directory stops at once, naming the
  process that holds it, and changes nothing.
- A rerun of the same task with the same fingerprint resumes the run (or,
  when `metrics.json` is there, finds it complete). Other options are
  refused with the list of what differs; `--restart` discards the run and
  starts it over. A directory holding anything else (another task's run,
  other files) is refused unless `--overwrite`, which removes the files a
  run writes and keeps the others.
- The final outputs are written into `.outputs.partial/` and committed by
  renaming each into place, `metrics.json` last; the backup is removed
  only after that. A kill before `metrics.json` leaves the backup to
  resume from; a kill after it leaves a complete run.

This module imports neither TensorFlow nor a task, so that the command
line can claim the directory (and refuse it) before loading either.
"""

import fcntl
import json
import os
import pathlib
import tempfile
import time

from kerasrnn_pipelines import durable

__all__ = ["RunDirectory", "RunDirectoryError", "claim_run_directory"]

LOCK = ".lock"
RECORD = "run.json"
METRICS = "metrics.json"
STAGING = ".outputs.partial"
BACKUP = "backup"
RAW_HISTORY = "history_raw.csv"
LAST_GOOD = "last_good.weights.h5"
TENSORBOARD = "tensorboard"

#: Files every run writes outside `STAGING` while it trains; with the
#: outputs its record lists, what `--restart` and `--overwrite` remove.
WORKING_FILES = (METRICS, STAGING, BACKUP, RAW_HISTORY, LAST_GOOD, TENSORBOARD)


class RunDirectoryError(Exception):
    """`--out` cannot be used by this run; the one-line message says why
    and what to do instead."""


def option(name):
    """The command-line spelling of a configuration field."""
    return "--" + name.replace("_", "-")


def normalised(fingerprint):
    """`fingerprint` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(fingerprint, sort_keys=True))


def differences(recorded, wanted):
    """`--option X there, Y now` for every option whose value differs."""
    changes = []
    for name in sorted(set(recorded) | set(wanted)):
        there = json.dumps(recorded[name]) if name in recorded else "unset"
        now = json.dumps(wanted[name]) if name in wanted else "unset"
        if there != now:
            changes.append(f"{option(name)} {there} there, {now} now")
    return "; ".join(changes)


def is_chief_process(strategy):
    """Whether this process writes the run's outputs.

    Always, except under `--strategy multiworker` on a worker that is not
    the cluster's chief: the task `chief`, or worker 0 when the cluster has
    no `chief` (as `tf.distribute.MultiWorkerMirroredStrategy` decides).
    """
    if strategy != "multiworker":
        return True
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG", ""))
        task = tf_config["task"]
        cluster = tf_config["cluster"]
        kind, index = task["type"], int(task.get("index", 0))
    except (ValueError, TypeError, KeyError) as error:
        raise RunDirectoryError(
            "--strategy multiworker needs TF_CONFIG set to JSON with "
            f"'cluster' and 'task' (type and index); it is not ({error!r})"
        ) from None
    if "chief" in cluster:
        return kind == "chief"
    return kind == "worker" and index == 0


def is_entry_name(name):
    """Whether `name` names an entry of the directory a discard may remove
    (whatever an edited `run.json` lists: never a path, `..`, the lock or
    the record)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..", LOCK, RECORD)
        and pathlib.PurePath(name).name == name
    )


def read_record(path):
    """The parsed `run.json` of a directory, or None if it has none."""
    try:
        record = json.loads((path / RECORD).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # Written by one rename, so never torn by a kill: a user's file.
        return {}
    return record if isinstance(record, dict) else {}


class RunDirectory:
    """One process's claim on a run directory.

    Holds the lock (on the chief) until `release()` or the end of the
    process. Create it with `claim_run_directory`.

    Attributes:
        path: The run directory (`--out`).
        task: The task's name.
        fingerprint: The run's training-relevant options, name -> value.
        complete: Whether the run already finished here (`metrics.json`):
            there is nothing to train.
        chief: Whether this process writes the run's outputs.
        work_dir: Where this process writes while training: `path` on the
            chief, a scratch directory on the other workers.
    """

    def __init__(self, path, task, fingerprint, lock, chief):
        self.path = path
        self.task = task
        self.fingerprint = fingerprint
        self.lock = lock
        self.chief = chief
        self.work_dir = (
            path
            if chief
            else pathlib.Path(tempfile.mkdtemp(prefix="kerasrnn-worker-"))
        )
        self.complete = (path / METRICS).exists() and self.owns(
            read_record(path)
        )

    def owns(self, record):
        """Whether `record` names this run (its task and fingerprint)."""
        return bool(record) and (
            record.get("task"),
            record.get("fingerprint"),
        ) == (self.task, self.fingerprint)

    def record(self, outputs=()):
        return {
            "task": self.task,
            "fingerprint": self.fingerprint,
            "outputs": sorted(outputs),
        }

    @property
    def backup_dir(self):
        """`backup/`, which every worker reads and the chief writes."""
        return self.path / BACKUP

    @property
    def staging_dir(self):
        """Where this process writes its final outputs before `commit`."""
        return self.work_dir / STAGING

    def working_file(self, name):
        """`work_dir / name`, for the files written while training."""
        return self.work_dir / name

    def start_staging(self):
        """An empty `staging_dir` (a killed run's leftovers removed)."""
        durable.remove(self.staging_dir)
        self.staging_dir.mkdir(parents=True)
        return self.staging_dir

    def commit(self, metrics_text):
        """Move the staged outputs into place, then `metrics.json`, then
        remove the backup. Only the chief commits.

        Each rename is atomic and `metrics.json` comes last, so a kill
        leaves either a complete run or a backup to resume from, whose
        rerun writes every output again.
        """
        outputs = [entry.name for entry in self.staging_dir.iterdir()]
        # Recorded first, so that `--restart` finds every output even when
        # a kill interrupts the renames below.
        durable.write_text(
            self.path / RECORD,
            json.dumps(self.record([*outputs, METRICS]), indent=2) + "\n",
        )
        for name in outputs:
            durable.move_into_place(self.staging_dir / name, self.path / name)
        durable.write_text(self.path / METRICS, metrics_text)
        self.complete = True
        self.remove_leftovers()

    def remove_leftovers(self):
        """Remove the backup and staging of a run whose outputs are all in
        place (left there by a kill right after `metrics.json`)."""
        durable.remove(self.backup_dir)
        durable.remove(self.staging_dir)

    def discard(self, record):
        """Remove the files the run recorded in `record` wrote."""
        outputs = record.get("outputs")
        listed = outputs if isinstance(outputs, list) else []
        for name in {*WORKING_FILES, *filter(is_entry_name, listed)}:
            durable.remove(self.path / name)

    def begin(self):
        """Record this run as the directory's owner."""
        durable.write_text(
            self.path / RECORD, json.dumps(self.record(), indent=2) + "\n"
        )

    def release(self):
        """Give up the lock (the end of the process does it too)."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.release()


def open_lock_file(path):
    """`(file, created)`: the `.lock` file of `path`, opened for writing
    without truncating it, and whether this call created it."""
    try:
        descriptor = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        created = True
    except FileExistsError:
        descriptor = os.open(path / LOCK, os.O_RDWR)
        created = False
    return os.fdopen(descriptor, "r+"), created


def take_lock(path):
    """`(file, created)`: the exclusively locked `.lock` file of `path`, and
    whether this call created it (a refused claim removes it again).

    Raises:
        RunDirectoryError: another process holds the lock.
    """
    while True:
        lock, created = open_lock_file(path)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(lock)
            lock.close()
            raise RunDirectoryError(
                f"--out {path} is in use by another run (process {holder}); "
                "wait for it to finish or pass another --out"
            ) from None
        try:
            if os.stat(path / LOCK).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock, created
        except FileNotFoundError:
            pass
        # A refused claim removed the file between our open and our lock:
        # this lock guards nothing, so take the one on the current file.
        lock.close()


def read_holder(lock, patience=1.0):
    """The process id in a lock file another process holds, waiting up to
    `patience` seconds: the holder writes it once its claim is accepted,
    a few milliseconds after taking the lock."""
    deadline = time.monotonic() + patience
    while True:
        lock.seek(0)
        holder = lock.read().strip()
        if holder or time.monotonic() > deadline:
            return holder or "unknown"
        time.sleep(0.01)


def name_holder(lock):
    """Write this process's id into the lock file, for refused claims."""
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()


def refusal(path, task, wanted, record, entries):
    """Why this run may not use `path` without `--restart`/`--overwrite`,
    or None when it may (an empty directory, or this run's own)."""
    if record is None:
        if not entries:
            return None
        shown = ", ".join(sorted(entries)[:3])
        if len(entries) > 3:
            shown += ", ..."
        return (
            f"--out {path} is not empty ({shown}) and holds no kerasrnn run; "
            "pass a new or empty --out, or --overwrite to write this run "
            "there (the files a run writes are replaced, others kept)"
        )
    finished = (path / METRICS).exists()
    state = "a finished" if finished else "an unfinished"
    if record.get("task") != task:
        owner = record.get("task")
        kind = (
            f"{state} {owner} run"
            if isinstance(owner, str)
            else f"a {RECORD} that no kerasrnn run wrote"
        )
        return (
            f"--out {path} holds {kind}, not this {task} run; "
            "pass another --out"
        )
    changed = differences(record.get("fingerprint") or {}, wanted)
    if changed:
        return (
            f"--out {path} holds {state} {task} run with other options: "
            f"{changed}. Rerun with its options to "
            f"{'keep it' if finished else 'resume it'}, or start "
            "fresh: another --out, or --restart (discards that run)"
        )
    return None


def claim_run_directory(
    path, task, fingerprint, *, restart, overwrite, strategy="default"
):
    """Claim `path` for one run of `task`, or say why it cannot be used.

    Args:
        path: `--out`.
        task: The task's name.
        fingerprint: The training-relevant options, name -> JSON value.
        restart: `--restart`: discard this task's run in `path` and start
            it over.
        overwrite: `--overwrite`: use `path` even though it holds another
            task's run or other files (the files a run writes are removed
            first; the run's own progress is kept, see `restart`).
        strategy: `--strategy`; under `multiworker` only the chief locks
            and writes, the other workers just read the backup.

    Returns:
        A `RunDirectory`, locked on the chief.

    Raises:
        RunDirectoryError: `path` is empty or unusable, locked by another
            process, or holds a run with other options or something else.
    """
    if not str(path).strip():
        raise RunDirectoryError(
            "--out is empty; pass the directory the run writes to"
        )
    path = pathlib.Path(path)
    wanted = normalised(fingerprint)
    chief = is_chief_process(strategy)
    lock, created = None, False
    try:
        if chief:
            path.mkdir(parents=True, exist_ok=True)
            lock, created = take_lock(path)
    except OSError as error:
        raise RunDirectoryError(
            f"--out {path} cannot be used: {error.strerror or error}"
        ) from None
    try:
        # Listed before the record is read: on a worker that does not lock,
        # the chief may be renaming the record into place meanwhile. Files
        # in flight (the chief's, or a kill's leftovers) are not contents.
        entries = (
            {
                entry.name
                for entry in path.iterdir()
                if entry.name != LOCK and not durable.is_scratch_name(entry.name)
            }
            if path.is_dir()
            else set()
        )
        record = read_record(path)
        problem = refusal(path, task, wanted, record, entries)
        ours = record is not None and record.get("task") == task
        if problem and not (overwrite or (restart and ours)):
            if created:
                (path / LOCK).unlink()
            raise RunDirectoryError(problem)
        directory = RunDirectory(path, task, wanted, lock, chief)
        if not chief:
            return directory
        name_holder(lock)
        if problem or (restart and ours):
            directory.discard(record or {})
            directory.complete = False
        if directory.complete:
            directory.remove_leftovers()
        else:
            directory.begin()
        return directory
    except BaseException:
        if lock is not None:
            lock.close()
        raise
