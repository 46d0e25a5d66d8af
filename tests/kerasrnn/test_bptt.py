"""kerasrnn.bptt against TensorFlow autodiff, the lecture's closed forms and
hand-computed clipping (Algorithm `alg:rnn-bptt`, `eq:rnn-clip`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn.bptt import bptt, clip_gradient
from kerasrnn.cells.elman import ElmanCell


def random_params(rng, n, d, m):
    return {
        "W_x": rng.normal(scale=0.6, size=(n, d)),
        "W_h": rng.normal(scale=0.5, size=(n, n)),
        "b": rng.normal(scale=0.3, size=n),
        "W_y": rng.normal(scale=0.7, size=(m, n)),
        "b_y": rng.normal(scale=0.2, size=m),
    }


def autodiff_loss_and_grads(params, xs, ys, loss, h0):
    """L and ∂L/∂θ by TF autodiff through keras.layers.RNN(ElmanCell), float64."""
    n, d = params["W_x"].shape
    m = params["W_y"].shape[0]
    cell = ElmanCell(n, dtype="float64")
    rnn = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    head = keras.layers.Dense(m, dtype="float64")
    x = tf.constant(xs[None], dtype=tf.float64)
    initial = [tf.constant(h0[None], dtype=tf.float64)]
    head(rnn(x, initial_state=initial))
    # The cell stores the chapter's matrices transposed (row-vector form).
    cell.kernel.assign(params["W_x"].T)
    cell.recurrent_kernel.assign(params["W_h"].T)
    cell.bias.assign(params["b"])
    head.kernel.assign(params["W_y"].T)
    head.bias.assign(params["b_y"])
    weights = [cell.kernel, cell.recurrent_kernel, cell.bias,
               head.kernel, head.bias]
    with tf.GradientTape() as tape:
        y = head(rnn(x, initial_state=initial))[0]
        if loss == "squared":
            total = 0.5 * tf.reduce_sum((y - ys) ** 2)
        else:
            total = tf.reduce_sum(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=ys, logits=y
                )
            )
    g = tape.gradient(total, weights)
    grads = {
        "W_x": g[0].numpy().T,
        "W_h": g[1].numpy().T,
        "b": g[2].numpy(),
        "W_y": g[3].numpy().T,
        "b_y": g[4].numpy(),
    }
    return float(total), grads


@pytest.mark.parametrize("loss", ["squared", "cross_entropy"])
@pytest.mark.parametrize("nonzero_h0", [False, True])
def test_bptt_equals_tensorflow_autodiff(loss, nonzero_h0):
    rng = np.random.default_rng(7)
    n, d, m, T = 5, 3, 4, 9
    params = random_params(rng, n, d, m)
    xs = rng.normal(size=(T, d))
    if loss == "squared":
        ys = rng.normal(size=(T, m))
    else:
        ys = rng.integers(0, m, size=T)
    h0 = rng.normal(scale=0.5, size=n) if nonzero_h0 else np.zeros(n)

    expected_loss, expected = autodiff_loss_and_grads(params, xs, ys, loss, h0)
    total, grads = bptt(params, xs, ys, loss=loss,
                        initial_state=h0 if nonzero_h0 else None)

    assert total == pytest.approx(expected_loss, rel=1e-12, abs=1e-12)
    assert set(grads) == set(expected)
    for name in expected:
        assert grads[name].shape == params[name].shape
        np.testing.assert_allclose(grads[name], expected[name],
                                   rtol=1e-8, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("tau", [0.05, 0.5])
def test_bptt_clips_each_gradient_like_tf_clip_by_norm(tau):
    rng = np.random.default_rng(3)
    params = random_params(rng, 4, 2, 3)
    xs = rng.normal(size=(6, 2))
    ys = rng.normal(size=(6, 3))
    _, expected = autodiff_loss_and_grads(params, xs, ys, "squared",
                                          np.zeros(4))
    _, clipped = bptt(params, xs, ys, clip_threshold=tau)
    clipped_some = False
    for name, g in expected.items():
        reference = tf.clip_by_norm(tf.constant(g), tau).numpy()
        np.testing.assert_allclose(clipped[name], reference,
                                   rtol=1e-8, atol=1e-10, err_msg=name)
        clipped_some |= np.linalg.norm(g) > tau
    assert clipped_some


def test_two_step_closed_forms_of_the_lecture_notes():
    """Lecture notes §4 (BPTT math): the 2-step scalar network
    a_t = W h_{t-1} + U X_t + b, h_t = tanh(a_t), Y_t = V h_t + c,
    L = ½(Y_1 − Z_1)² + ½(Y_2 − Z_2)², with their closed forms."""
    W, U, b, V, c = 0.8, -1.3, 0.2, 1.7, -0.4
    h0, X1, X2, Z1, Z2 = 0.6, 0.5, -0.9, 0.3, -1.1
    h1 = np.tanh(W * h0 + U * X1 + b)
    Y1 = V * h1 + c
    h2 = np.tanh(W * h1 + U * X2 + b)
    Y2 = V * h2 + c
    e1, e2 = Y1 - Z1, Y2 - Z2
    s1, s2 = 1 - h1**2, 1 - h2**2
    closed = {
        "W_h": e1 * V * s1 * h0 + e2 * V * s2 * h1 + e2 * V * s2 * W * s1 * h0,
        "W_x": e1 * V * s1 * X1 + e2 * V * s2 * X2 + e2 * V * s2 * W * s1 * X1,
        "b": e1 * V * s1 + e2 * V * s2 + e2 * V * s2 * W * s1,
        "W_y": e1 * h1 + e2 * h2,
        "b_y": e1 + e2,
    }
    params = {"W_x": [[U]], "W_h": [[W]], "b": [b], "W_y": [[V]], "b_y": [c]}
    total, grads = bptt(params, [[X1], [X2]], [[Z1], [Z2]],
                        initial_state=[h0])
    assert total == pytest.approx(0.5 * e1**2 + 0.5 * e2**2, rel=1e-14)
    for name, value in closed.items():
        assert grads[name].item() == pytest.approx(value, rel=1e-12), name


@pytest.mark.parametrize(
    "gradient, tau, expected",
    [
        ([3.0, 4.0], 1.0, [0.6, 0.8]),          # ‖g‖ = 5 > 1: rescaled
        ([3.0, 4.0], 5.0, [3.0, 4.0]),          # ‖g‖ = τ: left alone
        ([3.0, 4.0], 10.0, [3.0, 4.0]),
        ([[1.0, 2.0], [2.0, 4.0]], 2.5, [[0.5, 1.0], [1.0, 2.0]]),  # ‖g‖_F = 5
        ([0.0, 0.0], 1.0, [0.0, 0.0]),
    ],
)
def test_clip_gradient_hand_numbers(gradient, tau, expected):
    np.testing.assert_allclose(clip_gradient(gradient, tau), expected,
                               rtol=1e-15)


def test_clipping_in_bptt_matches_hand_numbers():
    """Zero recurrent and input weights make every gradient hand-computable:
    h_t = tanh(b) = 0 for b = 0, so y_t = b_y and ∇W_y = 0, ∇b_y = Σ(b_y − z_t)."""
    params = {"W_x": [[0.0]], "W_h": [[0.0]], "b": [0.0],
              "W_y": [[1.0], [1.0]], "b_y": [0.0, 0.0]}
    ys = [[3.0, 0.0], [0.0, 4.0]]       # Σ_t (y_t − z_t) = (−3, −4)
    total, grads = bptt(params, [[1.0], [1.0]], ys, clip_threshold=2.5)
    assert total == pytest.approx(12.5)
    np.testing.assert_allclose(grads["b_y"], [-1.5, -2.0], rtol=1e-15)
    np.testing.assert_allclose(grads["W_y"], [[0.0], [0.0]])
    # ∂L/∂h_t = W_yᵀ(y_t − z_t) = −3 and −4, tanh'(0) = 1: ∇b = −7 → −2.5.
    np.testing.assert_allclose(grads["b"], [-2.5], rtol=1e-15)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"loss": "hinge"}, "loss"),
        ({"clip_threshold": 0.0}, "clip_threshold"),
        ({"clip_threshold": -1.0}, "clip_threshold"),
        ({"initial_state": [0.0]}, "initial_state"),
        ({"ys": np.zeros((4, 3))}, "ys"),
        ({"xs": np.zeros((4, 5))}, "xs"),
        ({"loss": "cross_entropy", "ys": np.array([0, 1, 2, 5])}, "ys"),
        ({"params": {"W_x": np.zeros((2, 3))}}, "params"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, argument):
    rng = np.random.default_rng(0)
    call = {
        "params": random_params(rng, 2, 3, 2),
        "xs": rng.normal(size=(4, 3)),
        "ys": rng.normal(size=(4, 2)),
    }
    call.update(kwargs)
    with pytest.raises(ValueError, match=argument):
        bptt(**call)
