"""The run directory: one run's `--out`, locked, resumable, committed at once.

A run directory belongs to one run, named by its task and its configuration
fingerprint (the training-relevant options) in `run.json`:

- While a process uses it, it holds an OS lock (`fcntl.flock`) on `.lock`
  inside it; the kernel releases the lock when the process ends, however
  it ends. A second run on the same directory stops at once, naming the
  process that holds it, and changes nothing.
- A rerun of the same task with the same fingerprint resumes the run (or,
  when `metrics.json` is there, finds it complete). Other options are
  refused with the list of what differs. The options that change only
  what a run writes after training (its decoding, its exported files:
  `RunConfig.output_options`) do not stop an unfinished run from
  resuming, since its outputs are written at its end; a finished run's
  are compared with the values its `metrics.json` records, and a rerun
  asking for others is refused the same way, never found complete with
  outputs of another option. `--restart` is the one way to
  discard a run of the same task: it removes what that run wrote and
  starts over; `--overwrite` never does.
- A directory holding anything else is refused unless `--overwrite`,
  which removes only what a kerasrnn run wrote: another task's run (the
  files its `run.json` lists and the working files every run writes) goes,
  every other file stays. A user's entry under a name a run writes (a
  `backup/` of their own, a `run.json` no run wrote) is never removed:
  the directory is refused, whatever the options, and left as it was.
- A claim writes nothing but its lock: the run is begun (what
  `--restart` or `--overwrite` discards removed, `run.json` written) by
  its first write, `RunDirectory.start_staging`, once its data are
  loaded. A command refused or stopped before that (a dataset not on
  disk, a teacher that does not fit, a backup of another run) leaves the
  directory as it found it: the lock file and any folder the claim made
  are removed again when the claim is released.
- A run writes its `run.json` before anything else and is begun only
  where no working file's name is taken by someone else's entry, so the
  working files beside a record are its run's. A final output is never
  renamed over an entry no run wrote either: the commit stops first
  (`OutputInTheWay`), the outputs staged and the backup kept.
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
from collections.abc import Iterable
from typing import Any, Self, TextIO, TypeGuard

from kerasrnn_pipelines import durable
from kerasrnn_pipelines.faults import RunFailed
from kerasrnn_pipelines.options import TF_CONFIG, ConfigError, flag, read_tf_config

__all__ = [
    "OutputInTheWay",
    "RunDirectory",
    "RunDirectoryError",
    "claim_run_directory",
]

LOCK = ".lock"
RECORD = "run.json"
METRICS = "metrics.json"
STAGING = ".outputs.partial"
BACKUP = "backup"
RAW_HISTORY = "history_raw.csv"
LAST_GOOD = "last_good.weights.h5"
TENSORBOARD = "tensorboard"

#: Files every run writes outside `STAGING` while it trains; with the
#: outputs its record lists, what a discard (`--restart`, or `--overwrite`
#: of another task's run) removes.
WORKING_FILES = (METRICS, STAGING, BACKUP, RAW_HISTORY, LAST_GOOD, TENSORBOARD)


class RunDirectoryError(Exception):
    """`--out` cannot be used by this run; the one-line message says why
    and what to do instead."""


class OutputInTheWay(RunFailed):
    """A final output's name is taken in `--out` by an entry no kerasrnn
    run wrote; nothing was replaced, and the outputs wait staged."""


def normalised(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """`fingerprint` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(fingerprint, sort_keys=True))


def differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> str:
    """`--option X there, Y now` for every option whose value differs."""
    changes = []
    for name in sorted(set(recorded) | set(wanted)):
        there = json.dumps(recorded[name]) if name in recorded else "unset"
        now = json.dumps(wanted[name]) if name in wanted else "unset"
        if there != now:
            changes.append(f"{flag(name)} {there} there, {now} now")
    return "; ".join(changes)


def recorded_output_options(path: pathlib.Path, names: Iterable[str]) -> dict[str, Any]:
    """The values of the options `names` with which the finished run in
    `path` made its outputs: its `metrics.json`'s `args` (the resolved
    options), those it lacks left out."""
    try:
        metrics = json.loads((path / METRICS).read_text())
    except (OSError, ValueError):
        return {}
    args = metrics.get("args") if isinstance(metrics, dict) else None
    if not isinstance(args, dict):
        return {}
    return {name: args[name] for name in names if name in args}


def is_chief_process(strategy: str) -> bool:
    """Whether this process writes the run's outputs.

    Always, except under `--strategy multiworker` on a worker that is not
    the cluster's chief: the task `chief`, or worker 0 when the cluster has
    no `chief` (as `tf.distribute.MultiWorkerMirroredStrategy` decides).
    """
    if strategy != "multiworker":
        return True
    try:
        place = read_tf_config(os.environ.get(TF_CONFIG))
    except ConfigError as error:
        raise RunDirectoryError(str(error)) from None
    if "chief" in place.cluster:
        return place.kind == "chief"
    return place.kind == "worker" and place.index == 0


def is_entry_name(name: object) -> bool:
    """Whether `name` names an entry of the directory a discard may remove
    (whatever an edited `run.json` lists: never a path, `..`, the lock or
    the record)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..", LOCK, RECORD)
        and pathlib.PurePath(name).name == name
    )


def read_record(path: pathlib.Path) -> dict[str, Any] | None:
    """The parsed `run.json` of a directory, or None if it has none."""
    try:
        record = json.loads((path / RECORD).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # Written by one rename, so never torn by a kill: a user's file.
        return {}
    return record if isinstance(record, dict) else {}


def is_run_record(record: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether `record` (from `read_record`) is one a kerasrnn run wrote."""
    return record is not None and isinstance(record.get("task"), str)


def listed_outputs(record: dict[str, Any] | None) -> set[str]:
    """The entry names `record` lists as its run's committed outputs."""
    outputs = record.get("outputs") if record else None
    return set(filter(is_entry_name, outputs if isinstance(outputs, list) else []))


def shown_entries(path: pathlib.Path, names: Iterable[str]) -> str:
    """`a, b/, c/`: entry names of `path`, folders marked with `/`."""
    return ", ".join(
        name + ("/" if (path / name).is_dir() else "") for name in sorted(names)
    )


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
        made: What the claim created that the run has not used yet: the
            lock file and the folders of `path` it made, outermost first;
            `release` removes them where the run never started.
        started: Whether the run began writing (`start_staging`).
    """

    def __init__(
        self,
        path: pathlib.Path,
        task: str,
        fingerprint: dict[str, Any],
        lock: TextIO | None,
        chief: bool,
        made: Iterable[pathlib.Path] = (),
    ) -> None:
        self.path = path
        self.task = task
        self.fingerprint = fingerprint
        self.lock = lock
        self.chief = chief
        self.made = list(made)
        self.started = False
        # What `start_staging` does first on the chief: the run whose
        # files it discards (`--restart`, or another task's under
        # `--overwrite`), and the outputs of this run already in place.
        self.replaced: dict[str, Any] | None = None
        self.outputs_in_place: set[str] = set()
        self.work_dir = (
            path
            if chief
            else pathlib.Path(tempfile.mkdtemp(prefix="kerasrnn-worker-"))
        )
        self.complete = (path / METRICS).exists() and self.owns(
            read_record(path)
        )

    def owns(self, record: dict[str, Any] | None) -> bool:
        """Whether `record` names this run (its task and fingerprint)."""
        return record is not None and (
            record.get("task"),
            record.get("fingerprint"),
        ) == (self.task, self.fingerprint)

    def record(self, outputs: Iterable[str] = ()) -> dict[str, Any]:
        """What `run.json` holds: the task, its fingerprint and `outputs`."""
        return {
            "task": self.task,
            "fingerprint": self.fingerprint,
            "outputs": sorted(set(outputs)),
        }

    @property
    def backup_dir(self) -> pathlib.Path:
        """`backup/`, which every worker reads and the chief writes."""
        return self.path / BACKUP

    @property
    def staging_dir(self) -> pathlib.Path:
        """Where this process writes its final outputs before `commit`."""
        return self.work_dir / STAGING

    def working_file(self, name: str) -> pathlib.Path:
        """`work_dir / name`, for the files written while training."""
        return self.work_dir / name

    def start_staging(self) -> pathlib.Path:
        """Begin the run, once, and return an empty `staging_dir` (a killed
        run's leftovers removed).

        The run's first write: on the chief it first discards the run
        `--restart` or `--overwrite` replaces and records this one
        (`begin`). Later calls return the same folder, untouched.
        """
        if self.started:
            return self.staging_dir
        self.started = True
        if self.chief:
            if self.replaced is not None:
                self.discard(self.replaced)
            self.begin(self.outputs_in_place)
        durable.remove(self.staging_dir)
        self.staging_dir.mkdir(parents=True)
        return self.staging_dir

    def commit(self, metrics_text: str) -> None:
        """Move the staged outputs into place, then `metrics.json`, then
        remove the backup. Only the chief commits.

        Each rename is atomic and `metrics.json` comes last, so a kill
        leaves either a complete run or a backup to resume from, whose
        rerun writes every output again.

        Raises:
            OutputInTheWay: an output's name is taken by an entry that no
                run wrote (its record does not list it); nothing was
                renamed, the outputs stay staged and the backup in place.
        """
        # Begun already by the run's first write, unless it wrote nothing.
        outputs = [entry.name for entry in self.start_staging().iterdir()]
        ours = listed_outputs(read_record(self.path))
        taken = [
            name
            for name in outputs
            if name not in ours and os.path.lexists(self.path / name)
        ]
        if taken:
            raise OutputInTheWay(
                f"--out {self.path} holds {shown_entries(self.path, taken)}, "
                "which no kerasrnn run wrote, where this run puts its "
                "outputs; nothing was replaced: the outputs wait in "
                f"{self.staging_dir} and the training state in "
                f"{self.backup_dir}. Move {'them' if len(taken) > 1 else 'it'}"
                " out of --out and rerun with the same options (without "
                "--overwrite) to put the outputs in place"
            )
        # Recorded first, so that `--restart` finds every output even when
        # a kill interrupts the renames below.
        durable.write_text(
            self.path / RECORD,
            json.dumps(self.record([*ours, *outputs, METRICS]), indent=2)
            + "\n",
        )
        for name in outputs:
            durable.move_into_place(self.staging_dir / name, self.path / name)
        durable.write_text(self.path / METRICS, metrics_text)
        self.complete = True
        self.remove_leftovers()

    def remove_leftovers(self) -> None:
        """Remove the backup and staging of a run whose outputs are all in
        place (left there by a kill right after `metrics.json`)."""
        durable.remove(self.backup_dir)
        durable.remove(self.staging_dir)

    def discard(self, record: dict[str, Any]) -> None:
        """Remove what the run of `record` (a kerasrnn run's) wrote: the
        outputs it lists and the working files every run writes."""
        for name in {*WORKING_FILES, *listed_outputs(record)}:
            durable.remove(self.path / name)

    def begin(self, outputs: Iterable[str] = ()) -> None:
        """Record this run as the directory's owner, with the `outputs` of
        it already in place (a resumed run killed while committing)."""
        durable.write_text(
            self.path / RECORD,
            json.dumps(self.record(outputs), indent=2) + "\n",
        )

    def release(self) -> None:
        """Give up the lock (the end of the process does it too); where the
        run never started, first remove what the claim made (`made`), so
        that the directory is as the claim found it."""
        if self.lock is None:
            return
        if not self.started:
            for made in reversed(self.made):
                try:
                    if made.is_dir():
                        made.rmdir()
                    else:
                        made.unlink()
                except OSError:
                    break  # a folder someone else wrote into stays
        self.lock.close()
        self.lock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def open_lock_file(path: pathlib.Path) -> tuple[TextIO, bool]:
    """`(file, created)`: the `.lock` file of `path`, opened for writing
    without truncating it, and whether this call created it."""
    try:
        # os.open's default mode is 0o777: a plain data file must not be
        # executable, so ask for what open() would give (0o666 less umask).
        descriptor = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        created = True
    except FileExistsError:
        descriptor = os.open(path / LOCK, os.O_RDWR)
        created = False
    return os.fdopen(descriptor, "r+"), created


def take_lock(path: pathlib.Path) -> tuple[TextIO, bool]:
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


def read_holder(lock: TextIO, patience: float = 1.0) -> str:
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


def name_holder(lock: TextIO) -> None:
    """Write this process's id into the lock file, for refused claims."""
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()


def refusal(
    path: pathlib.Path,
    task: str,
    wanted: dict[str, Any],
    record: dict[str, Any] | None,
    entries: set[str],
    *,
    restart: bool,
    overwrite: bool,
    outputs: dict[str, Any],
) -> str | None:
    """Why this run may not use `path` with these options, or None when it
    may: an empty directory; this run's own (finished, with `outputs`, the
    output options, as its `metrics.json` records them); with
    `--restart`, a run of this task; with `--overwrite`, another task's
    run or files whose names no run writes."""
    if record is None:
        taken = entries & set(WORKING_FILES)
        if taken:
            one = len(taken) == 1
            return (
                f"--out {path} holds no kerasrnn run (no {RECORD}), and "
                f"{shown_entries(path, taken)} in it "
                f"{'takes a name' if one else 'take names'} a run writes; "
                "nothing was changed (--overwrite removes only what a run "
                f"wrote): move {'it' if one else 'them'} out of --out or "
                "pass another --out"
            )
        if not entries or overwrite:
            return None
        shown = ", ".join(sorted(entries)[:3])
        if len(entries) > 3:
            shown += ", ..."
        return (
            f"--out {path} is not empty ({shown}) and holds no kerasrnn run; "
            "pass a new or empty --out, or --overwrite to write this run "
            "beside those files (it removes none of them)"
        )
    if not is_run_record(record):
        return (
            f"--out {path} holds a {RECORD} that no kerasrnn run wrote, not "
            f"this {task} run; pass another --out (--overwrite never "
            "replaces it)"
        )
    finished = (path / METRICS).exists()
    state = "a finished" if finished else "an unfinished"
    if record["task"] != task:
        if overwrite:
            return None
        return (
            f"--out {path} holds {state} {record['task']} run, not this "
            f"{task} run; pass another --out"
        )
    if restart:
        return None
    keep = "keep it" if finished else "resume it"
    recorded = record.get("fingerprint") or {}
    if finished:
        # Its outputs were made with these values: another value asked of
        # a finished run would find it complete with the old outputs.
        recorded = {**recorded, **recorded_output_options(path, outputs)}
        wanted = {**wanted, **outputs}
    changed = differences(recorded, wanted)
    if overwrite:
        if changed:
            return (
                f"--out {path} holds {state} {task} run with other options: "
                f"{changed}; --overwrite never discards a run of this task: "
                f"rerun with its options (without --overwrite) to {keep}, "
                "pass another --out, or --restart to discard it and start "
                "over"
            )
        return (
            f"--out {path} holds {state} {task} run with these options; "
            "--overwrite never discards a run of this task: rerun without "
            f"--overwrite to {keep}, or --restart to discard it and start over"
        )
    if changed:
        return (
            f"--out {path} holds {state} {task} run with other options: "
            f"{changed}. Rerun with its options to {keep}, or start "
            "fresh: another --out, or --restart (discards that run)"
        )
    return None


def claim_run_directory(
    path: str | os.PathLike[str],
    task: str,
    fingerprint: dict[str, Any],
    *,
    restart: bool,
    overwrite: bool,
    strategy: str = "default",
    outputs: dict[str, Any] | None = None,
) -> RunDirectory:
    """Claim `path` for one run of `task`, or say why it cannot be used.

    Args:
        path: `--out`.
        task: The task's name.
        fingerprint: The training-relevant options, name -> JSON value.
        restart: `--restart`: discard the run of `task` in `path`
            (finished or not, whatever its options) and start over; the
            one way to discard a run of the same task.
        overwrite: `--overwrite`: use `path` even though it holds another
            task's run (which is discarded) or files no run wrote (which
            are kept). Refused where `path` holds a run of `task`, or an
            entry no run wrote under a name a run writes.
        strategy: `--strategy`; under `multiworker` only the chief locks
            and writes, the other workers just read the backup.
        outputs: The options that change only what the run writes after
            training, name -> JSON value (`RunConfig.output_options`): a
            finished run in `path` made with other values is refused.

    Returns:
        A `RunDirectory`, locked on the chief.

    Raises:
        RunDirectoryError: `path` is empty or unusable, locked by another
            process, or holds a run or files these options may not use.
    """
    if not str(path).strip():
        raise RunDirectoryError(
            "--out is empty; pass the directory the run writes to"
        )
    path = pathlib.Path(path)
    wanted = normalised(fingerprint)
    chief = is_chief_process(strategy)
    lock, created = None, False
    missing = [folder for folder in (path, *path.parents) if not folder.exists()][::-1]
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
        problem = refusal(
            path, task, wanted, record, entries,
            restart=restart, overwrite=overwrite, outputs=normalised(outputs or {}),
        )
        # A worker writes nothing, and its chief may already have put this
        # run's record in place of the one a flag let it discard.
        lenient = not chief and (restart or overwrite) and is_run_record(record)
        if problem and not lenient:
            if created:
                (path / LOCK).unlink()
            raise RunDirectoryError(problem)
        made = [*missing, path / LOCK] if created else missing
        directory = RunDirectory(path, task, wanted, lock, chief, made)
        if not chief:
            return directory
        # The chief took the lock above.
        assert lock is not None
        name_holder(lock)
        if is_run_record(record) and (restart or record["task"] != task):
            # This task's run under --restart, or another task's under
            # --overwrite (`refusal` let nothing else through), discarded
            # when the run starts.
            directory.replaced = record
            directory.complete = False
        elif directory.complete:
            directory.remove_leftovers()
        elif directory.owns(record):
            directory.outputs_in_place = listed_outputs(record)
        return directory
    except BaseException:
        if lock is not None:
            lock.close()
        raise
