"""Temporal skip connections: a recurrence that also reaches d steps back."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_int


@keras.saving.register_keras_serializable(package="kerasrnn")
class TemporalSkipCell(RecurrentCell):
    """Elman cell with an extra recurrent connection of delay d > 1:

        h_t = f(W_x x_t + W_h h_{t-1} + W_s h_{t-d} + b)

    the lecture notes' temporal skip connections (slide 54, h^(t) ⟶
    h^(t+d)). Through W_s an error signal crosses τ steps in about τ/d
    Jacobian factors instead of τ, so the exponential decay of
    `eq:rnn-jacobian-bound` sets in d times later.

    The state keeps the last d hidden states, newest first:
    [h_{t-1}, h_{t-2}, …, h_{t-d}], each (batch, n); the step returns
    [h_t, h_{t-1}, …, h_{t-d+1}]. Before the sequence has d steps the
    missing states are the zeros of the initial state.

    In row-vector form `kernel` = W_xᵀ (d_in, n), `recurrent_kernel` = W_hᵀ
    (n, n), `skip_kernel` = W_sᵀ (n, n) and `bias` = b (n,). `skip_kernel`
    is a recurrent weight: it takes the `recurrent_initializer`,
    `recurrent_regularizer` and `recurrent_constraint`, and the recurrent
    dropout mask applies to h_{t-d} as to h_{t-1}. Parameters:
    n(d_in + 2n + 1), or n(d_in + 2n) without bias.

    Args:
        units: Positive integer, n.
        delay: Integer d ≥ 2, the reach of the skip connection.
        **kwargs: `activation` (f; default `"tanh"`) and the other arguments of
            `RecurrentCell`: `use_bias`, the initializers, regularizers and
            constraints, `dropout`, `recurrent_dropout`, `seed`.

    Call arguments:
        inputs: `(batch, d_in)`, the input x_t of one step.
        states: The d tensors above.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t, h_{t-1}, …, h_{t-d+1}])`.

    Example:

    >>> rnn = keras.layers.RNN(TemporalSkipCell(8, delay=4))
    >>> tuple(rnn(np.zeros((2, 10, 3), "float32")).shape)
    (2, 8)
    """

    gate_count = 1

    def __init__(self, units: int, delay: int = 2, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        # A delay of 1 would be the ordinary recurrence.
        self.delay = check_int("delay", delay, 2)
        self.state_size = [self.units] * delay
        self.skip_kernel: Any = None

    def build_extra_weights(self) -> None:
        self.skip_kernel = self.add_weight(
            shape=(self.units, self.units),
            name="skip_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )

    def param_count(self, input_dim: int) -> int:
        """n(d_in + 2n + 1); n(d_in + 2n) without bias."""
        return super().param_count(input_dim) + self.units * self.units

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        states = list(states)
        h_prev, h_delayed = states[0], states[-1]
        a = self.pre_activation(inputs, h_prev, training) + ops.matmul(
            self.dropped_state(h_delayed, training), self.skip_kernel
        )
        h = self.activation(a)
        return h, [h] + states[:-1]

    def get_config(self) -> Config:
        return {**super().get_config(), "delay": self.delay}
