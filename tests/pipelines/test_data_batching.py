"""tf.data assembly: record checks with positions, bucketing, seeded shuffling."""

import numpy as np
import pytest

from kerasrnn_pipelines.data.batching import (
    bucketed_batches,
    check_aligned,
    check_sequences,
    dense_batches,
)
from kerasrnn_pipelines.faults import MalformedRecord


@pytest.mark.parametrize(
    "records, kind, message",
    [
        ([[1, 2], [3], []], "i", "tokens record 2 is empty"),
        ([[1, 2], "abc"], "i", "tokens record 1 is a string ('abc')"),
        ([[1, 2], [1.5, 2.0]], "i", "tokens record 1 holds float64 values"),
        ([[1], [[1, 2], [3, 4]]], "i", "tokens record 1 has shape (2, 2)"),
        ([[0.5], [1.0, float("nan")]], "f", "tokens record 1 holds [1.0, nan]"),
        ([[1], [1, None]], "f", "tokens record 1 holds [1, None]"),
    ],
)
def test_malformed_records_are_reported_with_their_position(
    records, kind, message
):
    with pytest.raises(MalformedRecord) as error:
        check_sequences(records, "tokens", kind)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


def test_misaligned_labels_are_reported_with_their_position():
    inputs = [np.array([1, 2]), np.array([3, 4, 5])]
    with pytest.raises(
        MalformedRecord, match="train record 1 has 3 inputs but 2 labels"
    ):
        check_aligned(inputs, [np.array([0, 1]), np.array([1, 1])], "train")


def collect(dataset):
    return [tuple(np.asarray(part) for part in batch) for batch in dataset]


def test_bucketed_batches_keep_every_sequence_once_padded_and_weighted(rng):
    lengths = rng.integers(1, 30, size=103)
    inputs = [rng.integers(1, 50, size=n).astype("int32") for n in lengths]
    labels = [rng.integers(0, 4, size=n).astype("int32") for n in lengths]
    dataset = bucketed_batches(
        inputs, labels, batch_size=8, shuffle=True, seed=3
    )
    batches = collect(dataset)
    assert len(batches) == int(dataset.cardinality())
    seen = []
    for x, y, w in batches:
        assert x.shape == y.shape == w.shape and x.shape[0] <= 8
        for row in range(x.shape[0]):
            length = int(w[row].sum())
            # Real steps first, then padding: zero ids, zero labels, zero weight.
            assert np.all(w[row, :length] == 1) and np.all(w[row, length:] == 0)
            assert np.all(x[row, length:] == 0) and np.all(y[row, length:] == 0)
            seen.append((tuple(x[row, :length]), tuple(y[row, :length])))
    expected = [(tuple(a), tuple(b)) for a, b in zip(inputs, labels)]
    assert sorted(seen) == sorted(expected)
    # Bucketing keeps padding small: each batch spans a narrow range of lengths.
    spreads = [np.ptp(w.sum(axis=1)) for _, _, w in batches]
    assert np.mean(spreads) < np.ptp(lengths) / 2


def test_per_sequence_labels_get_one_weight_per_sequence():
    inputs = [np.array([1, 2, 3]), np.array([4]), np.array([5, 6])]
    x, y, w = collect(
        bucketed_batches(inputs, [1, 0, 1], 4, shuffle=False, seed=0, buckets=1)
    )[0]
    np.testing.assert_array_equal(x, [[1, 2, 3], [4, 0, 0], [5, 6, 0]])
    np.testing.assert_array_equal(y, [1, 0, 1])
    np.testing.assert_array_equal(w, [1, 1, 1])


def test_shuffling_is_seeded_deterministic_and_reshuffles_each_epoch():
    features = np.arange(40, dtype="float32")[:, None]
    labels = np.arange(40, dtype="float32")

    def epochs(seed):
        dataset = dense_batches(features, labels, 10, shuffle=True, seed=seed)
        return [
            np.concatenate([y for _, y in collect(dataset)]) for _ in range(2)
        ]

    first, again, other = epochs(7), epochs(7), epochs(8)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert sorted(first[0]) == list(range(40))
    assert not np.array_equal(first[0], first[1])  # a new order each epoch
    assert not np.array_equal(first[0], other[0])  # the seed matters
    unshuffled = dense_batches(features, labels, 10, shuffle=False, seed=7)
    np.testing.assert_array_equal(
        np.concatenate([y for _, y in collect(unshuffled)]), np.arange(40)
    )


def ragged_records(rng, count, longest):
    lengths = rng.integers(1, longest, size=count)
    inputs = [rng.integers(1, 50, size=n).astype("int32") for n in lengths]
    labels = [rng.integers(0, 4, size=n).astype("int32") for n in lengths]
    return inputs, labels


def epoch_order(dataset):
    """Each example's (inputs, labels) in the order one epoch yields them."""
    order = []
    for x, y, w in collect(dataset):
        for row in range(x.shape[0]):
            length = int(w[row].sum())
            order.append((tuple(x[row, :length]), tuple(y[row, :length])))
    return order


@pytest.mark.slow
def test_bucketed_shuffling_is_seeded_exactly_once_and_new_each_epoch(rng):
    inputs, labels = ragged_records(rng, 157, 40)
    expected = sorted((tuple(a), tuple(b)) for a, b in zip(inputs, labels))

    def two_epochs(seed):
        dataset = bucketed_batches(
            inputs, labels, batch_size=8, shuffle=True, seed=seed
        )
        return [epoch_order(dataset) for _ in range(2)], dataset

    (first, second), dataset = two_epochs(5)
    (first_again, second_again), _ = two_epochs(5)
    (other, _), _ = two_epochs(6)
    # Every example exactly once per epoch, in the stated number of batches.
    assert sorted(first) == expected and sorted(second) == expected
    assert len(collect(dataset)) == int(dataset.cardinality())
    # Buckets hold 8 length ranges of ~20 examples: ceil(size / 8) each.
    lengths = np.array([len(x) for x in inputs])
    edges = sorted(
        {int(q) + 1 for q in np.quantile(lengths, np.arange(1, 8) / 8)}
    )
    sizes = np.bincount(np.searchsorted(edges, lengths, side="right"))
    assert int(dataset.cardinality()) == sum(-(-s // 8) for s in sizes if s)
    # Reproducible for a seed, reshuffled each epoch, different per seed.
    assert first == first_again and second == second_again
    assert first != second
    assert first != other


def test_unshuffled_bucketed_batches_run_shortest_bucket_first(rng):
    inputs, labels = ragged_records(rng, 60, 25)
    dataset = bucketed_batches(inputs, labels, 4, shuffle=False, seed=0)
    order = epoch_order(dataset)
    assert order == epoch_order(dataset)
    assert sorted(order) == sorted(
        (tuple(a), tuple(b)) for a, b in zip(inputs, labels)
    )
    longest = [max(len(x) for x, _ in order[i : i + 4]) for i in (0, 56)]
    assert longest[0] < longest[1]
