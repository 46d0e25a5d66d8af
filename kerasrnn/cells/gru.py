"""The gated recurrent unit, `eq:rnn-gru-z` … `eq:rnn-gru-h`."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import ActivationLike, Config, TensorLike
from kerasrnn.validation import check_activation, check_bool


@keras.saving.register_keras_serializable(package="kerasrnn")
class GRUCell(RecurrentCell):
    """GRU cell of the chapter (Cho et al.):

        z_t = σ(W_z x_t + U_z h_{t-1} + b_z)                 (eq:rnn-gru-z)
        r_t = σ(W_r x_t + U_r h_{t-1} + b_r)                 (eq:rnn-gru-r)
        h̃_t = tanh(W_h x_t + U_h (r_t ⊙ h_{t-1}) + b_h)      (eq:rnn-gru-htilde)
        h_t = (1 − z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t                (eq:rnn-gru-h)

    The reset gate acts on h_{t-1} *before* U_h, and z_t weights the new
    candidate, as in the chapter. Keras's GRU weights the old state with z
    instead; `kerasrnn.from_keras` negates the z block to convert.

    With `reset_after=True` the candidate is the form Keras and cuDNN use,
        h̃_t = tanh(W_h x_t + b_h^x + r_t ⊙ (U_h h_{t-1} + b_h^h)),
    with separate input and recurrent biases: `bias` is (2, 3n), row 0 for
    the input projection and row 1 for the recurrent one.

    Gates are fused in the block order z, r, h̃: `kernel` (d, 3n),
    `recurrent_kernel` (n, 3n), `bias` (3n,). A step costs one input matmul
    and one recurrent matmul with `reset_after=True`; the textbook form needs
    r_t before U_h, so its recurrent projection is split in two (z, r then
    h̃), as in Keras's `reset_after=False`. Parameters: 3n(d + n + 1), or
    3n(d + n + 2) with `reset_after=True`, 3n(d + n) without bias.

    Args:
        units: Positive integer, n.
        recurrent_activation: Of the gates. Default `"sigmoid"`.
        reset_after: Boolean, use the Keras/cuDNN candidate. Default
            `False`.
        **kwargs: `activation` (of the candidate h̃_t; default `"tanh"`) and
            the other arguments of `RecurrentCell`: `use_bias`, the
            initializers, regularizers and constraints, `dropout`,
            `recurrent_dropout`, `seed`.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}]`, one `(batch, n)` tensor.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t])`, each `(batch, n)`.

    Example:

    3n(d + n + 1) = 3·8·(3 + 8 + 1) parameters, one more bias row with
    `reset_after`:

    >>> kerasrnn.GRUCell(8).param_count(3), kerasrnn.GRUCell(
    ...     8, reset_after=True).param_count(3)
    (288, 312)
    """

    gate_count = 3

    def __init__(
        self,
        units: int,
        recurrent_activation: ActivationLike = "sigmoid",
        reset_after: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, **kwargs)
        self.recurrent_activation = check_activation(
            "recurrent_activation", recurrent_activation
        )
        self.reset_after = check_bool("reset_after", reset_after)

    def bias_shape(self) -> tuple[int, ...]:
        if self.reset_after:
            return (2, 3 * self.units)
        return (3 * self.units,)

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        self.check_step_input(inputs)
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        n = self.units
        x = self.dropped_inputs(inputs, training)
        h_in = self.dropped_state(h_prev, training)

        x_proj = ops.matmul(x, self.kernel)
        if self.use_bias:
            x_proj = x_proj + (self.bias[0] if self.reset_after else self.bias)
        x_z, x_r, x_h = ops.split(x_proj, 3, axis=-1)

        if self.reset_after:
            h_proj = ops.matmul(h_in, self.recurrent_kernel)
            if self.use_bias:
                h_proj = h_proj + self.bias[1]
            h_z, h_r, h_h = ops.split(h_proj, 3, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + r * h_h)
        else:
            h_zr = ops.matmul(h_in, self.recurrent_kernel[:, : 2 * n])
            z = self.recurrent_activation(x_z + h_zr[:, :n])
            r = self.recurrent_activation(x_r + h_zr[:, n:])
            candidate = self.activation(
                x_h + ops.matmul(r * h_in, self.recurrent_kernel[:, 2 * n :])
            )
        h = (1.0 - z) * h_prev + z * candidate
        return h, [h]

    def get_config(self) -> Config:
        config = {
            "recurrent_activation": keras.activations.serialize(
                self.recurrent_activation
            ),
            "reset_after": self.reset_after,
        }
        return {**super().get_config(), **config}
