"""Which signature of a seq2seq LiteRT file answers each source.

A file written by `kerasrnn.seq2seq.export_litert` lists its signatures in
`vocabulary.json`'s `buckets`, shortest source first, `serving_default`
last: each reads sources of at most its `max_source_length` tokens. A
source goes to the first bucket that holds it, and the sources of one
bucket make one call, padded to its length. This module says that once, for
every client of the file.

It imports NumPy alone (neither TensorFlow nor Keras), so that a client
without them, such as `examples/g2p_litert.py`, imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np


class BucketCall(NamedTuple):
    """One call of a signature: some sources, padded to its length.

    Attributes:
        signature: The signature's key (`"source_8"`, `"serving_default"`).
        rows: The index, among the sources routed, of each row of
            `source_ids`, in order.
        source_ids: int32 `(len(rows), max_source_length)`: each source's
            ids, then `pad_id`.
    """

    signature: str
    rows: list[int]
    source_ids: np.ndarray


def bucket_calls(
    sources: Sequence[Sequence[int]],
    buckets: Sequence[Mapping[str, Any]],
    pad_id: int,
    cut_longer: bool = False,
) -> tuple[list[BucketCall], list[int]]:
    """The calls that answer `sources`, one per bucket that holds some.

    Args:
        sources: Lists of source ids, without padding.
        buckets: `vocabulary.json`'s `buckets`: dicts with `signature` and
            `max_source_length`, shortest first.
        pad_id: The id rows are padded with.
        cut_longer: What to do with a source longer than the last bucket:
            send it to the last bucket cut to its first `max_source_length`
            ids (as the SavedModel reads only the first that many), or
            leave it out.

    Returns:
        `(calls, too_long)`: a `BucketCall` per bucket that holds some
        source, in the order of `buckets`; and the indices of the sources
        left out for being too long (empty with `cut_longer`).
    """
    calls = []
    pending = list(range(len(sources)))
    for position, bucket in enumerate(buckets):
        length = bucket["max_source_length"]
        last = position == len(buckets) - 1
        takes = [i for i in pending if len(sources[i]) <= length or (last and cut_longer)]
        taken = set(takes)
        pending = [i for i in pending if i not in taken]
        if not takes:
            continue
        ids = np.full((len(takes), length), pad_id, np.int32)
        for row, index in enumerate(takes):
            source = sources[index][:length]
            ids[row, : len(source)] = source
        calls.append(BucketCall(bucket["signature"], takes, ids))
    return calls, pending
