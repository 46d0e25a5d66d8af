"""Backpropagation through time for the simple RNN, in NumPy.

Algorithm `alg:rnn-bptt` of the chapter, written out step by step so that a
reader can follow the error signal δ backward through time and compare each
gradient with TensorFlow's autodiff. The network is the chapter's Elman RNN
in column-vector orientation:

    a_t = W_h h_{t-1} + W_x x_t + b,   h_t = tanh(a_t)      (eq:rnn-hidden)
    y_t = W_y h_t + b_y                                      (eq:rnn-output)
    L   = Σ_t L_t                                            (eq:rnn-loss-grad)

with L_t = ½‖y_t − z_t‖² (squared loss, the lecture notes' 2-step example)
or L_t = −log softmax(y_t)[z_t] (cross-entropy over class logits y_t).

`kerasrnn.ElmanCell` stores the same weights transposed (row-vector form):
`kernel` = W_xᵀ, `recurrent_kernel` = W_hᵀ, `bias` = b.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kerasrnn.validation import check_choice, check_number

#: The parameter names of `alg:rnn-bptt`, in the chapter's orientation.
PARAMETER_NAMES = ("W_x", "W_h", "b", "W_y", "b_y")

LOSSES = ("squared", "cross_entropy")


def clip_gradient(gradient: ArrayLike, threshold: float) -> NDArray[np.float64]:
    """Rescale one gradient to norm `threshold` if it is longer (`eq:rnn-clip`).

        g ← (τ / ‖g‖) g   if ‖g‖ > τ,   g otherwise,

    where ‖g‖ is the Euclidean (Frobenius, for a matrix) norm of the whole
    array.

    Args:
        gradient: Array of any shape.
        threshold: τ > 0.

    Returns:
        A new float64 array of the same shape, with norm min(‖g‖, τ).
    """
    threshold = check_number("threshold", threshold, low=0, low_open=True)
    gradient = np.asarray(gradient, dtype=np.float64)
    norm = np.sqrt(np.sum(gradient * gradient))
    if norm > threshold:
        return gradient * (threshold / norm)
    return gradient.copy()


def bptt(
    params: dict[str, ArrayLike],
    xs: ArrayLike,
    ys: ArrayLike,
    loss: str = "squared",
    clip_threshold: float | None = None,
    initial_state: ArrayLike | None = None,
) -> tuple[float, dict[str, NDArray[np.float64]]]:
    """Loss and gradients of one sequence by Algorithm `alg:rnn-bptt`.

    Forward sweep storing every a_t and h_t, then a backward sweep in which
    δ carries ∂L/∂h_t from t = T down to 1:

        δ   ← W_yᵀ ∇_{y_t} L_t + δ
        δ_a ← δ ⊙ (1 − tanh²(a_t))
        ∇W_y += ∇_{y_t} L_t h_tᵀ;   ∇b_y += ∇_{y_t} L_t
        ∇W_h += δ_a h_{t-1}ᵀ;  ∇W_x += δ_a x_tᵀ;  ∇b += δ_a
        δ   ← W_hᵀ δ_a

    and finally, when `clip_threshold` is given, each of the five gradients
    is clipped separately by `eq:rnn-clip`.

    Args:
        params: Dict with `W_x` (n, d), `W_h` (n, n), `b` (n,), `W_y` (m, n)
            and `b_y` (m,).
        xs: (T, d) inputs x_1 … x_T.
        ys: Targets: (T, m) real vectors z_t for `loss="squared"`, or (T,)
            integer class indices in [0, m) for `loss="cross_entropy"`.
        loss: `"squared"` (L_t = ½‖y_t − z_t‖²) or `"cross_entropy"`
            (L_t = −log softmax(y_t)[z_t]).
        clip_threshold: τ > 0 of `eq:rnn-clip`, or None for no clipping.
        initial_state: (n,) h_0; zeros (the algorithm's h_0 ← 0) if None.

    Returns:
        `(loss, grads)`: the summed loss L as a float (before clipping) and
        a dict of float64 gradients with the keys and shapes of `params`.
    """
    W_x, W_h, b, W_y, b_y = _check_params(params)
    n, d = W_x.shape
    m = W_y.shape[0]
    xs = _check_inputs(xs, d)
    T = xs.shape[0]
    check_choice("loss", loss, LOSSES)
    ys = _check_targets(ys, loss, T, m)
    if clip_threshold is not None:
        clip_threshold = check_number(
            "clip_threshold", clip_threshold, low=0, low_open=True
        )
    h0 = _check_initial_state(initial_state, n)

    # Forward pass: store every a_t and h_t (h[0] is h_0).
    a = np.zeros((T, n))
    h = np.zeros((T + 1, n))
    h[0] = h0
    y = np.zeros((T, m))
    for t in range(T):
        a[t] = W_h @ h[t] + W_x @ xs[t] + b
        h[t + 1] = np.tanh(a[t])
        y[t] = W_y @ h[t + 1] + b_y

    total, dy = _loss_and_output_gradient(y, ys, loss)

    grads = {name: np.zeros_like(value) for name, value in
             zip(PARAMETER_NAMES, (W_x, W_h, b, W_y, b_y))}
    delta = np.zeros(n)
    for t in reversed(range(T)):
        delta = W_y.T @ dy[t] + delta
        delta_a = delta * (1.0 - np.tanh(a[t]) ** 2)
        grads["W_y"] += np.outer(dy[t], h[t + 1])
        grads["b_y"] += dy[t]
        grads["W_h"] += np.outer(delta_a, h[t])
        grads["W_x"] += np.outer(delta_a, xs[t])
        grads["b"] += delta_a
        delta = W_h.T @ delta_a

    if clip_threshold is not None:
        grads = {
            name: clip_gradient(value, clip_threshold)
            for name, value in grads.items()
        }
    return total, grads


def _loss_and_output_gradient(
    y: NDArray[np.float64], ys: NDArray[Any], loss: str
) -> tuple[float, NDArray[np.float64]]:
    """Σ_t L_t and the (T, m) array of ∇_{y_t} L_t."""
    if loss == "squared":
        residual = y - ys
        return 0.5 * float(np.sum(residual * residual)), residual
    # Subtracting the row maximum keeps exp() finite for large logits.
    shifted = y - y.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    steps = np.arange(y.shape[0])
    total = -float(np.sum(log_probs[steps, ys]))
    dy = np.exp(log_probs)
    dy[steps, ys] -= 1.0
    return total, dy


def _check_params(params: dict[str, ArrayLike]) -> list[NDArray[np.float64]]:
    if not isinstance(params, dict) or set(params) != set(PARAMETER_NAMES):
        received = sorted(params) if isinstance(params, dict) else params
        raise ValueError(
            f"Argument `params` must be a dict with exactly the keys "
            f"{PARAMETER_NAMES}. Received: params keys={received!r}"
        )
    arrays = [np.asarray(params[name], dtype=np.float64)
              for name in PARAMETER_NAMES]
    W_x, W_h, b, W_y, b_y = arrays
    if W_x.ndim != 2:
        raise ValueError(
            "Argument `params['W_x']` must be a (n, d) matrix. "
            f"Received shape {W_x.shape}."
        )
    n = W_x.shape[0]
    expected = {"W_h": (n, n), "b": (n,)}
    if W_y.ndim != 2 or W_y.shape[1] != n:
        raise ValueError(
            f"Argument `params['W_y']` must be a (m, {n}) matrix. "
            f"Received shape {W_y.shape}."
        )
    expected["b_y"] = (W_y.shape[0],)
    for name, value in (("W_h", W_h), ("b", b), ("b_y", b_y)):
        if value.shape != expected[name]:
            raise ValueError(
                f"Argument `params[{name!r}]` must have shape "
                f"{expected[name]} (n={n} from W_x, m from W_y). "
                f"Received shape {value.shape}."
            )
    return arrays


def _check_inputs(xs: ArrayLike, d: int) -> NDArray[np.float64]:
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 2 or xs.shape[1] != d or xs.shape[0] == 0:
        raise ValueError(
            f"Argument `xs` must be a (T, {d}) array with T ≥ 1 "
            f"(d={d} from W_x). Received shape {xs.shape}."
        )
    return xs


def _check_targets(ys: ArrayLike, loss: str, T: int, m: int) -> NDArray[Any]:
    if loss == "squared":
        ys = np.asarray(ys, dtype=np.float64)
        if ys.shape != (T, m):
            raise ValueError(
                f"Argument `ys` must be a ({T}, {m}) array of targets for "
                f"loss='squared'. Received shape {ys.shape}."
            )
        return ys
    ys = np.asarray(ys)
    if (
        ys.shape != (T,)
        or not np.issubdtype(ys.dtype, np.integer)
        or ys.min() < 0
        or ys.max() >= m
    ):
        raise ValueError(
            f"Argument `ys` must be a ({T},) array of integer class indices "
            f"in [0, {m}) for loss='cross_entropy'. Received: ys={ys!r}"
        )
    return ys


def _check_initial_state(initial_state: ArrayLike | None, n: int) -> NDArray[np.float64]:
    if initial_state is None:
        return np.zeros(n)
    h0 = np.asarray(initial_state, dtype=np.float64)
    if h0.shape != (n,):
        raise ValueError(
            f"Argument `initial_state` must be a ({n},) vector h_0. "
            f"Received shape {h0.shape}."
        )
    return h0
