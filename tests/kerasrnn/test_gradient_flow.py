"""Gradient-flow diagnostics against NumPy Jacobian products, finite
differences and the seed's claims (`eq:rnn-jacobian`,
`eq:rnn-jacobian-bound`, lecture notes §6)."""

import keras
import matplotlib
import numpy as np
import pytest

from kerasrnn.cells.elman import ElmanCell
from kerasrnn.cells.leaky import LeakyCell
from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.multiscale import MultiScaleCell
from kerasrnn.cells.skip import TemporalSkipCell
from kerasrnn.gradients import gradient_flow, jacobian_bound, plot_gradient_flow
from tests.kerasrnn import numpy_reference as ref

matplotlib.use("Agg")


def orthogonal(rng, n):
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    return q * np.sign(np.diag(r))


def elman_layer(n, d, W_h, rng, cell_class=ElmanCell, **cell_kwargs):
    cell = cell_class(n, dtype="float64", **cell_kwargs)
    layer = keras.layers.RNN(cell, dtype="float64")
    layer(np.zeros((1, 2, d)))
    cell.kernel.assign(rng.normal(scale=0.5, size=(d, n)))
    cell.recurrent_kernel.assign(W_h.T)
    cell.bias.assign(rng.normal(scale=0.1, size=n))
    return layer


def numpy_elman_flow(W_x, W_h, b, xs):
    """σ_max of Π diag(1 − h_i²) W_h (eq:rnn-jacobian), column-vector form."""
    n = W_h.shape[0]
    h = np.zeros(n)
    factors = []
    for x in xs:
        h = np.tanh(W_h @ h + W_x @ x + b)
        factors.append(np.diag(1 - h**2) @ W_h)
    T = len(xs)
    flow, product = [1.0], np.eye(n)
    for lag in range(1, T):
        product = product @ factors[T - lag]
        flow.append(np.linalg.norm(product, ord=2))
    return np.array(flow)


def test_elman_flow_equals_numpy_jacobian_product():
    rng = np.random.default_rng(0)
    n, d, T = 6, 3, 25
    layer = elman_layer(n, d, rng.normal(scale=0.5, size=(n, n)), rng)
    xs = rng.normal(size=(2, T, d))
    cell = layer.cell
    expected = numpy_elman_flow(
        np.asarray(cell.kernel).T, np.asarray(cell.recurrent_kernel).T,
        np.asarray(cell.bias), xs[0],
    )
    flow = gradient_flow(layer, xs)
    assert flow.shape == (T,)
    assert flow[0] == 1.0
    np.testing.assert_allclose(flow, expected, rtol=1e-9, atol=1e-300)


def numpy_lstm_hidden(weights, xs, h, c):
    """Keras LSTM (gate order i, f, c~, o) from state (h, c) over xs."""
    kernel, recurrent, bias = weights
    n = h.size
    for x in xs:
        z = x @ kernel + h @ recurrent + bias
        i, f = ref.sigmoid(z[:n]), ref.sigmoid(z[n:2 * n])
        c = f * c + i * np.tanh(z[2 * n:3 * n])
        h = ref.sigmoid(z[3 * n:]) * np.tanh(c)
    return h, c


@pytest.mark.slow
def test_keras_lstm_flow_equals_finite_differences():
    rng = np.random.default_rng(1)
    n, d, T = 4, 3, 30
    # Seeded: the initial weights must not depend on which tests ran before.
    keras.utils.set_random_seed(1)
    layer = keras.layers.LSTM(n, dtype="float64")
    xs = rng.normal(size=(1, T, d))
    layer(xs)
    kernel, recurrent, bias = [np.asarray(w) for w in layer.get_weights()]
    layer.set_weights([kernel, 1.5 * recurrent, bias])
    weights = [w.astype(np.float64) for w in layer.get_weights()]
    flow = gradient_flow(layer, xs)
    for lag in (1, 4, 12, 29):
        k = T - lag   # h_k is the state after k steps
        h, c = numpy_lstm_hidden(weights, xs[0, :k], np.zeros(n), np.zeros(n))
        eps = 1e-6
        jac = np.zeros((n, n))
        for j in range(n):
            e = np.zeros(n)
            e[j] = eps
            up, _ = numpy_lstm_hidden(weights, xs[0, k:], h + e, c)
            down, _ = numpy_lstm_hidden(weights, xs[0, k:], h - e, c)
            jac[:, j] = (up - down) / (2 * eps)
        expected = np.linalg.norm(jac, ord=2)
        # A central difference of step 1e-6 carries rounding errors near
        # 1e-10 per entry: relative 1e-5 of a norm as small as 1e-5.
        assert flow[lag] == pytest.approx(expected, rel=1e-5), lag


def test_linear_elman_flow_is_exactly_the_bound():
    """With f = identity and W_h = s·Q (Q orthogonal), every factor of
    eq:rnn-jacobian has norm s, so g[lag] = s^lag = the bound: gradients
    explode for s > 1 (lecture notes §6) and the bound is tight."""
    rng = np.random.default_rng(2)
    n, d, T, s = 5, 2, 40, 1.1
    layer = elman_layer(n, d, s * orthogonal(rng, n), rng,
                        activation="linear")
    flow = gradient_flow(layer, rng.normal(size=(1, T, d)))
    np.testing.assert_allclose(flow, s ** np.arange(T), rtol=1e-10)
    np.testing.assert_allclose(jacobian_bound(layer.cell, T),
                               s ** np.arange(T), rtol=1e-12)
    assert flow[-1] > 40   # 1.1^39 ≈ 41: exploding


def test_elman_below_unit_gain_stays_under_bound_and_decays_exponentially():
    rng = np.random.default_rng(3)
    n, d, T, s = 8, 3, 80, 0.9
    layer = elman_layer(n, d, s * orthogonal(rng, n), rng)
    flow = gradient_flow(layer, rng.normal(size=(1, T, d)))
    bound = jacobian_bound(layer.cell, T)
    np.testing.assert_allclose(bound, s ** np.arange(T), rtol=1e-12)
    assert np.all(flow <= bound * (1 + 1e-9))
    # Exponential decay: every 10 further steps cost at least a factor s^10.
    assert np.all(flow[10:] <= flow[:-10] * s**10 * (1 + 1e-9))
    assert flow[T - 1] < 1e-4


def test_jacobian_bound_of_leaky_cells_hand_numbers():
    rng = np.random.default_rng(4)
    n, d, T = 3, 2, 6
    W_h = 0.5 * orthogonal(rng, n)   # σ_max = 0.5
    fixed = elman_layer(n, d, W_h, rng, cell_class=LeakyCell, alpha=0.2)
    # (1 − α) + α σ = 0.8 + 0.1
    np.testing.assert_allclose(jacobian_bound(fixed.cell, T),
                               0.9 ** np.arange(T), rtol=1e-12)
    learned = elman_layer(n, d, W_h, rng, cell_class=LeakyCell, alpha=0.2,
                          learn_alpha=True)
    learned.cell.alpha_weight.assign([0.2, 0.6, 0.4])
    # max(1 − α) + max(α) σ = 0.8 + 0.3
    np.testing.assert_allclose(jacobian_bound(learned.cell, T),
                               1.1 ** np.arange(T), rtol=1e-12)


@pytest.mark.slow
def test_leaky_small_alpha_decays_slower_and_alpha_one_is_elman():
    rng = np.random.default_rng(5)
    n, d, T = 8, 3, 60
    W_h = orthogonal(rng, n)
    xs = rng.normal(size=(1, T, d))
    weights_rng_state = rng.bit_generator.state

    def layer_for(cell_class, **kwargs):
        rng.bit_generator.state = weights_rng_state
        return elman_layer(n, d, W_h, rng, cell_class=cell_class, **kwargs)

    elman = gradient_flow(layer_for(ElmanCell), xs)
    leaky_one = gradient_flow(layer_for(LeakyCell, alpha=1.0), xs)
    slow_layer = layer_for(LeakyCell, alpha=0.1)
    slow = gradient_flow(slow_layer, xs)
    np.testing.assert_array_equal(leaky_one, elman)
    assert np.all(slow <= jacobian_bound(slow_layer.cell, T) * (1 + 1e-9))
    assert slow[30] > 1e3 * elman[30]
    assert slow[T - 1] > 1e-2


@pytest.mark.slow
def test_lstm_with_forget_bias_two_keeps_gradients_orders_of_magnitude_larger():
    keras.utils.set_random_seed(6)
    n, d, T = 16, 4, 120
    xs = np.random.default_rng(6).normal(size=(1, T, d))
    elman = gradient_flow(keras.layers.RNN(ElmanCell(n)), xs)
    lstm = gradient_flow(keras.layers.RNN(LSTMCell(n, forget_bias=2.0)), xs)
    unbiased = gradient_flow(
        keras.layers.RNN(LSTMCell(n, forget_bias=0.0)), xs
    )
    assert lstm[100] > 1e4 * elman[100]
    assert lstm[100] > 1e4 * unbiased[100]
    assert lstm[100] > 1e-4


def test_plot_gradient_flow_draws_the_curves():
    curves = {"a": 0.5 ** np.arange(5), "b": np.ones(5)}
    bounds = {"a": 0.6 ** np.arange(5)}
    ax = plot_gradient_flow(curves, bounds, title="flow")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a", "b", "a bound"]
    np.testing.assert_allclose(lines[0].get_ydata(), curves["a"])
    np.testing.assert_allclose(lines[2].get_ydata(), bounds["a"])
    assert lines[2].get_linestyle() == "--"
    assert ax.get_yscale() == "log"
    matplotlib.pyplot.close(ax.figure)


def test_bad_arguments_name_themselves():
    layer = keras.layers.RNN(ElmanCell(2))
    with pytest.raises(ValueError, match="rnn_layer"):
        gradient_flow(keras.layers.Dense(2), np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match="inputs"):
        gradient_flow(layer, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="cell"):
        jacobian_bound(LSTMCell(2), 5)
    with pytest.raises(ValueError, match="built"):
        jacobian_bound(ElmanCell(2), 5)
    layer(np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match="T"):
        jacobian_bound(layer.cell, 0)
    with pytest.raises(ValueError, match="curves"):
        plot_gradient_flow({})


@pytest.mark.slow
def test_skip_connections_and_slow_time_scales_carry_gradients_further():
    """Lecture notes slides 54 and 56: with the same W_h, a delay-d skip
    connection and a group updated every 8 steps both decay far more slowly
    than the Elman cell."""
    rng = np.random.default_rng(8)
    n, d, T = 8, 3, 81
    W_h = 0.9 * orthogonal(rng, n)
    xs = rng.normal(size=(1, T, d))
    state = rng.bit_generator.state

    def flow(cell_class, **kwargs):
        rng.bit_generator.state = state
        layer = elman_layer(n, d, W_h, rng, cell_class=cell_class, **kwargs)
        if cell_class is TemporalSkipCell:
            layer.cell.skip_kernel.assign(0.9 * orthogonal(rng, n).T)
        return gradient_flow(layer, xs)

    elman = flow(ElmanCell)
    skip = flow(TemporalSkipCell, delay=8)
    slow = flow(MultiScaleCell, periods=(1, 8))
    assert skip[80] > 1e3 * elman[80]
    assert slow[80] > 1e3 * elman[80]
