"""The long short-term memory cell, `eq:rnn-lstm-f` … `eq:rnn-lstm-h`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import ActivationLike, Config, InitializerLike, TensorLike
from kerasrnn.validation import check_activation, check_bool, check_number


@keras.saving.register_keras_serializable(package="kerasrnn")
class LSTMBias(keras.initializers.Initializer):
    """Initial LSTM bias (4n,) in the block order i, f, c̃, o.

    Draws the bias from `initializer` and adds `forget_bias` to the forget
    block, the rule of `LSTMCell`. With `unit_forget_bias=True` it draws the
    way Keras's `LSTM(unit_forget_bias=True)` does instead, `initializer`
    on (n,) for i and on (2n,) for c̃, o, with ones on f, before adding
    `forget_bias`. It lets `kerasrnn.to_keras` and `kerasrnn.from_keras`
    write either rule into the other side's `bias_initializer`, so a layer
    re-created from its config starts from the same bias.

    Args:
        initializer: A Keras initializer or its name/config.
        forget_bias: Finite number added to the forget block.
        unit_forget_bias: Boolean, Keras's rule (above).

    Example:

    >>> init = LSTMBias("zeros", forget_bias=2.0)
    >>> np.asarray(init((8,)))
    array([0., 0., 2., 2., 0., 0., 0., 0.], dtype=float32)
    """

    def __init__(
        self,
        initializer: InitializerLike = "zeros",
        forget_bias: float = 0.0,
        unit_forget_bias: bool = False,
    ) -> None:
        self.initializer = keras.initializers.get(initializer)
        self.forget_bias = check_number("forget_bias", forget_bias)
        self.unit_forget_bias = check_bool(
            "unit_forget_bias", unit_forget_bias
        )

    def __call__(self, shape: Sequence[int], dtype: Any = None) -> TensorLike:
        """The bias for `shape` `(4n,)`, of `dtype`."""
        shape = tuple(shape)
        if len(shape) != 1 or shape[0] % 4:
            raise ValueError(
                "LSTMBias initialises an LSTM bias of shape (4n,). "
                f"Received: shape={shape}"
            )
        n = shape[0] // 4
        if self.unit_forget_bias:
            bias = ops.concatenate(
                [
                    self.initializer((n,), dtype=dtype),
                    ops.ones((n,), dtype=dtype),
                    self.initializer((2 * n,), dtype=dtype),
                ]
            )
        else:
            bias = self.initializer(shape, dtype=dtype)
        offset = ops.concatenate(
            [
                ops.zeros((n,), dtype=bias.dtype),
                ops.full((n,), self.forget_bias, dtype=bias.dtype),
                ops.zeros((2 * n,), dtype=bias.dtype),
            ]
        )
        return bias + offset

    def get_config(self) -> Config:
        """The three constructor arguments, the initializer serialized."""
        return {
            "initializer": keras.initializers.serialize(self.initializer),
            "forget_bias": self.forget_bias,
            "unit_forget_bias": self.unit_forget_bias,
        }


@keras.saving.register_keras_serializable(package="kerasrnn")
class LSTMCell(RecurrentCell):
    """LSTM cell of the chapter (Hochreiter & Schmidhuber):

        f_t = σ(W_f x_t + U_f h_{t-1} + b_f)          (eq:rnn-lstm-f)
        i_t = σ(W_i x_t + U_i h_{t-1} + b_i)          (eq:rnn-lstm-i)
        o_t = σ(W_o x_t + U_o h_{t-1} + b_o)          (eq:rnn-lstm-o)
        c̃_t = tanh(W_c x_t + U_c h_{t-1} + b_c)       (eq:rnn-lstm-ctilde)
        c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t               (eq:rnn-lstm-c)
        h_t = o_t ⊙ tanh(c_t)                          (eq:rnn-lstm-h)

    σ is `recurrent_activation`, tanh is `activation`. The four gates are
    fused in Keras's block order i, f, c̃, o: `kernel` (d, 4n) holds
    [W_iᵀ W_fᵀ W_cᵀ W_oᵀ], `recurrent_kernel` (n, 4n) the U blocks and
    `bias` (4n,) the b blocks, so a step costs one input and one recurrent
    matmul. Parameters: 4n(d + n + 1), or 4n(d + n) without bias.

    Following the chapter's remark on the constant error carousel, the
    forget-gate bias starts at `forget_bias` (added to `bias_initializer`),
    so f_t ≈ σ(1) ≈ 0.73 and the cell begins by remembering.

    Args:
        units: Positive integer, n.
        recurrent_activation: Of the gates. Default `"sigmoid"`.
        forget_bias: Finite number added to the initial forget-gate bias.
            Default 1.0.
        **kwargs: `activation` (of c̃_t and of c_t in h_t; default `"tanh"`)
            and the other arguments of `RecurrentCell`: `use_bias`, the
            initializers, regularizers and constraints, `dropout`,
            `recurrent_dropout`, `seed`.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}, c_{t-1}]`, each `(batch, n)`.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t, c_t])`, each `(batch, n)`.

    Example:

    >>> layer = keras.layers.Bidirectional(
    ...     keras.layers.RNN(kerasrnn.LSTMCell(8)))
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 16)
    """

    gate_count = 4

    def __init__(
        self,
        units: int,
        recurrent_activation: ActivationLike = "sigmoid",
        forget_bias: float = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, **kwargs)
        self.recurrent_activation = check_activation(
            "recurrent_activation", recurrent_activation
        )
        self.forget_bias = check_number("forget_bias", forget_bias)
        self.state_size = [self.units, self.units]

    def initial_bias(self, shape: Sequence[int], dtype: Any = None) -> TensorLike:
        return LSTMBias(self.bias_initializer, self.forget_bias)(
            shape, dtype=dtype
        )

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        h_prev, c_prev = states[0], states[1]
        z = self.pre_activation(inputs, h_prev, training)
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        c_tilde = self.activation(z_c)
        o = self.recurrent_activation(z_o)
        c = f * c_prev + i * c_tilde
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self) -> Config:
        config = {
            "recurrent_activation": keras.activations.serialize(
                self.recurrent_activation
            ),
            "forget_bias": self.forget_bias,
        }
        return {**super().get_config(), **config}
