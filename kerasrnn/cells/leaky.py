"""The leaky-unit recurrent cell (lecture notes, slide 55)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_bool, check_number


@keras.saving.register_keras_serializable(package="kerasrnn")
class UnitInterval(keras.constraints.Constraint):
    """Keeps a weight inside [0, 1] after every optimizer update."""

    def __call__(self, w: TensorLike) -> TensorLike:
        return ops.clip(w, 0.0, 1.0)


@keras.saving.register_keras_serializable(package="kerasrnn")
class LeakyCell(RecurrentCell):
    """Leaky unit: h_t = (1 − α) h_{t-1} + α tanh(W h_{t-1} + U x_t + b).

    The lecture notes' leaky integrator (slide 55): a linear self-connection
    of weight (1 − α) beside the Elman update h̃_t. α = 1 is exactly
    `ElmanCell`; α = 0 locks the state (h_t = h_{t-1}); a small α lets the
    error signal pass through the constant factor (1 − α) instead of the
    saturating nonlinearity, so it survives longer lags.

    In row-vector form, `kernel` = Uᵀ (d, n), `recurrent_kernel` = Wᵀ (n, n),
    `bias` = b (n,). With `learn_alpha=True` the rate is a trainable
    per-unit weight `alpha` (n,), initialised to `alpha` and kept in [0, 1].

    Parameters: n(d + n + 1), plus n with `learn_alpha=True`
    (n(d + n) without bias).

    Args:
        units: Positive integer, n.
        alpha: Leak rate α in [0, 1] (1 is the Elman cell, 0 locks the
            state). Default 0.5.
        learn_alpha: Boolean, learn one α per unit. Default `False`.
        **kwargs: `activation` (default `"tanh"`) and the other arguments of
            `RecurrentCell`: `use_bias`, the initializers, regularizers and
            constraints, `dropout`, `recurrent_dropout`, `seed`. Dropout
            applies to the inputs of the projections, never to the leak
            path (1 − α) h_{t-1}.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}]`, one `(batch, n)` tensor.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t])`, each `(batch, n)`.

    Example:

    With zero weights h̃_t = tanh(0) = 0, so each step keeps (1 − α) of
    the state: 1 → 0.75 → 0.5625 for α = 0.25.

    >>> cell = LeakyCell(1, alpha=0.25, kernel_initializer="zeros",
    ...                  recurrent_initializer="zeros")
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> out = rnn(np.zeros((1, 2, 1), "float32"),
    ...           initial_state=[np.ones((1, 1), "float32")])
    >>> np.asarray(out)[0, :, 0].tolist()
    [0.75, 0.5625]
    """

    gate_count = 1

    def __init__(
        self, units: int, alpha: float = 0.5, learn_alpha: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(units, **kwargs)
        self.alpha = check_number("alpha", alpha, low=0, high=1)
        self.learn_alpha = check_bool("learn_alpha", learn_alpha)
        self.alpha_weight: Any = None

    def build_extra_weights(self) -> None:
        if self.learn_alpha:
            self.alpha_weight = self.add_weight(
                shape=(self.units,),
                name="alpha",
                initializer=keras.initializers.Constant(self.alpha),
                constraint=UnitInterval(),
            )

    def param_count(self, input_dim: int) -> int:
        """n(d + n + 1), + n when α is learned; n(d + n) without bias."""
        extra = self.units if self.learn_alpha else 0
        return super().param_count(input_dim) + extra

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        candidate = self.activation(
            self.pre_activation(inputs, h_prev, training)
        )
        alpha = self.alpha_weight if self.learn_alpha else self.alpha
        h = (1.0 - alpha) * h_prev + alpha * candidate
        return h, [h]

    def get_config(self) -> Config:
        config = {"alpha": self.alpha, "learn_alpha": self.learn_alpha}
        return {**super().get_config(), **config}
