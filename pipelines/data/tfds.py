"""TFDS datasets for online users, failing at once when one is not on disk.

`tfds.load(..., download=False)` reads only what `tfds build NAME` (or an
earlier `tfds.load(NAME)` with network) prepared under the TFDS data
directory (`$TFDS_DATA_DIR`, else `~/tensorflow_datasets`). When the data
are missing it raises at once, so this module never waits on a download
that cannot happen; it turns that error into `DatasetNotOnDisk`, naming the
dataset and the command that fetches it. What TFDS logs while it looks
(such as a notice that a version folder has no `dataset_info.json`, which
is what missing data look like) is held back, and let through only if the
data load.
"""

import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import tensorflow as tf

from kerasrnn_pipelines.faults import DatasetNotOnDisk


def load_tfds(
    name: str, splits: Iterable[str], data_dir: str | None = None
) -> tuple[list[tf.data.Dataset], Any]:
    """Load prepared TFDS splits as `tf.data.Dataset`s of feature dicts.

    Args:
        name: TFDS name, e.g. `"imdb_reviews"` or `"conll2003"`.
        splits: List of split names, e.g. `["train", "test"]`.
        data_dir: TFDS data directory; TFDS's default when None.

    Returns:
        `(datasets, info)`: one dataset per split, each element a dict of
        features, and the `tfds.core.DatasetInfo` (label names, sizes).

    Raises:
        DatasetNotOnDisk: the dataset (or a split) is not prepared on disk,
            or TFDS does not know the name.
        ModuleNotFoundError: `tensorflow-datasets` is not installed.
    """
    try:
        import tensorflow_datasets as tfds
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "TFDS datasets need the PyPI package `tensorflow-datasets`: "
            "pip install 'kerasrnn[data]'."
        ) from error
    how = (
        f"To get it, run once with network access: `tfds build {name}` "
        f'(or python -c "import tensorflow_datasets as tfds; '
        f"tfds.load('{name}')\"), then rerun."
    )
    try:
        with held_log_records("absl") as held:
            loaded = tfds.load(
                name,
                split=list(splits),
                download=False,
                data_dir=data_dir,
                with_info=True,
            )
    except tfds.core.registered.DatasetNotFoundError as error:
        raise DatasetNotOnDisk(
            f"TFDS has no dataset named {name!r} ({error})."
        ) from None
    except (AssertionError, FileNotFoundError, ValueError) as error:
        # TFDS reports data missing from `data_dir` as an AssertionError
        # and a missing split as a ValueError.
        raise DatasetNotOnDisk(
            f"TFDS dataset {name!r} is not on disk ({error}). {how}"
        ) from None
    for record in held:
        logging.getLogger(record.name).handle(record)
    return loaded


@contextlib.contextmanager
def held_log_records(logger_name: str) -> Iterator[list[logging.LogRecord]]:
    """The records logged to `logger_name` inside the block, kept in the
    list it yields instead of being handled."""
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        held.append(record)
        return False

    logger = logging.getLogger(logger_name)
    logger.addFilter(hold)
    try:
        yield held
    finally:
        logger.removeFilter(hold)
