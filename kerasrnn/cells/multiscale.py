"""Multiple time scales: unit groups that update every 1, 2, 4, … steps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_positive_int_list


@keras.saving.register_keras_serializable(package="kerasrnn")
class MultiScaleCell(RecurrentCell):
    """Elman cell whose units run at several time scales:

        h̃_t    = f(W_x x_t + W_h h_{t-1} + b)
        h_t[k] = h̃_t[k]       if s_t mod p_k = 0
                 h_{t-1}[k]    otherwise

    the lecture notes' multiple time scales (slide 56): the n units are cut
    into K equal groups; group k is rewritten only every p_k steps and
    carries its value between updates, so its length-1 connection is
    replaced by a stride-p_k one (h^(t) ⟶ h^(t+p_k)). A slow group's
    Jacobian is the identity on the steps it skips, so its error signal
    crosses τ steps through τ/p_k nonlinear factors (as in the Clockwork
    RNN of Koutník et al., 2014, here with a full W_h).

    s_t is the step counter, 0 at the first step. It lives in the state, so
    the cell works inside `keras.layers.RNN` (including masked steps, which
    keep it, and stateful layers, which carry it across batches). It counts
    modulo lcm(p_1, …, p_K), so it stays an exact small integer in float32.

    State: [h_{t-1} (batch, n), s_t (batch, 1)]. Weights as `ElmanCell`:
    `kernel` = W_xᵀ (d, n), `recurrent_kernel` = W_hᵀ (n, n),
    `bias` = b (n,). Parameters: n(d + n + 1), n(d + n) without bias.

    Args:
        units: Positive integer n, a multiple of `len(periods)`.
        periods: Update periods p_1, …, p_K of the K unit groups, positive
            integers. Default (1, 2, 4, 8).
        **kwargs: `activation` (f; default `"tanh"`) and the other arguments of
            `RecurrentCell`: `use_bias`, the initializers, regularizers and
            constraints, `dropout`, `recurrent_dropout`, `seed`.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}, s_t]`.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t, s_{t+1}])`.

    Example:

    >>> rnn = keras.layers.RNN(MultiScaleCell(8, periods=(1, 4)))
    >>> tuple(rnn(np.zeros((2, 10, 3), "float32")).shape)
    (2, 8)
    """

    gate_count = 1

    def __init__(
        self, units: int, periods: Sequence[int] = (1, 2, 4, 8), **kwargs: Any
    ) -> None:
        super().__init__(units, **kwargs)
        periods = check_positive_int_list("periods", periods)
        if self.units % len(periods):
            raise ValueError(
                "Argument `units` must be a multiple of the number of "
                f"periods ({len(periods)}), one equal group per period. "
                f"Received: units={self.units}, periods={periods!r}"
            )
        self.periods = periods
        group = self.units // len(self.periods)
        self.unit_periods = [p for p in self.periods for _ in range(group)]
        self.cycle = math.lcm(*self.periods)
        self.state_size = [self.units, 1]

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        h_prev, step = states[0], states[1]
        candidate = self.activation(
            self.pre_activation(inputs, h_prev, training)
        )
        periods = ops.convert_to_tensor(self.unit_periods, dtype=step.dtype)
        update = ops.equal(ops.mod(step, periods), 0.0)
        h = ops.where(update, candidate, h_prev)
        return h, [h, ops.mod(step + 1.0, float(self.cycle))]

    def get_config(self) -> Config:
        return {**super().get_config(), "periods": list(self.periods)}
