"""The recurrent-cell contract, written once.

Every kerasrnn cell is a `keras.layers.Layer` that `keras.layers.RNN` steps
through time. `RecurrentCell` holds what all of them share:

- argument validation (a `ValueError` naming the argument, the value received
  and what is allowed);
- the fused weight layout of DESIGN.md §2: `kernel` (d, g·n),
  `recurrent_kernel` (n, g·n) and `bias` (g·n,), where g is the number of
  gate blocks (1 for Elman/leaky, 4 for LSTM, 3 for GRU);
- input and recurrent dropout masks, drawn once per sequence and active only
  when `training=True`;
- the zero initial state, the config round trip and the parameter count.

A subclass sets `gate_count`, implements `call` (the seed equations) and
`param_count` (their closed form).
"""

import keras
from keras import ops

# Keras's RNN layer recognises cells that carry dropout masks by this mixin:
# it draws the masks before its loop starts (so the loop body stays
# stateless, as `tf.while_loop` and XLA require) and clears them after.
# It is not exported under `keras.layers`, hence the private import; the
# `keras` pin in pyproject.toml covers it.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell


def validate_units(units):
    """Return `units` if it is a positive integer, else raise."""
    if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
        raise ValueError(
            "Argument `units` must be a positive integer. "
            f"Received: units={units!r}"
        )
    return units


def validate_rate(name, value):
    """Return a dropout rate if it lies in [0, 1), else raise."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not is_number or not 0.0 <= value < 1.0:
        raise ValueError(
            f"Argument `{name}` must be a float in [0, 1). "
            f"Received: {name}={value!r}"
        )
    return float(value)


def get_activation(name, identifier):
    """`keras.activations.get`, with an error that names the argument."""
    try:
        return keras.activations.get(identifier)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"Argument `{name}` must be a Keras activation (a name such as "
            f"'tanh' or 'sigmoid', a callable, or None). "
            f"Received: {name}={identifier!r}"
        ) from error


class RecurrentCell(keras.layers.Layer, DropoutRNNCell):
    """Base class of the kerasrnn cells (see the module docstring).

    Args:
        units: Positive integer, n, the size of the hidden state.
        activation: Activation of the state update. Default `"tanh"`.
        use_bias: Whether the cell has a bias vector. Default `True`.
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
        seed: Integer seed of the dropout masks.
        **kwargs: Passed to `keras.layers.Layer` (`name`, `dtype`, ...).
    """

    #: Number of gate blocks fused into one kernel (g above).
    gate_count = 1

    def __init__(
        self,
        units,
        activation="tanh",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = validate_units(units)
        self.activation = get_activation("activation", activation)
        self.use_bias = bool(use_bias)

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

        self.dropout = validate_rate("dropout", dropout)
        self.recurrent_dropout = validate_rate(
            "recurrent_dropout", recurrent_dropout
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)

        self.state_size = self.units
        self.output_size = self.units
        self.input_dim = None

    # ------------------------------------------------------------------ build
    def build(self, input_shape):
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

    def bias_shape(self):
        """Shape of `bias`; `(g·n,)` unless a cell says otherwise."""
        return (self.gate_count * self.units,)

    def initial_bias(self, shape, dtype=None):
        """Initial value of `bias`; the LSTM overrides it for `forget_bias`."""
        return self.bias_initializer(shape, dtype=dtype)

    def build_extra_weights(self):
        """Hook for weights beyond the three fused ones (the learned leak)."""

    # ------------------------------------------------------------------- call
    def check_step_input(self, inputs):
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

    def dropped_inputs(self, inputs, training):
        """x_t with the sequence's input-dropout mask applied when training."""
        if training and self.dropout > 0.0:
            return inputs * self.get_dropout_mask(inputs)
        return inputs

    def dropped_state(self, h_prev, training):
        """h_{t-1} with the recurrent-dropout mask applied when training."""
        if training and self.recurrent_dropout > 0.0:
            return h_prev * self.get_recurrent_dropout_mask(h_prev)
        return h_prev

    def get_initial_state(self, batch_size=None):
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
    def param_count(self, input_dim):
        """Closed-form number of trainable parameters for input size d.

        g·n·(d + n) weights plus the bias, g·n (g·n·2 for a GRU with
        `reset_after`); subclasses add weights of their own.
        """
        d = self.check_input_dim(input_dim)
        n, g = self.units, self.gate_count
        biases = 1
        for size in self.bias_shape():
            biases *= size
        return g * n * (d + n) + (biases if self.use_bias else 0)

    def check_input_dim(self, input_dim):
        """Return `input_dim` if it is a positive integer, else raise."""
        if (
            isinstance(input_dim, bool)
            or not isinstance(input_dim, int)
            or input_dim <= 0
        ):
            raise ValueError(
                "Argument `input_dim` must be a positive integer. "
                f"Received: input_dim={input_dim!r}"
            )
        return input_dim

    # ----------------------------------------------------------------- config
    def get_config(self):
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
