"""Backup generations: the training state after each epoch, with the
configuration fingerprint of the run that wrote it, safe against kills."""

import hashlib
import json
import os
import pathlib
import re
import shutil
from collections.abc import Iterable
from typing import Any

import keras

from kerasrnn_pipelines import durable
from kerasrnn_pipelines.faults import BackupOfAnotherRun, BackupUnusable
from kerasrnn_pipelines.run_directory import differences


def file_sha256(path: pathlib.Path) -> str:
    """The SHA-256 of the file at `path`, as hexadecimal digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def random_generator_states(model: keras.Model) -> list[keras.Variable]:
    """The state variables of `model`'s `keras.random.SeedGenerator`s, in
    the model's order.

    Every random draw of training comes from one: the cells' dropout masks
    and scheduled sampling's coin flips. Each draw advances its generator's
    state, a variable that `save_weights` leaves out, so a resumed run must
    get it back from the backup to draw what the uninterrupted run draws.
    Keras names the variable `seed_generator_state`
    (`keras.random.SeedGenerator.state`).
    """
    return [
        variable
        for variable in model.variables
        if variable.name == "seed_generator_state"
    ]


class Generation:
    """One backup generation: the directory `epoch-NNNNNN/` (N finished
    epochs) with `model.weights.h5` (the model's and the optimizer's
    variables) and `training_metadata.json` (`epoch`, the SHA-256 of the
    weights file, the states of the model's random generators, the
    `training_seconds` its N epochs took over all sittings, and the `task`
    and configuration `fingerprint` of the run that wrote it).

    Args:
        backup_dir: The `backup/` directory holding it.
        epoch: Its number of finished epochs.
    """

    WEIGHTS = "model.weights.h5"
    METADATA = "training_metadata.json"
    NAME = re.compile(r"epoch-(\d{6})")

    def __init__(self, backup_dir: str | os.PathLike[str], epoch: int) -> None:
        self.epoch = epoch
        self.directory = pathlib.Path(backup_dir) / f"epoch-{epoch:06d}"

    def write(
        self,
        model: keras.Model,
        owner: dict[str, Any],
        training_seconds: float | None = None,
    ) -> None:
        """Write it under a `.partial` name, then rename it into place in
        one step: a kill leaves either all of it or none.

        `training_seconds` (None: unknown, left out) is what its epochs
        took, summed over the sittings that trained them."""
        partial = self.directory.with_name(f"{self.directory.name}.partial")
        # Left by a kill while this epoch was being written before.
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        weights = partial / self.WEIGHTS
        model.save_weights(weights, overwrite=True)
        durable.fsync_path(weights)
        metadata = partial / self.METADATA
        metadata.write_text(
            json.dumps(
                {
                    "epoch": self.epoch,
                    "weights_sha256": file_sha256(weights),
                    "random_states": [
                        state.numpy().tolist()
                        for state in random_generator_states(model)
                    ],
                    **(
                        {}
                        if training_seconds is None
                        else {"training_seconds": round(training_seconds, 3)}
                    ),
                    **owner,
                }
            )
        )
        durable.fsync_path(metadata)
        durable.fsync_path(partial)
        # A damaged generation the restore skipped: this one replaces it.
        durable.move_into_place(partial, self.directory)

    def metadata(self) -> dict[str, Any]:
        """The parsed metadata; raises OSError or ValueError."""
        metadata = json.loads((self.directory / self.METADATA).read_text())
        if not isinstance(metadata, dict):
            raise ValueError(f"not a JSON object: {metadata!r}")
        return metadata

    def writer(self, keys: Iterable[str]) -> dict[str, Any] | None:
        """The metadata's `keys` (who wrote it), or None if unreadable."""
        try:
            metadata = self.metadata()
        except (OSError, ValueError):
            return None
        return {key: metadata.get(key) for key in keys}

    def problem(self, model: keras.Model) -> str | None:
        """Why it cannot be restored, or None after loading it into `model`."""
        weights = self.directory / self.WEIGHTS
        try:
            metadata = self.metadata()
        except (OSError, ValueError) as error:
            return f"{self.METADATA} is unreadable ({error})"
        if metadata.get("epoch") != self.epoch:
            return (
                f"{self.METADATA} does not name epoch {self.epoch}: "
                f"{metadata!r}"
            )
        try:
            digest = file_sha256(weights)
        except OSError as error:
            return f"{self.WEIGHTS} is unreadable ({error})"
        if digest != metadata.get("weights_sha256"):
            return f"{self.WEIGHTS} does not match its recorded checksum"
        generators = random_generator_states(model)
        # Absent from backups of earlier releases: those resume as they did.
        saved_states = metadata.get("random_states", None)
        if saved_states is not None and len(saved_states) != len(generators):
            return (
                f"{self.METADATA} holds {len(saved_states)} random generator "
                f"states; the model has {len(generators)}"
            )
        try:
            model.load_weights(weights)
        except Exception as error:  # noqa: BLE001
            # h5py and Keras raise many types for a file that does not fit.
            kind = type(error).__name__
            return f"{self.WEIGHTS} does not load ({kind}: {error})"
        for variable, state in zip(generators, saved_states or []):
            variable.assign(state)
        return None


class TrainingBackup:
    """The training state after each finished epoch, safe against kills.

    A `Generation` is written after every epoch; the two newest are kept.
    Restoring takes the newest generation whose metadata parses, names its
    own epoch, matches its weights' checksum and loads; a damaged one falls
    back to the one before it. A generation written by another run (task
    or options) is not damaged: restoring stops there and leaves it in
    place.

    Args:
        directory: The `backup/` directory.
        task: The name of the task training.
        fingerprint: Its configuration fingerprint (JSON values).
        keep: Generations kept.

    Attributes:
        training_seconds: The seconds the finished epochs took, summed over
            the sittings that trained them: what `restore` read, then what
            the last `save` wrote. None before `restore`, and after
            restoring a generation of an earlier release, which did not
            record it (its run's time is then unknown).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        task: str,
        fingerprint: dict[str, Any],
        keep: int = 2,
    ) -> None:
        self.directory = pathlib.Path(directory)
        self.owner: dict[str, Any] = {"task": task, "fingerprint": fingerprint}
        self.keep = keep
        self.training_seconds: float | None = None

    def generations(self) -> list[Generation]:
        """Every complete `Generation`, newest first."""
        if not self.directory.is_dir():
            return []
        found = []
        for entry in self.directory.iterdir():
            match = Generation.NAME.fullmatch(entry.name)
            if match and entry.is_dir():
                found.append(Generation(self.directory, int(match.group(1))))
        return sorted(found, key=lambda generation: -generation.epoch)

    def save(
        self, model: keras.Model, epoch: int, training_seconds: float | None = None
    ) -> None:
        """Write the generation of `epoch` finished epochs, which took
        `training_seconds` (None: unknown); drop old ones."""
        Generation(self.directory, epoch).write(model, self.owner, training_seconds)
        self.training_seconds = training_seconds
        for older in self.generations()[self.keep :]:
            durable.remove(older.directory)

    def check_owner(self, generation: Generation) -> None:
        """Raise `BackupOfAnotherRun` if another run wrote `generation`."""
        owner = generation.writer(self.owner)
        if owner is None or owner == self.owner:
            return  # this run's, or damaged: `Generation.problem` says so
        if owner["task"] != self.owner["task"]:
            what = f"a {owner['task']} run"
        else:
            changed = differences(
                owner["fingerprint"] or {}, self.owner["fingerprint"]
            )
            what = f"a run with other options ({changed})"
        raise BackupOfAnotherRun(
            f"{generation.directory} was written by {what}; this run leaves "
            "it in place and does not resume from it: pass another --out"
        )

    def restore(self, model: keras.Model) -> int:
        """Load the newest usable generation into `model`.

        `model` must be built and compiled; call inside the strategy scope.

        Returns:
            The number of finished epochs restored: 0 when there is no
            complete generation (a fresh run, or a kill during the first
            backup). `training_seconds` is then the generation's (0 for
            none).

        Raises:
            BackupOfAnotherRun: a generation was written by another run.
            BackupUnusable: generations exist and none of them can be
                restored; the message lists each one and what is wrong.
        """
        generations = self.generations()
        for generation in generations:
            self.check_owner(generation)
        self.training_seconds = 0.0
        if not generations:
            return 0
        if model.optimizer is not None and not model.optimizer.built:
            # The backup holds the optimizer's variables too.
            model.optimizer.build(model.trainable_variables)
        problems: list[str] = []
        for generation in generations:
            problem = generation.problem(model)
            if problem is None:
                self.training_seconds = generation.metadata().get("training_seconds")
                for damaged in generations[: len(problems)]:
                    durable.remove(damaged.directory)
                if problems:
                    print(
                        "The newest backup is damaged ("
                        + "; ".join(problems)
                        + "); resuming from the one before it, "
                        f"epoch {generation.epoch}.",
                        flush=True,
                    )
                return generation.epoch
            problems.append(f"{generation.directory}: {problem}")
        raise BackupUnusable(
            "the run in this output directory was interrupted and no backup "
            "in it can be restored:\n  "
            + "\n  ".join(problems)
            + "\nRerun with --restart to start it over from epoch 1, "
            "or pass another --out."
        )
