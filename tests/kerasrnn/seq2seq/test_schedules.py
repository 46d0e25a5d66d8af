"""Scheduled-sampling ε against hand-worked values (Bengio et al. 2015, §2.4)."""

import math

import keras
import numpy as np
import pytest

from kerasrnn import seq2seq


@pytest.mark.parametrize(
    "schedule, steps, expected",
    [
        # max(0.2, 1 − i/10): 1, 0.5, 0.2 (floor), 0.2.
        (seq2seq.LinearSamplingSchedule(10, minimum=0.2), [0, 5, 8, 100], [1.0, 0.5, 0.2, 0.2]),
        (seq2seq.LinearSamplingSchedule(4), [0, 1, 4, 6], [1.0, 0.75, 0.0, 0.0]),
        # 0.5^i: 1, 0.5, 0.125.
        (seq2seq.ExponentialSamplingSchedule(0.5), [0, 1, 3], [1.0, 0.5, 0.125]),
        # k / (k + e^{i/k}) with k = 2: 2/3, 2/(2+e), 2/(2+e^5); with k = 1: 1/2.
        (
            seq2seq.InverseSigmoidSamplingSchedule(2),
            [0, 2, 10],
            [2 / 3, 2 / (2 + math.e), 2 / (2 + math.exp(5))],
        ),
        (seq2seq.InverseSigmoidSamplingSchedule(1), [0], [0.5]),
    ],
)
def test_schedule_values(schedule, steps, expected):
    got = [float(schedule(step)) for step in steps]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_inverse_sigmoid_has_no_overflow_far_out():
    assert float(seq2seq.InverseSigmoidSamplingSchedule(5)(10**6)) == 0.0


@pytest.mark.parametrize(
    "schedule",
    [
        seq2seq.LinearSamplingSchedule(7, minimum=0.1),
        seq2seq.ExponentialSamplingSchedule(0.9),
        seq2seq.InverseSigmoidSamplingSchedule(3),
    ],
)
def test_config_round_trip(schedule):
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule)
    )
    assert type(restored) is type(schedule)
    assert restored.get_config() == schedule.get_config()


@pytest.mark.parametrize(
    "make, name, value",
    [
        (lambda: seq2seq.LinearSamplingSchedule(0), "decay_steps", 0),
        (lambda: seq2seq.LinearSamplingSchedule(5, minimum=1.0), "minimum", 1.0),
        (lambda: seq2seq.ExponentialSamplingSchedule(1.0), "k", 1.0),
        (lambda: seq2seq.ExponentialSamplingSchedule("0.9"), "k", "0.9"),
        (lambda: seq2seq.InverseSigmoidSamplingSchedule(0.5), "k", 0.5),
    ],
)
def test_bad_arguments(make, name, value):
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}={value!r}"):
        make()


def test_the_base_schedule_is_abstract():
    import pytest

    from kerasrnn.seq2seq import SamplingSchedule

    with pytest.raises(TypeError, match="abstract"):
        SamplingSchedule()


def test_numpy_scalars_are_numbers():
    schedule = seq2seq.LinearSamplingSchedule(np.int64(7), minimum=np.float32(0.1))
    assert schedule.get_config() == {"decay_steps": 7.0, "minimum": 0.1}
    assert seq2seq.ExponentialSamplingSchedule(np.float32(0.9)).k == 0.9
    assert seq2seq.InverseSigmoidSamplingSchedule(np.int32(3)).k == 3.0
