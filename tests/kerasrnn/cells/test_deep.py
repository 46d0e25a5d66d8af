"""Deep RNNs (lecture notes slide 50) against NumPy loops: the deep-transition
cell and the skip-connected stack."""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells.deep import DeepTransitionCell, SkipStackedCells
from tests.kerasrnn import numpy_reference as ref

TRANSITIONS = [
    {},
    {"transition_units": (7, 5)},
    {"transition_units": (3,), "use_bias": False, "activation": "softsign"},
]
TRANSITION_IDS = ["one-layer", "7-5", "3-softsign-nobias"]


def randomize(layer, rng):
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape))


def deep_transition_step(cell, act):
    """z_0 = f(W_x x + W_h h + b), z_l = f(V_l z_{l-1} + c_l), h = z_L."""
    W_x = np.asarray(cell.kernel).T
    W_h = np.asarray(cell.recurrent_kernel).T
    b = np.asarray(cell.bias) if cell.use_bias else 0.0
    layers = []
    for weight in cell.weights:
        if "transition_kernel" in weight.path:
            layers.append([np.asarray(weight).T, 0.0])
        elif "transition_bias" in weight.path:
            layers[-1][1] = np.asarray(weight)
    f = ref.ACTIVATIONS[act]

    def step(x, states):
        z = f(W_x @ x + W_h @ states[0] + b)
        for V, c in layers:
            z = f(V @ z + c)
        return z, (z,)

    return step, len(layers)


@pytest.mark.parametrize("options", TRANSITIONS, ids=TRANSITION_IDS)
def test_deep_transition_matches_numpy_reference(rng, options):
    n, d, T = 4, 3, 9
    cell = DeepTransitionCell(n, dtype="float64", **options)
    layer = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    layer(np.zeros((1, 1, d)))
    randomize(cell, rng)
    step, depth = deep_transition_step(cell, options.get("activation", "tanh"))
    assert depth == len(options.get("transition_units", ())) + 1
    xs = rng.normal(size=(2, T, d))
    h0 = rng.normal(size=(2, n))
    expected, _ = ref.run(step, xs, [h0])
    np.testing.assert_allclose(layer(xs, initial_state=[h0]), expected,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("options", TRANSITIONS, ids=TRANSITION_IDS)
def test_deep_transition_param_count(options):
    n, d = 6, 4
    cell = DeepTransitionCell(n, **options)
    keras.layers.RNN(cell)(np.zeros((1, 2, d), "float32"))
    widths = [n, *options.get("transition_units", ()), n]
    bias = 1 if options.get("use_bias", True) else 0
    expected = n * (d + n) + bias * n + sum(
        (a + bias) * b for a, b in zip(widths, widths[1:])
    )
    assert cell.param_count(d) == expected == cell.count_params()


STACKS = [
    ({"input_skip": True, "output_skip": True}, "both"),
    ({"input_skip": True, "output_skip": False}, "input-only"),
    ({"input_skip": False, "output_skip": True}, "output-only"),
    ({"input_skip": False, "output_skip": False}, "plain"),
]


def stack_cells():
    return [
        kerasrnn.ElmanCell(3, dtype="float64"),
        kerasrnn.LSTMCell(4, dtype="float64"),
        kerasrnn.ElmanCell(2, dtype="float64", activation="softsign"),
    ]


def numpy_stack(cells, xs, input_skip, output_skip):
    """Each layer run over the whole sequence in turn, as L stacked layers."""
    specs = [(ref.elman_step, 1), (ref.lstm_step, 4),
             (functools.partial(ref.elman_step, act="softsign"), 1)]
    below, outputs = None, []
    for cell, (step, gates) in zip(cells, specs):
        blocks = ref.gate_blocks(np.asarray(cell.kernel),
                                 np.asarray(cell.recurrent_kernel),
                                 np.asarray(cell.bias), gates)
        layer_in = xs if below is None else (
            np.concatenate([xs, below], axis=-1) if input_skip else below
        )
        zeros = [np.zeros((xs.shape[0], cell.units))] * (2 if gates == 4 else 1)
        below, _ = ref.run(functools.partial(step, blocks), layer_in, zeros)
        outputs.append(below)
    return np.concatenate(outputs, axis=-1) if output_skip else below


@pytest.mark.parametrize("flags", [s[0] for s in STACKS], ids=[s[1] for s in STACKS])
def test_skip_stack_matches_layer_by_layer_numpy(rng, flags):
    cells = stack_cells()
    stack = SkipStackedCells(cells, dtype="float64", **flags)
    layer = keras.layers.RNN(stack, return_sequences=True, dtype="float64")
    xs = rng.normal(size=(2, 8, 5))
    layer(xs)
    randomize(layer, rng)
    expected = numpy_stack(cells, xs, **flags)
    np.testing.assert_allclose(layer(xs), expected, rtol=1e-10, atol=1e-12)
    # Layer l's kernel reads [x ; o^{l-1}] with input skips, o^{l-1} without.
    assert cells[1].kernel.shape[0] == (5 + 3 if flags["input_skip"] else 3)


@pytest.mark.parametrize("flags", [s[0] for s in STACKS], ids=[s[1] for s in STACKS])
def test_skip_stack_param_count(flags):
    d = 5
    stack = SkipStackedCells(stack_cells(), **flags)
    keras.layers.RNN(stack)(np.zeros((1, 2, d)))
    skip = flags["input_skip"]
    expected = (
        3 * (d + 3 + 1)
        + 4 * 4 * ((d if skip else 0) + 3 + 4 + 1)
        + 2 * ((d if skip else 0) + 4 + 2 + 1)
    )
    assert stack.param_count(d) == expected == stack.count_params()


def test_config_round_trips_and_saved_model_file(rng, tmp_path):
    transition = DeepTransitionCell(4, transition_units=(6,), seed=2)
    config = transition.get_config()
    assert config["transition_units"] == [6]
    assert DeepTransitionCell.from_config(config).get_config() == config
    stack = SkipStackedCells(
        [kerasrnn.GRUCell(3), DeepTransitionCell(2, transition_units=(5,))],
        input_skip=False,
    )
    config = stack.get_config()
    assert SkipStackedCells.from_config(config).get_config() == config
    model = keras.Sequential([
        keras.Input((6, 3)),
        keras.layers.RNN(transition, return_sequences=True),
        keras.layers.RNN(stack),
    ])
    xs = rng.normal(size=(2, 6, 3)).astype("float32")
    path = tmp_path / "deep.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[1].cell.input_skip is False
    np.testing.assert_allclose(loaded(xs), model(xs), rtol=1e-6)


@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: DeepTransitionCell(4, transition_units=(0,)), "transition_units"),
        (lambda: DeepTransitionCell(4, transition_units=5), "transition_units"),
        (lambda: SkipStackedCells([]), "cells"),
        (lambda: SkipStackedCells([keras.layers.Dense(3)]), "cells"),
        (lambda: SkipStackedCells([kerasrnn.ElmanCell(3, dropout=0.2)]), "dropout"),
        (lambda: SkipStackedCells([keras.layers.GRUCell(3)]).param_count(4),
         "param_count"),
        (lambda: SkipStackedCells([kerasrnn.ElmanCell(3)]).param_count(0),
         "input_dim"),
    ],
)
def test_bad_arguments_name_themselves(build, argument):
    with pytest.raises(ValueError, match=argument):
        build()
