"""MultiScaleCell against a NumPy loop of the multiple-time-scales update
(lecture notes slide 56): group k is rewritten only when s_t mod p_k = 0."""

import keras
import numpy as np
import pytest

from kerasrnn.cells.multiscale import MultiScaleCell
from tests.kerasrnn import numpy_reference as ref

OPTIONS = [
    {"periods": (1, 2, 4, 8)},
    {"periods": (1, 3), "use_bias": False, "activation": "softsign"},
    {"periods": (2, 6, 4, 1)},
]
OPTION_IDS = ["1-2-4-8", "1-3-softsign-nobias", "2-6-4-1"]


def multiscale_step(W_x, W_h, b, unit_periods, act):
    """States (h_{t-1}, s_t); s_t counts steps from 0 (kept by masked steps)."""

    def step(x, states):
        h_prev, (count,) = states[0], states[1]
        candidate = ref.ACTIVATIONS[act](W_x @ x + W_h @ h_prev + b)
        h = np.where(count % unit_periods == 0, candidate, h_prev)
        return h, (h, np.array([count + 1]))

    return step


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_matches_numpy_reference(rng, options):
    n, d, T = 8, 3, 19
    cell = MultiScaleCell(n, dtype="float64", **options)
    layer = keras.layers.RNN(cell, return_sequences=True, return_state=True,
                             dtype="float64")
    layer(np.zeros((1, 1, d)))
    for weight in cell.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape))
    periods = options["periods"]
    unit_periods = np.repeat(periods, n // len(periods))
    b = np.asarray(cell.bias) if cell.use_bias else np.zeros(n)
    step = multiscale_step(np.asarray(cell.kernel).T,
                           np.asarray(cell.recurrent_kernel).T, b,
                           unit_periods, options.get("activation", "tanh"))
    xs = rng.normal(size=(3, T, d))
    h0 = rng.normal(size=(3, n))
    # Keras's layer carries the counter modulo lcm(periods); the reference
    # counts without wrapping, so compare it modulo the same cycle.
    mask = np.ones((3, T), bool)
    mask[1, [2, 3, 9]] = False
    expected, (expected_h, expected_count) = ref.run(
        step, xs, [h0, np.zeros((3, 1))], mask=mask
    )
    outputs, h, count = layer(xs, initial_state=[h0, np.zeros((3, 1))],
                              mask=mask)
    np.testing.assert_allclose(outputs, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, expected_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(count, expected_count % np.lcm.reduce(periods))


def test_slow_groups_hold_between_updates(rng):
    """Group with period 4 changes only at steps 0, 4, 8, …; period 1 always."""
    cell = MultiScaleCell(4, periods=(1, 4))
    layer = keras.layers.RNN(cell, return_sequences=True)
    outputs = np.asarray(layer(rng.normal(size=(1, 12, 2)).astype("float32")))
    changed = np.abs(np.diff(outputs[0], axis=0)) > 0   # step t vs t-1
    steps = np.arange(1, 12)
    assert np.all(changed[:, :2])
    np.testing.assert_array_equal(changed[:, 2:].any(axis=1), steps % 4 == 0)


def test_counter_survives_batches_of_a_stateful_layer(rng):
    """Two halves through a stateful layer equal the whole sequence."""
    xs = rng.normal(size=(1, 10, 2)).astype("float32")
    whole = keras.layers.RNN(MultiScaleCell(4, periods=(1, 3)),
                             return_sequences=True)
    expected = np.asarray(whole(xs))
    split = keras.layers.RNN(MultiScaleCell(4, periods=(1, 3)),
                             return_sequences=True, stateful=True)
    split(xs[:, :3])
    split.set_weights(whole.get_weights())
    split.reset_states()
    got = np.concatenate([split(xs[:, :3]), split(xs[:, 3:])], axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_param_count_is_the_closed_form_and_keras_count(options):
    n, d = 12, 5
    cell = MultiScaleCell(n, **options)
    keras.layers.RNN(cell)(np.zeros((1, 2, d), "float32"))
    bias = n if options.get("use_bias", True) else 0
    assert cell.param_count(d) == n * (d + n) + bias
    assert cell.param_count(d) == cell.count_params()


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_config_round_trip_and_saved_model_file(rng, tmp_path, options):
    cell = MultiScaleCell(8, dropout=0.1, seed=4, **options)
    config = cell.get_config()
    assert config["periods"] == list(options["periods"])
    assert MultiScaleCell.from_config(config).get_config() == config
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.RNN(cell)])
    xs = rng.normal(size=(2, 7, 3)).astype("float32")
    path = tmp_path / "multiscale.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[0].cell.periods == tuple(options["periods"])
    np.testing.assert_allclose(loaded(xs), model(xs), rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"units": 8, "periods": ()}, "periods"),
        ({"units": 8, "periods": (1, 0)}, "periods"),
        ({"units": 8, "periods": 4}, "periods"),
        ({"units": 7, "periods": (1, 2)}, "units"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        MultiScaleCell(**kwargs)


def test_bidirectional_counts_steps_from_each_end(rng):
    n, d, T = 4, 2, 9
    periods = (1, 3)
    layer = keras.layers.Bidirectional(
        keras.layers.RNN(MultiScaleCell(n, periods=periods, dtype="float64"),
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
        step = multiscale_step(np.asarray(cell.kernel).T,
                               np.asarray(cell.recurrent_kernel).T,
                               np.asarray(cell.bias),
                               np.repeat(periods, n // 2), "tanh")
        initial = [np.zeros((2, n)), np.zeros((2, 1))]
        sequence, _ = ref.run(step, xs, initial, go_backwards=backwards)
        # Bidirectional re-reverses the backward outputs into input order.
        outputs.append(sequence[:, ::-1] if backwards else sequence)
    np.testing.assert_allclose(layer(xs), np.concatenate(outputs, axis=-1),
                               rtol=1e-10, atol=1e-12)
