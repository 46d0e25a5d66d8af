"""The Elman (simple) recurrent cell, `eq:rnn-hidden`."""

from __future__ import annotations

import keras

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import TensorLike


@keras.saving.register_keras_serializable(package="kerasrnn")
class ElmanCell(RecurrentCell):
    """Elman cell: h_t = tanh(W_h h_{t-1} + W_x x_t + b)   (`eq:rnn-hidden`).

    In row-vector form, with `kernel` = W_xᵀ (d, n), `recurrent_kernel` =
    W_hᵀ (n, n) and `bias` = b (n,):

        h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)

    The output of the step is h_t. Parameters: n(d + n + 1), or n(d + n)
    without bias (the lecture notes' d_h(d_in + d_h + 1)).

    The arguments are `keras.layers.SimpleRNNCell`'s.

    Args:
        units: Positive integer, n.
        activation: The nonlinearity. Default `"tanh"`.
        use_bias: Boolean, whether the cell adds b. Default `True`.
        kernel_initializer: Initializer of `kernel` (W_xᵀ, (d, n)).
        recurrent_initializer: Initializer of `recurrent_kernel` (W_hᵀ,
            (n, n)); orthogonal by default.
        bias_initializer: Initializer of `bias` (b, (n,)).
        kernel_regularizer: Regularizer of `kernel`, or `None`.
        recurrent_regularizer: Regularizer of `recurrent_kernel`, or `None`.
        bias_regularizer: Regularizer of `bias`, or `None`.
        kernel_constraint: Constraint on `kernel`, or `None`.
        recurrent_constraint: Constraint on `recurrent_kernel`, or `None`.
        bias_constraint: Constraint on `bias`, or `None`.
        dropout: Fraction in [0, 1) of x_t's units dropped, one mask per
            sequence.
        recurrent_dropout: Fraction in [0, 1) of h_{t-1}'s units dropped
            before W_h, one mask per sequence.
        seed: Integer seed of the dropout masks, or `None`.
        **kwargs: Passed to `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}]`, one `(batch, n)` tensor.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t])`, each `(batch, n)`.

    Example:

    >>> rnn = keras.layers.RNN(kerasrnn.ElmanCell(4), return_sequences=True)
    >>> tuple(rnn(np.zeros((2, 5, 3), "float32")).shape)
    (2, 5, 4)
    """

    gate_count = 1

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        h = self.activation(self.pre_activation(inputs, h_prev, training))
        return h, [h]
