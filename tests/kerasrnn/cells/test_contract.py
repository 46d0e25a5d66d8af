"""The cell contract of `kerasrnn.cells.base`, checked once for every cell.

Config round trip, `.keras` save/load, SavedModel export served by a process
that never imports kerasrnn, weight layout, clear errors on bad input, and
the cell-specific arguments (forget_bias, alpha, learn_alpha).
"""

import keras
import numpy as np
import pytest

import kerasrnn
from tests.isolated import PROJECT, last_json, run_without
from tests.kerasrnn import numpy_reference as ref
from tests.kerasrnn.cells.harness import (
    SPEC_IDS,
    SPECS,
    randomize,
)

# Every constructor argument set away from its default.
NON_DEFAULT = {
    "activation": "softsign",
    "use_bias": False,
    "kernel_initializer": "he_normal",
    "recurrent_initializer": "glorot_normal",
    "bias_initializer": "ones",
    "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.01}},
    "recurrent_regularizer": "l1",
    "bias_regularizer": "l2",
    "kernel_constraint": "non_neg",
    "recurrent_constraint": {"class_name": "MaxNorm", "config": {"max_value": 2.0}},
    "bias_constraint": "unit_norm",
    "dropout": 0.25,
    "recurrent_dropout": 0.125,
    "seed": 1234,
}
SPECIFIC = {
    kerasrnn.ElmanCell: {},
    kerasrnn.LeakyCell: {"alpha": 0.2, "learn_alpha": True},
    kerasrnn.LSTMCell: {"recurrent_activation": "hard_sigmoid", "forget_bias": 2.0},
    kerasrnn.GRUCell: {"recurrent_activation": "hard_sigmoid", "reset_after": True},
}
CELL_CLASSES = list(SPECIFIC)


@pytest.mark.parametrize("cls", CELL_CLASSES, ids=lambda c: c.__name__)
def test_every_constructor_argument_survives_get_config(cls):
    cell = cls(7, **NON_DEFAULT, **SPECIFIC[cls], name="custom")
    config = cell.get_config()
    for name, value in {**SPECIFIC[cls], "units": 7, "dropout": 0.25}.items():
        assert config[name] == value
    assert config["seed"] == 1234
    assert config["use_bias"] is False
    assert config["name"] == "custom"
    clone = cls.from_config(config)
    assert clone.get_config() == config
    # And through Keras's registry, by its registered name.
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(cell)
    )
    assert type(revived) is cls and revived.get_config() == config


@pytest.mark.parametrize("cls", CELL_CLASSES, ids=lambda c: c.__name__)
def test_registered_under_the_kerasrnn_package(cls):
    assert keras.saving.get_registered_name(cls) == f"kerasrnn>{cls.__name__}"


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_weight_layout(spec):
    d, n = 3, 5
    cell = spec.make(n)
    cell.build((None, d))
    g = spec.gates
    assert tuple(cell.kernel.shape) == (d, g * n)
    assert tuple(cell.recurrent_kernel.shape) == (n, g * n)
    if cell.use_bias:
        want = (2, 3 * n) if spec.kwargs.get("reset_after") else (g * n,)
        assert tuple(cell.bias.shape) == want
    else:
        assert cell.bias is None
    assert cell.state_size == ([n, n] if spec.states == 2 else n)
    assert cell.output_size == n
    states = cell.get_initial_state(batch_size=2)
    assert [tuple(s.shape) for s in states] == [(2, n)] * spec.states
    assert all(not np.any(np.asarray(s)) for s in states)


def test_lstm_forget_bias_initialises_only_the_forget_block():
    n = 4
    cell = kerasrnn.LSTMCell(n, forget_bias=2.0, bias_initializer="ones")
    cell.build((None, 3))
    bias = np.asarray(cell.bias)
    np.testing.assert_array_equal(bias[:n], 1.0)  # i
    np.testing.assert_array_equal(bias[n : 2 * n], 3.0)  # f: ones + 2
    np.testing.assert_array_equal(bias[2 * n :], 1.0)  # c~, o
    default = kerasrnn.LSTMCell(n)
    default.build((None, 3))
    np.testing.assert_array_equal(
        np.asarray(default.bias), np.repeat([0.0, 1.0, 0.0, 0.0], n)
    )


def test_leaky_alpha_one_is_exactly_elman_and_alpha_zero_locks_the_state(rng):
    xs = rng.normal(size=(2, 5, 3)).astype("float32")
    elman = keras.layers.RNN(kerasrnn.ElmanCell(4), return_sequences=True)
    leaky = keras.layers.RNN(kerasrnn.LeakyCell(4, alpha=1.0), return_sequences=True)
    elman.build((None, None, 3))
    leaky.build((None, None, 3))
    randomize(elman.cell, rng)
    leaky.set_weights(elman.get_weights())
    np.testing.assert_array_equal(np.asarray(leaky(xs)), np.asarray(elman(xs)))

    locked = keras.layers.RNN(kerasrnn.LeakyCell(4, alpha=0.0), return_state=True)
    locked.build((None, None, 3))
    randomize(locked.cell, rng)
    h0 = rng.normal(size=(2, 4)).astype("float32")
    _, h_final = locked(xs, initial_state=[h0])
    np.testing.assert_array_equal(np.asarray(h_final), h0)


@pytest.mark.slow
def test_learned_alpha_trains_and_stays_in_the_unit_interval(rng):
    inputs = keras.Input((6, 2))
    cell = kerasrnn.LeakyCell(3, alpha=0.95, learn_alpha=True)
    model = keras.Model(inputs, keras.layers.RNN(cell)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(50.0), loss="mse")
    xs = rng.normal(size=(16, 6, 2)).astype("float32")
    model.fit(xs, np.full((16, 3), -5.0), epochs=3, verbose=0)
    alpha = np.asarray(cell.alpha_weight)
    assert not np.allclose(alpha, 0.95)
    assert np.all((alpha >= 0.0) & (alpha <= 1.0))


def _mixed_model(rng):
    """One model holding every cell, for the save and export round trips."""
    inputs = keras.Input((None, 3))
    x = keras.layers.Bidirectional(
        keras.layers.RNN(kerasrnn.LSTMCell(4, forget_bias=2.0), return_sequences=True)
    )(inputs)
    x = keras.layers.RNN(
        kerasrnn.GRUCell(5, reset_after=True), return_sequences=True
    )(x)
    x = keras.layers.RNN(
        kerasrnn.LeakyCell(3, alpha=0.3, learn_alpha=True), return_sequences=True
    )(x)
    x = keras.layers.RNN(kerasrnn.GRUCell(4), return_sequences=True)(x)
    x = keras.layers.RNN(kerasrnn.ElmanCell(3, dropout=0.1, seed=3))(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    for layer in model.layers:
        for weight in layer.weights:
            if weight.name == "alpha":
                weight.assign(rng.uniform(0.1, 0.9, size=weight.shape))
            else:
                weight.assign(rng.normal(scale=0.5, size=weight.shape))
    return model


@pytest.mark.slow
def test_keras_file_round_trip(tmp_path, rng):
    model = _mixed_model(rng)
    xs = rng.normal(size=(4, 7, 3)).astype("float32")
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        loaded.predict(xs, verbose=0), model.predict(xs, verbose=0), atol=1e-6
    )
    assert loaded.to_json() == model.to_json()


SERVE_PROGRAM = """
import json
import sys

import numpy as np
import tensorflow as tf

export_dir, data = sys.argv[1], np.load(sys.argv[2])
served = tf.saved_model.load(export_dir)
errors = {}
for key in data.files:
    if key.startswith("x"):
        got = served.serve(tf.constant(data[key])).numpy()
        errors[key] = float(np.abs(got - data["y" + key[1:]]).max())
print(json.dumps(errors))
"""


@pytest.mark.slow
def test_saved_model_serves_any_batch_and_length_without_kerasrnn(tmp_path, rng):
    model = _mixed_model(rng)
    export_dir = tmp_path / "saved_model"
    model.export(str(export_dir), verbose=False)
    cases = {}
    for i, (batch, steps) in enumerate([(1, 1), (2, 5), (5, 13)]):
        xs = rng.normal(size=(batch, steps, 3)).astype("float32")
        cases[f"x{i}"] = xs
        cases[f"y{i}"] = model.predict(xs, verbose=0)
    np.savez(tmp_path / "cases.npz", **cases)
    errors = last_json(
        run_without(PROJECT, SERVE_PROGRAM, export_dir, tmp_path / "cases.npz")
    )
    assert set(errors) == {"x0", "x1", "x2"}
    assert max(errors.values()) < 1e-5


BAD_ARGUMENTS = [
    ({"units": 0}, "units", "0"),
    ({"units": -3}, "units", "-3"),
    ({"units": 2.5}, "units", "2.5"),
    ({"units": True}, "units", "True"),
    ({"units": 4, "dropout": 1.0}, "dropout", "1.0"),
    ({"units": 4, "dropout": -0.1}, "dropout", "-0.1"),
    ({"units": 4, "recurrent_dropout": 1.5}, "recurrent_dropout", "1.5"),
    ({"units": 4, "dropout": "half"}, "dropout", "'half'"),
    ({"units": 4, "activation": "no_such_activation"}, "activation", "no_such_activation"),
]


@pytest.mark.parametrize("cls", CELL_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("kwargs,argument,value", BAD_ARGUMENTS)
def test_bad_arguments_name_the_argument_and_the_value(cls, kwargs, argument, value):
    with pytest.raises(ValueError) as error:
        cls(**kwargs)
    message = str(error.value)
    assert f"`{argument}`" in message and value in message


@pytest.mark.parametrize("cls", [kerasrnn.LSTMCell, kerasrnn.GRUCell], ids=lambda cls: cls.__name__)
def test_bad_recurrent_activation(cls):
    with pytest.raises(ValueError, match="`recurrent_activation`.*'nope'"):
        cls(4, recurrent_activation="nope")


@pytest.mark.parametrize("alpha", [-0.1, 1.01, "0.5", None])
def test_leaky_alpha_outside_the_unit_interval(alpha):
    with pytest.raises(ValueError, match=r"`alpha` must be a number in \[0, 1\]"):
        kerasrnn.LeakyCell(4, alpha=alpha)


@pytest.mark.parametrize("spec", SPECS[::3], ids=SPEC_IDS[::3])
def test_wrong_feature_size_is_refused_before_the_loop(spec):
    layer = keras.layers.RNN(spec.make(4))
    layer(np.zeros((2, 5, 3), "float32"))
    with pytest.raises(ValueError, match=r"built for inputs of shape \(batch, time, 3\).*\(2, 7\)"):
        layer(np.zeros((2, 5, 7), "float32"))


@pytest.mark.parametrize("shape", [(2, 3), (2, 5, 3, 1)])
def test_wrong_rank_is_refused_with_the_expected_shape(shape):
    layer = keras.layers.RNN(kerasrnn.GRUCell(4))
    with pytest.raises(ValueError, match=r"\(batch, time, features\)"):
        layer(np.zeros(shape, "float32"))


def test_reference_sanity_hand_worked_elman_step():
    """The NumPy reference itself, on numbers small enough to do by hand."""
    w = [(np.array([[1.0], [0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.0, 0.5]))]
    h, _ = ref.elman_step(w, np.array([0.5]), (np.array([0.25, -0.5]),))
    np.testing.assert_allclose(h, np.tanh([0.5 - 0.5, 0.25 + 0.5]))


def test_the_base_cell_refuses_a_subclass_that_skips_the_contract():
    from kerasrnn.cells.base import RecurrentCell

    class NoCall(RecurrentCell):
        gate_count = 1

    class NoGates(RecurrentCell):
        def call(self, inputs, states, training=False):
            return inputs, states

    with pytest.raises(TypeError, match="abstract.*call"):
        NoCall(4)
    with pytest.raises(TypeError, match="abstract.*gate_count"):
        NoGates(4)
    with pytest.raises(TypeError, match="abstract"):
        RecurrentCell(4)


# A GRU with reset_after keeps two bias rows and projects them apart.
ONE_BIAS_ROW = [spec for spec in SPECS if not spec.kwargs.get("reset_after")]


@pytest.mark.parametrize("spec", ONE_BIAS_ROW, ids=[s.id for s in ONE_BIAS_ROW])
def test_pre_activation_is_x_w_plus_h_u_plus_b(spec, rng):
    """The shared projection, against x W + h U + b summed in NumPy."""
    cell = spec.make(5)
    cell.build((None, 3))
    randomize(cell, rng)
    x = rng.normal(size=(2, 3)).astype("float32")
    h = rng.normal(size=(2, 5)).astype("float32")
    kernel = np.asarray(cell.kernel, np.float64)
    recurrent = np.asarray(cell.recurrent_kernel, np.float64)
    want = x @ kernel + h @ recurrent
    if cell.use_bias:
        want = want + np.asarray(cell.bias, np.float64)
    np.testing.assert_allclose(
        np.asarray(cell.pre_activation(x, h)), want, rtol=1e-5, atol=1e-5
    )
