"""Backup generations: the training state after each epoch, with the
configuration fingerprint of the run that wrote it, safe against kills."""

import hashlib
import json
import pathlib
import re
import shutil

from pipelines import durable
from pipelines.faults import BackupOfAnotherRun, BackupUnusable
from pipelines.run_directory import differences


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
    variables) and `training_metadata.json` (`epoch`, the SHA-256 of the
    weights file, and the `task` and configuration `fingerprint` of the run
    that wrote it). A generation is written under a `.partial` name and
    renamed into place in one step, so a kill leaves either the whole
    generation or none of it; the two newest are kept. Restoring takes the
    newest generation whose metadata parses, names its own epoch, matches
    its weights' checksum and loads; a damaged one falls back to the one
    before it. A generation written by another run (task or options) is not
    damaged: restoring stops there and leaves it in place.

    Args:
        directory: The `backup/` directory.
        task: The name of the task training.
        fingerprint: Its configuration fingerprint (JSON values).
        keep: Generations kept.
    """

    WEIGHTS = "model.weights.h5"
    METADATA = "training_metadata.json"
    NAME = re.compile(r"epoch-(\d{6})")

    def __init__(self, directory, task, fingerprint, keep=2):
        self.directory = pathlib.Path(directory)
        self.owner = {"task": task, "fingerprint": fingerprint}
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
        durable.fsync_path(weights)
        metadata = partial / self.METADATA
        metadata.write_text(
            json.dumps(
                {
                    "epoch": epoch,
                    "weights_sha256": file_sha256(weights),
                    **self.owner,
                }
            )
        )
        durable.fsync_path(metadata)
        durable.fsync_path(partial)
        # A damaged generation the restore skipped: this one replaces it.
        durable.move_into_place(partial, final)
        for _, older in self.generations()[self.keep :]:
            durable.remove(older)

    def metadata(self, generation):
        """The parsed metadata of a generation; raises OSError/ValueError."""
        metadata = json.loads((generation / self.METADATA).read_text())
        if not isinstance(metadata, dict):
            raise ValueError(f"not a JSON object: {metadata!r}")
        return metadata

    def check_owner(self, generation):
        """Raise `BackupOfAnotherRun` if another run wrote `generation`."""
        try:
            metadata = self.metadata(generation)
        except (OSError, ValueError):
            return  # damaged: `problem` says so
        owner = {key: metadata.get(key) for key in self.owner}
        if owner == self.owner:
            return
        if owner["task"] != self.owner["task"]:
            what = f"a {owner['task']} run"
        else:
            changed = differences(
                owner["fingerprint"] or {}, self.owner["fingerprint"]
            )
            what = f"a run with other options ({changed})"
        raise BackupOfAnotherRun(
            f"{generation} was written by {what}; this run leaves it in "
            "place and does not resume from it: pass another --out"
        )

    def problem(self, epoch, generation, model):
        """Why a generation cannot be restored, or None after loading it."""
        weights = generation / self.WEIGHTS
        try:
            metadata = self.metadata(generation)
        except (OSError, ValueError) as error:
            return f"{self.METADATA} is unreadable ({error})"
        if metadata.get("epoch") != epoch:
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
            BackupOfAnotherRun: a generation was written by another run.
            BackupUnusable: generations exist and none of them can be
                restored; the message lists each one and what is wrong.
        """
        generations = self.generations()
        for _, generation in generations:
            self.check_owner(generation)
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
                    durable.remove(damaged)
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
            + "\nRerun with --restart to start it over from epoch 1, "
            "or pass another --out."
        )
