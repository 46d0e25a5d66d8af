"""The recurrent-cell contract, written once: `RecurrentCell`.

Every kerasrnn cell is a `keras.layers.Layer`, registered with
`keras.saving.register_keras_serializable(package="kerasrnn")`, that plugs
into `keras.layers.RNN`, `keras.layers.Bidirectional` and
`keras.layers.StackedRNNCells` unchanged. The contract, for every cell:

- `state_size` and `output_size` are set in `__init__`;
- the weights are created in `build(input_shape)`, `input_shape` being one
  step's `(batch, d)`;
- `call(inputs, states, training=False) -> (output, new_states)` is one step
  of the seed equations, with `inputs` (batch, d) and `states` a list of
  (batch, size) tensors, one per entry of `state_size`;
- `get_initial_state(batch_size)` returns zero states;
- `get_config()` round-trips every constructor argument as plain Python
  values (JSON);
- `param_count(input_dim)` is the closed form, the number `model.summary()`
  prints.

Weight layout (public: users port weights, tests set them). With g fused gate
blocks (`gate_count`) of n units reading d inputs:

| cell | `kernel` | `recurrent_kernel` | `bias` | gate blocks, in order |
|---|---|---|---|---|
| `ElmanCell` | (d, n) | (n, n) | (n,) | — |
| `LeakyCell` | (d, n) | (n, n) | (n,) | — (+ `alpha` (n,) if learned) |
| `LSTMCell` | (d, 4n) | (n, 4n) | (4n,) | i, f, c̃, o (Keras order) |
| `GRUCell` | (d, 3n) | (n, 3n) | (3n,); (2, 3n) with `reset_after` | z, r, h̃ |

Gates are fused: one matmul for the input projection and one for the
recurrent projection per step, never one per gate.

`RecurrentCell` holds what the cells share: argument validation (through
`kerasrnn.validation`), the fused weights, the pre-activation
x_t W + h_{t-1} U + b, input and recurrent dropout masks (drawn once per
sequence by `keras.layers.RNN`, active only when `training=True`), the zero
initial state, the config round trip and the g·n(d + n + 1) count. A subclass
must set `gate_count` and write `call`; Python refuses to instantiate one
that does not. It overrides `param_count` when it has weights of its own.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from kerasrnn.keras_internals import DropoutRNNCell
from kerasrnn.types import (
    ActivationLike,
    Config,
    ConstraintLike,
    InitializerLike,
    RegularizerLike,
    ShapeLike,
    TensorLike,
)
from kerasrnn.validation import (
    check_activation,
    check_bool,
    check_positive_int,
    check_rate,
    check_seed,
)


class RecurrentCell(keras.layers.Layer, DropoutRNNCell, metaclass=abc.ABCMeta):
    """Abstract base of the kerasrnn cells; the contract is the module's.

    Args:
        units: Positive integer, n, the size of the hidden state.
        activation: Activation of the state update. Default `"tanh"`.
        use_bias: Boolean, whether the cell has a bias vector. Default
            `True`.
        kernel_initializer: Initializer of `kernel`, (d, g·n).
        recurrent_initializer: Initializer of `recurrent_kernel`, (n, g·n).
        bias_initializer: Initializer of `bias`.
        kernel_regularizer, recurrent_regularizer, bias_regularizer:
            Regularizers of the three weights.
        kernel_constraint, recurrent_constraint, bias_constraint:
            Constraints of the three weights.
        dropout: Fraction in [0, 1) of the input units dropped (one mask
            per sequence, shared by every step).
        recurrent_dropout: Fraction in [0, 1) of the state units dropped
            before the recurrent projection.
        seed: Integer seed of the dropout masks, or `None`.
        **kwargs: Passed to `keras.layers.Layer` (`name`, `dtype`, ...).
    """

    @property
    @abc.abstractmethod
    def gate_count(self) -> int:
        """g, the number of gate blocks fused into one kernel.

        A subclass sets it as a class attribute (`gate_count = 4`).
        """

    def __init__(
        self,
        units: int,
        activation: ActivationLike = "tanh",
        use_bias: bool = True,
        kernel_initializer: InitializerLike = "glorot_uniform",
        recurrent_initializer: InitializerLike = "orthogonal",
        bias_initializer: InitializerLike = "zeros",
        kernel_regularizer: RegularizerLike = None,
        recurrent_regularizer: RegularizerLike = None,
        bias_regularizer: RegularizerLike = None,
        kernel_constraint: ConstraintLike = None,
        recurrent_constraint: ConstraintLike = None,
        bias_constraint: ConstraintLike = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.activation = check_activation("activation", activation)
        self.use_bias = check_bool("use_bias", use_bias)

        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(
            recurrent_initializer
        )
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = keras.regularizers.get(
            recurrent_regularizer
        )
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.recurrent_constraint = keras.constraints.get(recurrent_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)

        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = check_rate(
            "recurrent_dropout", recurrent_dropout
        )
        self.seed = check_seed("seed", seed)
        self.seed_generator = keras.random.SeedGenerator(seed=self.seed)

        self.state_size: int | list[int] = self.units
        self.output_size = self.units
        self.input_dim: int | None = None

    # ------------------------------------------------------------------ build
    def build(self, input_shape: ShapeLike) -> None:
        """Create `kernel`, `recurrent_kernel` and `bias` for one step's input.

        Args:
            input_shape: `(batch, d)`, the shape of one time step.
        """
        input_shape = tuple(input_shape)
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} steps over inputs of shape "
                "(batch, features) with a known number of features; "
                "keras.layers.RNN feeds it from inputs of shape "
                "(batch, time, features). "
                f"Received a step input shape of {input_shape}."
            )
        self.input_dim = int(input_shape[-1])
        width = self.gate_count * self.units
        self.kernel = self.add_weight(
            shape=(self.input_dim, width),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, width),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=self.bias_shape(),
                name="bias",
                initializer=self.initial_bias,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None
        self.build_extra_weights()
        super().build(input_shape)

    def bias_shape(self) -> tuple[int, ...]:
        """Shape of `bias`; `(g·n,)` unless a cell says otherwise."""
        return (self.gate_count * self.units,)

    def initial_bias(self, shape: Sequence[int], dtype: Any = None) -> TensorLike:
        """Initial value of `bias`; the LSTM overrides it for `forget_bias`."""
        return self.bias_initializer(shape, dtype=dtype)

    def build_extra_weights(self) -> None:
        """Hook for weights beyond the three fused ones (the learned leak)."""

    # ------------------------------------------------------------------- call
    @abc.abstractmethod
    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        """One step of the cell's equations.

        Args:
            inputs: `(batch, d)`, the input x_t of one step.
            states: List of `(batch, size)` tensors, one per `state_size`.
            training: Whether dropout masks apply.

        Returns:
            `(output, new_states)`: `(batch, output_size)` and a list shaped
            like `states`.
        """

    def pre_activation(
        self, inputs: TensorLike, h_prev: TensorLike, training: bool = False
    ) -> TensorLike:
        """a_t = x_t W + h_{t-1} U + b, the argument of every Elman-type update.

        The fused projection of `eq:rnn-hidden` (and of the LSTM's four gates,
        `eq:rnn-lstm-f` … `eq:rnn-lstm-o`), in row-vector form with
        `kernel` = W (d, g·n), `recurrent_kernel` = U (n, g·n) and `bias`
        = b (g·n,); the sequence's dropout masks apply to x_t and h_{t-1}
        when training. Checks the step input's size first.

        Args:
            inputs: `(batch, d)`, x_t.
            h_prev: `(batch, n)`, h_{t-1}.
            training: Whether dropout masks apply.

        Returns:
            `(batch, g·n)`, a_t.
        """
        self.check_step_input(inputs)
        a = ops.matmul(self.dropped_inputs(inputs, training), self.kernel)
        # The bias is added to x_t W before h_{t-1} U: LiteRT's converter
        # folds it into x_t W's FULLY_CONNECTED, one operator less per step.
        if self.use_bias:
            a = a + self.bias
        return a + ops.matmul(
            self.dropped_state(h_prev, training), self.recurrent_kernel
        )

    def check_step_input(self, inputs: TensorLike) -> None:
        """Refuse a step input whose feature size differs from the built one.

        Keras traces the step once before its loop starts, so this fires
        there, with the cell's name, instead of deep inside the loop.
        """
        shape = tuple(inputs.shape)
        if len(shape) != 2 or shape[-1] != self.input_dim:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' was built for inputs "
                f"of shape (batch, time, {self.input_dim}) and steps over "
                f"(batch, {self.input_dim}). Received a step input of shape "
                f"{shape}."
            )

    def dropped_inputs(self, inputs: TensorLike, training: bool) -> TensorLike:
        """x_t with the sequence's input-dropout mask applied when training."""
        if training and self.dropout > 0.0:
            return inputs * self.get_dropout_mask(inputs)
        return inputs

    def dropped_state(self, h_prev: TensorLike, training: bool) -> TensorLike:
        """h_{t-1} with the recurrent-dropout mask applied when training."""
        if training and self.recurrent_dropout > 0.0:
            return h_prev * self.get_recurrent_dropout_mask(h_prev)
        return h_prev

    def get_initial_state(self, batch_size: int | None = None) -> list[TensorLike]:
        """Zero state(s): a list with one `(batch_size, size)` tensor each."""
        sizes = (
            self.state_size
            if isinstance(self.state_size, (list, tuple))
            else [self.state_size]
        )
        return [
            ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in sizes
        ]

    # ---------------------------------------------------------------- account
    def param_count(self, input_dim: int) -> int:
        """Closed-form number of trainable parameters for input size d.

        g·n·(d + n) weights plus the bias, g·n (g·n·2 for a GRU with
        `reset_after`); subclasses add weights of their own.
        """
        d = check_positive_int("input_dim", input_dim)
        n, g = self.units, self.gate_count
        biases = 1
        for size in self.bias_shape():
            biases *= size
        return g * n * (d + n) + (biases if self.use_bias else 0)

    # ----------------------------------------------------------------- config
    def get_config(self) -> Config:
        """Every constructor argument, initializers and the like serialized."""
        config = {
            "units": self.units,
            "activation": keras.activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer
            ),
            "recurrent_initializer": keras.initializers.serialize(
                self.recurrent_initializer
            ),
            "bias_initializer": keras.initializers.serialize(
                self.bias_initializer
            ),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer
            ),
            "recurrent_regularizer": keras.regularizers.serialize(
                self.recurrent_regularizer
            ),
            "bias_regularizer": keras.regularizers.serialize(
                self.bias_regularizer
            ),
            "kernel_constraint": keras.constraints.serialize(
                self.kernel_constraint
            ),
            "recurrent_constraint": keras.constraints.serialize(
                self.recurrent_constraint
            ),
            "bias_constraint": keras.constraints.serialize(
                self.bias_constraint
            ),
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        }
        return {**super().get_config(), **config}
