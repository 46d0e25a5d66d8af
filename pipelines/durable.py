"""File operations that a kill at any moment leaves whole or untouched.

Everything a rerun reads is written under a scratch name and renamed into
place in one step (`os.replace`), then flushed with `fsync`; a directory is
removed by renaming it away first, so that no kill leaves half of it under
its real name.
"""

import os
import pathlib
import shutil


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush a file or directory to disk (a rename is durable only then)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


#: How `scratch_name` marks a file in flight.
SCRATCH_PREFIX = ".partial-"


def scratch_name(path: str | os.PathLike[str]) -> pathlib.Path:
    """The hidden name beside `path` under which it is written first.

    The suffix is kept, since Keras and Matplotlib choose the format by it.
    """
    path = pathlib.Path(path)
    return path.with_name(f"{SCRATCH_PREFIX}{path.name}")


def is_scratch_name(name: str) -> bool:
    """Whether `name` is a `scratch_name`: a file in flight (or left by a
    kill mid-write), not anything a user put there."""
    return name.startswith(SCRATCH_PREFIX)


def remove(path: str | os.PathLike[str]) -> None:
    """Remove a file or a directory tree; nothing if it does not exist."""
    path = pathlib.Path(path)
    doomed = path.with_name(f"{path.name}.retired")
    # Left by a kill during an earlier removal of `path`.
    shutil.rmtree(doomed, ignore_errors=True)
    if path.is_dir() and not path.is_symlink():
        os.replace(path, doomed)
        shutil.rmtree(doomed)
    else:
        path.unlink(missing_ok=True)


def move_into_place(
    source: str | os.PathLike[str], target: str | os.PathLike[str]
) -> None:
    """Rename `source` (a file or a directory) to `target`, replacing it.

    A directory cannot be renamed over a non-empty one, so an existing
    `target` directory is removed first; a kill in between leaves `source`
    whole and `target` absent.
    """
    source, target = pathlib.Path(source), pathlib.Path(target)
    if target.is_dir() and not target.is_symlink():
        remove(target)
    os.replace(source, target)
    fsync_path(target.parent)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to `path` through a scratch file and one rename."""
    path = pathlib.Path(path)
    scratch = scratch_name(path)
    scratch.write_text(text)
    fsync_path(scratch)
    move_into_place(scratch, path)
