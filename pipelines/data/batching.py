"""tf.data assembly shared by the tasks: check, cache, shuffle, batch, prefetch.

Order, as in the TensorFlow Model Garden loaders: records are checked in
Python (a bad record is reported by position, not as an error deep inside
TensorFlow), then `cache` (decoding happens once), a seeded `shuffle`
(deterministic: the same seed gives the same batches), batching — padded
batches grouped by length (one dataset per length bucket, interleaved by
`sample_from_datasets`) for sequences of different lengths — and
`prefetch(AUTOTUNE)` so the next batch is ready while the model trains on
this one.
"""

from collections.abc import Iterable, Sequence, Sized
from typing import Any

import numpy as np
import tensorflow as tf

from kerasrnn.types import TensorLike
from kerasrnn_pipelines.faults import MalformedRecord

AUTOTUNE = tf.data.AUTOTUNE


def check_sequences(
    sequences: Iterable[Any], name: str, dtype_kind: str = "i"
) -> list[np.ndarray]:
    """Check that every record is a non-empty 1-D sequence of numbers.

    Args:
        sequences: Iterable of records (lists, tuples or 1-D arrays).
        name: What the records are, for the message (e.g. `"inputs"`).
        dtype_kind: `"i"` for integer ids, `"f"` for real values.

    Returns:
        List of 1-D NumPy arrays (int32 or float32).

    Raises:
        MalformedRecord: a record is empty, not 1-D, or holds a value of
            the wrong type; the message gives its position and value.
    """
    checked = []
    for position, record in enumerate(sequences):
        if isinstance(record, (str, bytes)):
            raise MalformedRecord(
                f"{name} record {position} is a string ({record!r}); "
                "expected a sequence of numbers"
            )
        try:
            array = np.asarray(record)
        except (TypeError, ValueError) as error:
            raise MalformedRecord(
                f"{name} record {position} is not an array: {error}"
            ) from None
        if array.ndim != 1:
            raise MalformedRecord(
                f"{name} record {position} has shape {array.shape}; "
                "expected a 1-D sequence"
            )
        if array.size == 0:
            raise MalformedRecord(
                f"{name} record {position} is empty; every sequence needs "
                "at least one step"
            )
        if dtype_kind == "i" and array.dtype.kind not in "iu":
            raise MalformedRecord(
                f"{name} record {position} holds {array.dtype} values "
                f"({record!r}); expected integer ids"
            )
        if dtype_kind == "f" and (
            array.dtype.kind not in "iuf" or not np.all(np.isfinite(array))
        ):
            raise MalformedRecord(
                f"{name} record {position} holds {record!r}; "
                "expected finite real numbers"
            )
        checked.append(
            array.astype("int32" if dtype_kind == "i" else "float32")
        )
    return checked


def check_aligned(
    inputs: Sequence[Sized], labels: Sequence[Sized], name: str
) -> None:
    """Check that each label sequence is as long as its input sequence.

    Raises:
        MalformedRecord: naming the first position where lengths differ.
    """
    if len(inputs) != len(labels):
        raise MalformedRecord(
            f"{name}: {len(inputs)} input records but {len(labels)} label records"
        )
    for position, (x, y) in enumerate(zip(inputs, labels)):
        if len(x) != len(y):
            raise MalformedRecord(
                f"{name} record {position} has {len(x)} inputs but "
                f"{len(y)} labels; a tag is needed for every step"
            )


def dense_batches(
    features: np.ndarray,
    labels: np.ndarray,
    batch_size: int,
    shuffle: bool,
    seed: int | None,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """Batches of fixed-shape arrays.

    Args:
        features: Array `(examples, ...)`.
        labels: Array `(examples, ...)`.
        batch_size: Global batch size.
        shuffle: Reshuffle every epoch (seeded).
        seed: Shuffle seed.
        drop_remainder: Drop a last partial batch (stateful models).

    Returns:
        `tf.data.Dataset` of `(features, labels)` batches.
    """
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).cache()
    if shuffle:
        dataset = dataset.shuffle(
            len(features), seed=seed, reshuffle_each_iteration=True
        )
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(
        AUTOTUNE
    )


def bucket_boundaries(lengths: Sequence[int] | np.ndarray, buckets: int = 8) -> list[int]:
    """Bucket edges at quantiles of the observed lengths (strictly rising)."""
    quantiles = np.quantile(lengths, np.linspace(0, 1, buckets + 1)[1:-1])
    return sorted({int(edge) + 1 for edge in quantiles})


def bucketed_batches(
    inputs: list[np.ndarray],
    labels: list[Any] | np.ndarray,
    batch_size: int,
    shuffle: bool,
    seed: int | None,
    buckets: int = 8,
    per_step_extra: list[np.ndarray] | None = None,
) -> tf.data.Dataset:
    """Padded batches of variable-length sequences, grouped by length.

    Sequences are padded with 0 (the id models mask; labels padded with 0
    too) to the longest one in their batch; grouping by length keeps that
    padding small. Each element also carries a sample weight, 1 on real
    steps and 0 on padding, so losses and metrics ignore the padding under
    every strategy.

    Each length bucket is its own cached, shuffled, padded-batched dataset;
    with `shuffle` the buckets' batches are interleaved by
    `tf.data.Dataset.sample_from_datasets`, each bucket drawn in proportion
    to its number of batches, so every example is seen once per epoch.
    (`bucket_by_sequence_length` groups element by element after the
    shuffle, at about a tenth of this throughput on the tag task.) Without
    `shuffle` the buckets follow each other, shortest first.

    Args:
        inputs: List of 1-D int32 arrays (ids >= 1; 0 is padding).
        labels: List of 1-D arrays aligned with `inputs` (per-step labels),
            or one label per sequence as a 1-D array/list of scalars.
        batch_size: Global batch size.
        shuffle: Reshuffle every epoch (seeded): the order inside each
            bucket and the interleaving of the buckets.
        seed: Shuffle seed.
        buckets: Number of length buckets.
        per_step_extra: Optional float32 arrays aligned with `inputs`, one
            `(steps, features)` array per example (a teacher's logits),
            batched beside the labels and padded with 0 like them.

    Returns:
        `tf.data.Dataset` of `(inputs, labels, sample_weight)` batches
        (`(inputs, labels, sample_weight, extra)` with `per_step_extra`);
        per-step labels give `sample_weight` `(batch, time)`, per-sequence
        labels give `(batch,)` ones.
    """
    per_step = np.ndim(labels[0]) == 1
    lengths = np.array([len(x) for x in inputs])
    boundaries = bucket_boundaries(lengths, buckets)
    bucket_of = np.searchsorted(boundaries, lengths, side="right")
    label_dtype = tf.as_dtype(np.asarray(labels[0]).dtype)

    def to_example(
        x: TensorLike, y: TensorLike, *extra: TensorLike
    ) -> tuple[TensorLike, ...]:
        weight = (
            tf.ones_like(y, dtype=tf.float32)
            if per_step
            else tf.constant(1.0, tf.float32)
        )
        return (x, y, weight, *extra)

    step_shape: list[int | None] = [None] if per_step else []
    padded_shapes: tuple[list[int | None], ...] = ([None], step_shape, step_shape)
    if per_step_extra is not None:
        padded_shapes += ([None, per_step_extra[0].shape[1]],)
    per_bucket, batch_counts = [], []
    for bucket in np.unique(bucket_of):
        members = np.flatnonzero(bucket_of == bucket)
        bucket_inputs = tf.ragged.constant(
            [inputs[i] for i in members], dtype=tf.int32
        )
        if per_step:
            bucket_labels = tf.ragged.constant(
                [labels[i] for i in members], dtype=label_dtype
            )
        else:
            bucket_labels = tf.constant(np.asarray(labels)[members])
        components: tuple[Any, ...] = (bucket_inputs, bucket_labels)
        if per_step_extra is not None:
            # From the rows' lengths: `tf.ragged.constant` walks every value
            # in Python.
            components += (
                tf.RaggedTensor.from_row_lengths(
                    np.concatenate([per_step_extra[i] for i in members]).astype(np.float32),
                    [len(per_step_extra[i]) for i in members],
                ),
            )
        dataset = (
            tf.data.Dataset.from_tensor_slices(components)
            .map(to_example, num_parallel_calls=AUTOTUNE)
            .cache()
        )
        if shuffle:
            # A seed per bucket: equal-sized buckets must not share an order.
            dataset = dataset.shuffle(
                len(members),
                seed=None if seed is None else seed + int(bucket),
                reshuffle_each_iteration=True,
            )
        per_bucket.append(dataset.padded_batch(batch_size, padded_shapes))
        batch_counts.append(-(-len(members) // batch_size))
    if shuffle and len(per_bucket) > 1:
        dataset = tf.data.Dataset.sample_from_datasets(
            per_bucket,
            weights=[count / sum(batch_counts) for count in batch_counts],
            seed=seed,
            stop_on_empty_dataset=False,
            rerandomize_each_iteration=True,
        )
    else:
        dataset = per_bucket[0]
        for following in per_bucket[1:]:
            dataset = dataset.concatenate(following)
    # Stating the total lets the progress bar show it from the first epoch.
    dataset = dataset.apply(
        tf.data.experimental.assert_cardinality(sum(batch_counts))
    )
    return dataset.prefetch(AUTOTUNE)
