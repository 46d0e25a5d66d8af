"""No silent wrong answer: every bad argument is refused by name, and NumPy
scalars are taken wherever Python numbers are, stored as plain Python values.
"""

import json

import numpy as np
import pytest

import kerasrnn
from kerasrnn import validation
from kerasrnn.seq2seq import Vocabulary

CELLS = [
    kerasrnn.ElmanCell,
    kerasrnn.LeakyCell,
    kerasrnn.LSTMCell,
    kerasrnn.GRUCell,
    kerasrnn.DeepTransitionCell,
    kerasrnn.TemporalSkipCell,
    kerasrnn.MultiScaleCell,
]


def refused(call, argument, value):
    """`call()` raises a ValueError naming `argument` and `value`."""
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert f"`{argument}`" in message, message
    assert f"{argument}={value}" in message, message
    return message


# ------------------------------------------------------------- the cells
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_lstm_refuses_a_forget_bias_that_is_not_finite(value):
    message = refused(
        lambda: kerasrnn.LSTMCell(8, forget_bias=float(value)),
        "forget_bias",
        value,
    )
    assert "finite" in message


@pytest.mark.parametrize(
    "make,argument",
    [
        (lambda v: kerasrnn.GRUCell(8, reset_after=v), "reset_after"),
        (lambda v: kerasrnn.LeakyCell(8, learn_alpha=v), "learn_alpha"),
        (lambda v: kerasrnn.ElmanCell(8, use_bias=v), "use_bias"),
        (
            lambda v: kerasrnn.SkipStackedCells(
                [kerasrnn.ElmanCell(2)], input_skip=v
            ),
            "input_skip",
        ),
    ],
    ids=["reset_after", "learn_alpha", "use_bias", "input_skip"],
)
@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_booleans_must_be_booleans(make, argument, value):
    message = refused(lambda: make(value), argument, repr(value))
    assert "boolean" in message


def test_numpy_booleans_are_booleans():
    cell = kerasrnn.GRUCell(4, reset_after=np.bool_(True))
    assert cell.reset_after is True
    assert json.loads(json.dumps(cell.get_config()))["reset_after"] is True


@pytest.mark.parametrize("cls", CELLS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("integer", [np.int64, np.int32, np.uint8])
def test_numpy_integer_units_and_seed(cls, integer):
    cell = cls(integer(8), seed=integer(3))
    assert cell.units == 8 and type(cell.units) is int
    assert cell.seed == 3 and type(cell.seed) is int
    json.dumps(cell.get_config())


@pytest.mark.parametrize("floating", [np.float32, np.float64, np.float16])
def test_numpy_floating_rates_alpha_and_forget_bias(floating):
    lstm = kerasrnn.LSTMCell(
        4,
        forget_bias=floating(0.5),
        dropout=floating(0.25),
        recurrent_dropout=floating(0.125),
    )
    leaky = kerasrnn.LeakyCell(4, alpha=floating(0.75))
    values = [
        lstm.forget_bias, lstm.dropout, lstm.recurrent_dropout, leaky.alpha
    ]
    assert values == [0.5, 0.25, 0.125, 0.75]
    assert all(type(v) is float for v in values)
    json.dumps(lstm.get_config())
    json.dumps(leaky.get_config())


def test_a_float32_rate_is_stored_as_the_number_it_prints_as():
    # float(np.float32(0.1)) is 0.10000000149011612.
    cell = kerasrnn.ElmanCell(4, dropout=np.float32(0.1))
    assert cell.get_config()["dropout"] == 0.1


def test_numpy_integer_lists_and_delay():
    deep = kerasrnn.DeepTransitionCell(4, transition_units=[np.int64(3)])
    scales = kerasrnn.MultiScaleCell(4, periods=(np.int64(1), np.int32(2)))
    skip = kerasrnn.TemporalSkipCell(4, delay=np.int64(3))
    assert deep.transition_units == (3,) and scales.periods == (1, 2)
    assert skip.delay == 3 and skip.state_size == [4, 4, 4]
    for cell in (deep, scales, skip):
        json.dumps(cell.get_config())


@pytest.mark.parametrize(
    "make,argument,value",
    [
        (lambda: kerasrnn.ElmanCell(np.float64(8.0)), "units", "np.float64(8.0)"),
        (lambda: kerasrnn.ElmanCell(np.int64(0)), "units", "np.int64(0)"),
        (lambda: kerasrnn.ElmanCell(4, seed=2.5), "seed", "2.5"),
        (
            lambda: kerasrnn.ElmanCell(4, dropout=np.float32(1.0)),
            "dropout",
            "np.float32(1.0)",
        ),
        (
            lambda: kerasrnn.LeakyCell(4, alpha=np.float32(1.5)),
            "alpha",
            "np.float32(1.5)",
        ),
        (lambda: kerasrnn.LeakyCell(4, alpha=float("nan")), "alpha", "nan"),
        (lambda: kerasrnn.LeakyCell(4, alpha=True), "alpha", "True"),
        (lambda: kerasrnn.TemporalSkipCell(4, delay=1), "delay", "1"),
        (lambda: kerasrnn.TemporalSkipCell(4, delay=2.0), "delay", "2.0"),
        (
            lambda: kerasrnn.MultiScaleCell(4, periods=(1, True)),
            "periods",
            "(1, True)",
        ),
        (
            lambda: kerasrnn.DeepTransitionCell(4, transition_units=[0]),
            "transition_units",
            "[0]",
        ),
    ],
)
def test_bad_numbers_are_refused_by_name(make, argument, value):
    refused(make, argument, value)


# ------------------------------------------------------------ param_count
@pytest.mark.parametrize(
    "cell,want",
    [
        # n(d + n + 1) with n = 4, d = 3 (eq:rnn-hidden).
        (kerasrnn.ElmanCell(4), 4 * (3 + 4 + 1)),
        # 4n(d + n + 1).
        (kerasrnn.LSTMCell(4), 16 * (3 + 4 + 1)),
        # n(d + n + 1) + (n + 1) n for one transition layer.
        (kerasrnn.DeepTransitionCell(4), 4 * 8 + 5 * 4),
        (
            kerasrnn.SkipStackedCells(
                [kerasrnn.ElmanCell(2), kerasrnn.ElmanCell(2)]
            ),
            2 * (3 + 2 + 1) + 2 * (5 + 2 + 1),
        ),
    ],
    ids=["elman", "lstm", "deep", "skip-stacked"],
)
@pytest.mark.parametrize("integer", [np.int64, np.int32])
def test_param_count_takes_numpy_integers(cell, want, integer):
    count = kerasrnn.param_count(cell, integer(3))
    assert count == want and type(count) is int


@pytest.mark.parametrize("input_dim", [0, -1, 2.0, True, np.float32(3), "3"])
def test_param_count_refuses_a_bad_input_dim(input_dim):
    for cell in (
        kerasrnn.ElmanCell(4),
        kerasrnn.SkipStackedCells([kerasrnn.ElmanCell(2)]),
    ):
        refused(
            lambda cell=cell: kerasrnn.param_count(cell, input_dim),
            "input_dim",
            repr(input_dim),
        )


# ------------------------------------------------------------- Vocabulary
@pytest.mark.parametrize(
    "ids,shown",
    [
        ([-1], "-1"),
        ([4, -3], "-3"),
        ([7], "7"),  # the size: one past the last id
        ([99], "99"),
        ([4, 2, 99], "99"),  # after <end>, still an id the table lacks
        (np.array([5, 8], np.int64), "8"),
    ],
)
def test_vocabulary_decode_refuses_ids_outside_the_table(ids, shown):
    message = refused(
        lambda: Vocabulary(["a", "b", "c"]).decode(ids), "ids", ""
    )
    assert "[0, 7)" in message and f"with {shown} at index" in message


@pytest.mark.parametrize("ids", [[4.7], [4.0], np.array([4.0]), [True], ["a"]])
def test_vocabulary_decode_refuses_ids_that_are_not_integers(ids):
    message = refused(lambda: Vocabulary(["a", "b", "c"]).decode(ids), "ids", "")
    assert "integer" in message


def test_vocabulary_decode_takes_numpy_integers():
    vocabulary = Vocabulary(["a", "b", "c"])
    # ids 4, 5, 6 are a, b, c; 0 and 1 are skipped, 2 ends the sequence.
    assert vocabulary.decode(np.array([1, 6, 0, 4, 2, 5], np.int32)) == ["c", "a"]
    assert vocabulary.decode([np.int64(5), np.uint8(6)]) == ["b", "c"]
    assert vocabulary.decode([]) == []


def test_vocabulary_decode_refuses_a_batch():
    with pytest.raises(ValueError, match=r"one sequence of ids \(1-D\).*\(2, 2\)"):
        Vocabulary(["a"]).decode([[4, 2], [4, 2]])


# ------------------------------------------------- the validators themselves
def test_check_number_intervals_by_hand():
    check = validation.check_number
    assert check("x", 0, low=0, high=1) == 0.0
    assert check("x", 1, low=0, high=1) == 1.0
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\)"):
        check("x", 1, low=0, high=1, high_open=True)
    with pytest.raises(ValueError, match=r"must be a finite number > 0\. Received: x=0"):
        check("x", 0, low=0, low_open=True)
    with pytest.raises(ValueError, match=r"must be a finite number ≤ 2"):
        check("x", 2.5, high=2)
    assert check("x", np.int16(-4)) == -4.0


def test_check_choice_and_activation():
    assert validation.check_choice("mode", "sum", ("sum", "concat")) == "sum"
    refused(
        lambda: validation.check_choice("mode", "avg", ("sum", "concat")),
        "mode",
        "'avg'",
    )
    refused(
        lambda: validation.check_activation("activation", "nope"),
        "activation",
        "'nope'",
    )


def test_check_ids_keeps_the_shape_and_names_the_position():
    ids = validation.check_ids("source_ids", [[4, 5], [6, 0]], 7)
    assert ids.dtype == np.int64 and ids.shape == (2, 2)
    with pytest.raises(ValueError, match=r"with 9 at index \(1, 0\)"):
        validation.check_ids("source_ids", [[4, 5], [9, 0]], 7)
