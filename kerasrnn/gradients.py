"""Gradient-flow diagnostics: how far back an error signal reaches.

`gradient_flow` measures, by autodiff through any recurrent cell (Keras's
own included), the norm of the Jacobian product of `eq:rnn-jacobian`,

    g[lag] = ‖∂h_T / ∂h_{T−lag}‖₂   (largest singular value),

and `jacobian_bound` gives the chapter's ceiling on it,
`(γ σ_max(W_h))^lag` (`eq:rnn-jacobian-bound`), for Elman and leaky cells.
`plot_gradient_flow` draws both on a log scale, where vanishing gradients
are straight lines sloping down.

`gradient_flow` differentiates with the Keras backend's own autodiff
(TensorFlow's `GradientTape` or `jax.jacrev`), so it needs no TensorFlow
under `KERAS_BACKEND=jax`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import keras
import numpy as np
from numpy.typing import ArrayLike, NDArray

from kerasrnn.cells.elman import ElmanCell
from kerasrnn.cells.leaky import LeakyCell
from kerasrnn.validation import check_positive_int

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# sup |f'| of the activations the bound knows; γ of eq:rnn-jacobian-bound.
_SLOPE_BOUNDS = {
    "tanh": 1.0,
    "sigmoid": 0.25,
    "linear": 1.0,
    "relu": 1.0,
}


def gradient_flow(rnn_layer: keras.layers.Layer, inputs: ArrayLike) -> NDArray[np.float64]:
    """‖∂h_T/∂h_{T−lag}‖₂ for lag = 0 … T−1, on the first sequence.

    The cell is stepped over `inputs[0]` from its initial state; at each
    step autodiff gives the one-step Jacobian M_t = ∂s_t/∂s_{t−1} of the
    cell's whole state s (all state tensors flattened: h and c for an LSTM,
    the delayed states of a skip cell, ...), and the products

        P_lag = M_T M_{T−1} ⋯ M_{T−lag+1}       (eq:rnn-jacobian)

    transport a perturbation of the state at step T − lag to step T. h is
    the cell's first state tensor (the hidden state of every cell in Keras
    and kerasrnn), so g[lag] is the largest singular value of the h-to-h
    block of P_lag: the total effect of h_{T−lag} on h_T through every path,
    the LSTM's cell state included. g[0] = 1.

    Args:
        rnn_layer: A `keras.layers.RNN` (or `SimpleRNN`, `LSTM`, `GRU`, any
            layer with a `cell`); built on first use if it is not yet.
        inputs: (batch, T, d) array; only the first sequence is used.

    Returns:
        (T,) float64 array g.
    """
    cell = getattr(rnn_layer, "cell", None)
    if not isinstance(rnn_layer, keras.layers.Layer) or cell is None:
        raise ValueError(
            "Argument `rnn_layer` must be a Keras recurrent layer with a "
            "`cell` (keras.layers.RNN, LSTM, GRU, SimpleRNN). "
            f"Received: rnn_layer={rnn_layer!r}"
        )
    inputs = np.asarray(inputs)
    if inputs.ndim != 3 or inputs.shape[0] == 0 or inputs.shape[1] == 0:
        raise ValueError(
            "Argument `inputs` must be a (batch, T, d) array with batch ≥ 1 "
            f"and T ≥ 1. Received shape {inputs.shape}."
        )
    if not rnn_layer.built:
        rnn_layer(inputs[:1])
    backend = keras.backend.backend()
    if backend not in _ONE_STEP_JACOBIANS:
        # Each backend needs its own Jacobian routine, held to NumPy by the
        # suite; the suite runs TensorFlow and JAX, so those are the two.
        raise RuntimeError(
            "gradient_flow differentiates with the Keras backend's autodiff, "
            f"one of {tuple(_ONE_STEP_JACOBIANS)}; this process runs Keras "
            f"on {backend!r} (set KERAS_BACKEND)"
        )
    sizes = [
        int(keras.ops.shape(state)[-1])
        for state in keras.tree.flatten(cell.get_initial_state(batch_size=1))
    ]
    hidden = sizes[0]
    sequence = np.asarray(inputs[:1], dtype=cell.compute_dtype)
    jacobians = _ONE_STEP_JACOBIANS[backend](cell, sequence, sizes)

    # jacobians[t] is ∂s_{t+1}/∂s_t; the first one (from s_0) is not needed.
    steps = len(jacobians)
    flow = np.empty(steps)
    product = np.eye(sum(sizes))
    for lag in range(steps):
        if lag > 0:
            product = product @ jacobians[steps - lag]
        flow[lag] = np.linalg.norm(product[:hidden, :hidden], ord=2)
    return flow


def _tensorflow_jacobians(
    cell: keras.layers.Layer, sequence: NDArray[Any], sizes: Sequence[int]
) -> list[NDArray[np.float64]]:
    """[∂s_{t+1}/∂s_t as a (Σsizes, Σsizes) float64 array, t = 0 … T−1]."""
    import tensorflow as tf

    @tf.function
    def step(x: Any, flat_state: Any) -> tuple[Any, Any]:
        with tf.GradientTape() as tape:
            tape.watch(flat_state)
            states = tf.split(flat_state, sizes, axis=-1)
            _, new_states = cell(x, list(states), training=False)
            new_flat = tf.concat(tf.nest.flatten(new_states), axis=-1)
            first_sequence = new_flat[0]
        jacobian = tape.jacobian(
            first_sequence,
            flat_state,
            unconnected_gradients=tf.UnconnectedGradients.ZERO,
        )
        return new_flat, tf.reshape(jacobian, (sum(sizes), sum(sizes)))

    flat = tf.concat(
        tf.nest.flatten(cell.get_initial_state(batch_size=1)), axis=-1
    )
    jacobians = []
    for t in range(sequence.shape[1]):
        flat, jacobian = step(tf.constant(sequence[:, t]), flat)
        jacobians.append(jacobian.numpy().astype(np.float64))
    return jacobians


def _jax_jacobians(
    cell: keras.layers.Layer, sequence: NDArray[Any], sizes: Sequence[int]
) -> list[NDArray[np.float64]]:
    """As `_tensorflow_jacobians`, with `jax.jacrev`."""
    import jax
    import jax.numpy as jnp

    splits = np.cumsum(sizes)[:-1].tolist()

    def next_state(x: Any, flat_state: Any) -> Any:
        states = jnp.split(flat_state, splits, axis=-1)
        _, new_states = cell(x, list(states), training=False)
        return jnp.concatenate(keras.tree.flatten(new_states), axis=-1)

    @jax.jit
    def step(x: Any, flat_state: Any) -> tuple[Any, Any]:
        jacobian = jax.jacrev(lambda state: next_state(x, state)[0])(flat_state)
        return next_state(x, flat_state), jnp.reshape(
            jacobian, (sum(sizes), sum(sizes))
        )

    flat = jnp.concatenate(
        keras.tree.flatten(cell.get_initial_state(batch_size=1)), axis=-1
    )
    jacobians = []
    for t in range(sequence.shape[1]):
        flat, jacobian = step(sequence[:, t], flat)
        jacobians.append(np.asarray(jacobian, dtype=np.float64))
    return jacobians


#: Keras backend -> how one-step Jacobians are computed with its autodiff.
_ONE_STEP_JACOBIANS: dict[
    str, Callable[[keras.layers.Layer, NDArray[Any], Sequence[int]], list[NDArray[np.float64]]]
] = {
    "tensorflow": _tensorflow_jacobians,
    "jax": _jax_jacobians,
}


def jacobian_bound(cell: keras.layers.Layer, T: int) -> NDArray[np.float64]:
    """Ceiling on ‖∂h_T/∂h_{T−lag}‖₂ for lag = 0 … T−1 (`eq:rnn-jacobian-bound`).

    Elman cell: each factor diag(f'(a_i)) W_h of `eq:rnn-jacobian` has norm
    at most γ σ_max(W_h), with γ = sup|f'| (1 for tanh), so the bound is
    (γ σ_max(W_h))^lag.

    Leaky cell, h_t = (1 − α) h_{t−1} + α f(W_h h_{t−1} + W_x x_t + b): the
    one-step Jacobian (row-vector form, as the cell stores W_hᵀ) is

        ∂h_t/∂h_{t−1} = (1 − α) I + α diag(f'(a_t)) W_hᵀ,

    whose norm is at most (1 − α) + α γ σ_max(W_h) by the triangle
    inequality, so the bound is ((1 − α) + α γ σ_max(W_h))^lag. It equals
    the Elman bound at α = 1 and tends to 1 as α → 0: a small α keeps the
    ceiling near one however small σ_max is. With a learned per-unit α the
    two terms are bounded by max_i(1 − α_i) and max_i(α_i) γ σ_max(W_h).

    Args:
        cell: A built `kerasrnn.ElmanCell`, `kerasrnn.LeakyCell` or
            `keras.layers.SimpleRNNCell` with activation tanh, sigmoid,
            linear or relu.
        T: Positive integer, the number of lags.

    Returns:
        (T,) float64 array, bound[lag] = ρ^lag with the ρ above.
    """
    if not isinstance(
        cell, (ElmanCell, LeakyCell, keras.layers.SimpleRNNCell)
    ):
        raise ValueError(
            "Argument `cell` must be a kerasrnn.ElmanCell, kerasrnn.LeakyCell "
            "or keras.layers.SimpleRNNCell (cells whose Jacobian has the form "
            f"of eq:rnn-jacobian). Received: cell={cell!r}"
        )
    T = check_positive_int("T", T)
    if not cell.built:
        raise ValueError(
            f"Argument `cell` must be built (its recurrent kernel must exist); "
            f"call the RNN layer on an input first. Received: cell={cell.name}"
        )
    activation = keras.activations.serialize(cell.activation)
    if activation not in _SLOPE_BOUNDS:
        raise ValueError(
            f"Argument `cell` must use one of the activations "
            f"{tuple(_SLOPE_BOUNDS)} (their sup|f'| is known). "
            f"Received: activation={activation!r}"
        )
    gamma = _SLOPE_BOUNDS[activation]
    sigma = np.linalg.norm(
        np.asarray(cell.recurrent_kernel, dtype=np.float64), ord=2
    )
    rate = gamma * sigma
    if isinstance(cell, LeakyCell):
        if cell.learn_alpha:
            alpha = np.asarray(cell.alpha_weight, dtype=np.float64)
            rate = np.max(1.0 - alpha) + np.max(alpha) * gamma * sigma
        else:
            rate = (1.0 - cell.alpha) + cell.alpha * gamma * sigma
    return rate ** np.arange(T, dtype=np.float64)


def plot_gradient_flow(
    curves: dict[str, ArrayLike],
    bounds: dict[str, ArrayLike] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Draw gradient-flow curves (and bounds, dashed) on a log scale.

    Args:
        curves: Dict name -> (T,) array from `gradient_flow`.
        bounds: Optional dict name -> (T,) array from `jacobian_bound`.
        ax: Matplotlib axes to draw on; a new figure if None.
        title: Optional axes title.

    Returns:
        The matplotlib `Axes`.
    """
    if not isinstance(curves, dict) or not curves:
        raise ValueError(
            "Argument `curves` must be a non-empty dict name -> (T,) array. "
            f"Received: curves={curves!r}"
        )
    if bounds is not None and not isinstance(bounds, dict):
        raise ValueError(
            "Argument `bounds` must be a dict name -> (T,) array or None. "
            f"Received: bounds={bounds!r}"
        )
    # Imported here so that the library itself needs no plotting package.
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, flow in curves.items():
        flow = np.asarray(flow, dtype=np.float64)
        ax.semilogy(np.arange(flow.size), flow, label=name)
    for name, bound in (bounds or {}).items():
        bound = np.asarray(bound, dtype=np.float64)
        ax.semilogy(
            np.arange(bound.size), bound, linestyle="--", label=f"{name} bound"
        )
    ax.set_xlabel("lag  (T − k)")
    ax.set_ylabel("‖∂h_T / ∂h_k‖₂")
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    return ax
