"""`kerasrnn.export.seq2seq_buckets`: which signature of a seq2seq LiteRT
file answers each source, on hand-worked examples, and its import where
neither TensorFlow nor Keras can be imported (as the example client runs)."""

import numpy as np
import pytest

from kerasrnn.export.seq2seq_buckets import bucket_calls
from tests.isolated import CLIENT_WITHOUT, last_json, run_without

BUCKETS = [
    {"signature": "source_2", "max_source_length": 2, "max_target_length": 3},
    {"signature": "serving_default", "max_source_length": 4, "max_target_length": 6},
]
# Lengths 0, 3, 1, 4, 6 and 2: the empty source and those of 1 and 2 ids
# fit the first bucket, those of 3 and 4 the last, the one of 6 none.
SOURCES = [[], [5, 6, 7], [8], [4, 5, 6, 7], [9, 8, 7, 6, 5, 4], [6, 6]]


def test_each_source_goes_to_the_first_bucket_that_holds_it():
    calls, too_long = bucket_calls(SOURCES, BUCKETS, pad_id=0)
    assert [call.signature for call in calls] == ["source_2", "serving_default"]
    assert [call.rows for call in calls] == [[0, 2, 5], [1, 3]]
    np.testing.assert_array_equal(calls[0].source_ids, [[0, 0], [8, 0], [6, 6]])
    np.testing.assert_array_equal(calls[1].source_ids, [[5, 6, 7, 0], [4, 5, 6, 7]])
    assert all(call.source_ids.dtype == np.int32 for call in calls)
    assert too_long == [4]


def test_a_longer_source_is_cut_into_the_last_bucket_when_asked():
    calls, too_long = bucket_calls(SOURCES, BUCKETS, pad_id=1, cut_longer=True)
    assert too_long == []
    assert calls[1].rows == [1, 3, 4]
    np.testing.assert_array_equal(
        calls[1].source_ids, [[5, 6, 7, 1], [4, 5, 6, 7], [9, 8, 7, 6]]
    )
    np.testing.assert_array_equal(calls[0].source_ids, [[1, 1], [8, 1], [6, 6]])


def test_a_bucket_that_holds_no_source_makes_no_call():
    calls, too_long = bucket_calls([[5, 6, 7]], BUCKETS, pad_id=0)
    assert [(call.signature, call.rows) for call in calls] == [("serving_default", [0])]
    assert too_long == []
    assert bucket_calls([], BUCKETS, pad_id=0) == ([], [])


@pytest.mark.slow
def test_it_imports_without_tensorflow_or_keras():
    program = """
        import json
        import sys

        from kerasrnn.export.seq2seq_buckets import bucket_calls

        calls, too_long = bucket_calls([[4, 5], [6]], [
            {"signature": "serving_default", "max_source_length": 1}
        ], pad_id=0)
        loaded = sorted(
            name for name in ("tensorflow", "keras") if name in sys.modules
        )
        print(json.dumps({"rows": [call.rows for call in calls], "too_long": too_long,
                          "loaded": loaded}))
        """
    report = last_json(run_without(CLIENT_WITHOUT, program))
    assert report == {"rows": [[1]], "too_long": [0], "loaded": []}
