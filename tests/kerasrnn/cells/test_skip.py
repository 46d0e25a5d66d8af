"""TemporalSkipCell against a NumPy loop of h_t = f(W_x x_t + W_h h_{t-1} +
W_s h_{t-d} + b) (lecture notes slide 54)."""

import keras
import numpy as np
import pytest

from kerasrnn.cells.skip import TemporalSkipCell
from tests.kerasrnn import numpy_reference as ref

OPTIONS = [
    {"delay": 2},
    {"delay": 5},
    {"delay": 3, "use_bias": False, "activation": "softsign"},
]
OPTION_IDS = ["delay2", "delay5", "delay3-softsign-nobias"]


def skip_step(W_x, W_h, W_s, b, act):
    """One step; states are (h_{t-1}, …, h_{t-d}), newest first."""

    def step(x, states):
        h = ref.ACTIVATIONS[act](W_x @ x + W_h @ states[0] + W_s @ states[-1] + b)
        return h, (h,) + tuple(states[:-1])

    return step


def built_layer(rng, units, input_dim, **options):
    cell = TemporalSkipCell(units, dtype="float64", **options)
    layer = keras.layers.RNN(cell, return_sequences=True, return_state=True,
                             dtype="float64")
    layer(np.zeros((1, 1, input_dim)))
    for weight in cell.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape))
    return layer


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_matches_numpy_reference(rng, options):
    n, d, T = 4, 3, 11
    layer = built_layer(rng, n, d, **options)
    cell = layer.cell
    b = np.asarray(cell.bias) if cell.use_bias else np.zeros(n)
    step = skip_step(np.asarray(cell.kernel).T,
                     np.asarray(cell.recurrent_kernel).T,
                     np.asarray(cell.skip_kernel).T, b,
                     options.get("activation", "tanh"))
    xs = rng.normal(size=(2, T, d))
    initial = [rng.normal(size=(2, n)) for _ in range(cell.delay)]
    mask = np.ones((2, T), bool)
    mask[1, 4] = False
    expected, expected_states = ref.run(step, xs, initial, mask=mask)
    outputs, *states = layer(xs, initial_state=initial, mask=mask)
    np.testing.assert_allclose(outputs, expected, rtol=1e-10, atol=1e-12)
    assert len(states) == cell.delay
    for got, want in zip(states, expected_states):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_skip_path_reaches_exactly_delay_steps_back():
    """With W_x = W_h = 0 and b = 0, h_t = f(W_s h_{t-d}): an initial h_{-k}
    resurfaces only at steps t ≡ −k (mod d)."""
    n, delay = 3, 4
    cell = TemporalSkipCell(n, delay=delay, activation="linear",
                            dtype="float64")
    layer = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    layer(np.zeros((1, 1, 2)))
    cell.kernel.assign(np.zeros((2, n)))
    cell.recurrent_kernel.assign(np.zeros((n, n)))
    cell.skip_kernel.assign(np.eye(n))
    oldest = np.array([[1.0, 2.0, 3.0]])   # h_{-4}: the last of the state
    initial = [np.zeros((1, n))] * (delay - 1) + [oldest]
    outputs = np.asarray(layer(np.zeros((1, 9, 2)), initial_state=initial))
    for t in range(9):
        expected = oldest[0] if t % delay == 0 else np.zeros(n)
        np.testing.assert_array_equal(outputs[0, t], expected)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_param_count_is_the_closed_form_and_keras_count(options):
    n, d = 6, 5
    cell = TemporalSkipCell(n, **options)
    keras.layers.RNN(cell)(np.zeros((1, 2, d), "float32"))
    bias = n if options.get("use_bias", True) else 0
    assert cell.param_count(d) == n * (d + 2 * n) + bias
    assert cell.param_count(d) == cell.count_params()


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_config_round_trip_and_saved_model_file(rng, tmp_path, options):
    cell = TemporalSkipCell(4, seed=3, recurrent_dropout=0.25, **options)
    config = cell.get_config()
    assert TemporalSkipCell.from_config(config).get_config() == config
    model = keras.Sequential([keras.Input((6, 3)), keras.layers.RNN(cell)])
    xs = rng.normal(size=(2, 6, 3)).astype("float32")
    path = tmp_path / "skip.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.layers[0].cell, TemporalSkipCell)
    assert loaded.layers[0].cell.delay == cell.delay
    np.testing.assert_allclose(loaded(xs), model(xs), rtol=1e-6)


@pytest.mark.parametrize("delay", [1, 0, 2.5, True])
def test_bad_delay_names_itself(delay):
    with pytest.raises(ValueError, match="delay"):
        TemporalSkipCell(4, delay=delay)


def test_bidirectional_runs_the_reference_both_ways(rng):
    n, d, T = 3, 2, 7
    layer = keras.layers.Bidirectional(
        keras.layers.RNN(TemporalSkipCell(n, delay=3, dtype="float64"),
                         return_sequences=True, dtype="float64"),
        dtype="float64",
    )
    xs = rng.normal(size=(2, T, d))
    layer(xs)
    outputs = []
    for direction, backwards in ((layer.forward_layer, False),
                                 (layer.backward_layer, True)):
        for weight in direction.weights:
            weight.assign(rng.normal(scale=0.6, size=weight.shape))
        cell = direction.cell
        step = skip_step(np.asarray(cell.kernel).T,
                         np.asarray(cell.recurrent_kernel).T,
                         np.asarray(cell.skip_kernel).T,
                         np.asarray(cell.bias), "tanh")
        zeros = [np.zeros((2, n))] * 3
        sequence, _ = ref.run(step, xs, zeros, go_backwards=backwards)
        # Bidirectional re-reverses the backward outputs into input order.
        outputs.append(sequence[:, ::-1] if backwards else sequence)
    np.testing.assert_allclose(layer(xs), np.concatenate(outputs, axis=-1),
                               rtol=1e-10, atol=1e-12)
