"""Deep RNNs: an MLP inside the step, and stacks with skip connections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.types import Config, ShapeLike, TensorLike
from kerasrnn.validation import (
    check_bool,
    check_positive_int,
    check_positive_int_list,
)


def _size_list(state_size: int | list[int] | tuple[int, ...]) -> list[int]:
    """A cell's `state_size` as a list of ints."""
    if isinstance(state_size, (list, tuple)):
        return [int(size) for size in state_size]
    return [int(state_size)]


@keras.saving.register_keras_serializable(package="kerasrnn")
class DeepTransitionCell(RecurrentCell):
    """Recurrent cell with a deep (MLP) hidden-to-hidden transition:

        z_0 = f(W_x x_t + W_h h_{t-1} + b)                 (width n)
        z_l = f(z_{l-1} V_l + c_l),   l = 1, …, L           (row-vector form)
        h_t = z_L                                           (width n)

    the lecture notes' deep transition (slide 50, middle; Pascanu et al.,
    2014): L + 1 nonlinear layers between h_{t-1} and h_t, with hidden
    widths `transition_units` = (m_1, …, m_{L-1}) and m_L = n. The path an
    error signal crosses per step is L + 1 layers long, so its Jacobian
    product of `eq:rnn-jacobian` has L + 1 factors per step — deeper steps
    vanish or explode faster, the drawback the notes point out.

    Weights: `kernel` = W_xᵀ (d, n), `recurrent_kernel` = W_hᵀ (n, n),
    `bias` = b (n,) as in `ElmanCell`, then `transition_kernel_l`
    (m_{l-1}, m_l) and `transition_bias_l` (m_l,) for l = 1 … L (m_0 = n),
    initialised by `kernel_initializer` and `bias_initializer`.
    Parameters: n(d + n + 1) + Σ_l (m_{l-1} + 1) m_l; without bias
    n(d + n) + Σ_l m_{l-1} m_l.

    Args:
        units: Positive integer, n.
        transition_units: Widths (m_1, …, m_{L-1}) of the hidden layers of
            the transition MLP, positive integers; `()` (default) is one
            extra n → n layer (L = 1).
        **kwargs: `activation` (f, of every layer; default `"tanh"`) and the
            other arguments of `RecurrentCell`: `use_bias`, the initializers,
            regularizers and constraints, `dropout`, `recurrent_dropout`,
            `seed`.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: `[h_{t-1}]`, one `(batch, n)` tensor.
        training: Whether dropout masks apply.

    Returns:
        `(h_t, [h_t])`, each `(batch, n)`.
    """

    gate_count = 1

    def __init__(
        self, units: int, transition_units: Sequence[int] = (), **kwargs: Any
    ) -> None:
        super().__init__(units, **kwargs)
        self.transition_units = check_positive_int_list(
            "transition_units", transition_units, allow_empty=True
        )
        self.transition_kernels: list[Any] = []
        self.transition_biases: list[Any] = []

    def layer_widths(self) -> tuple[int, ...]:
        """(m_0, …, m_L) = (n, *transition_units, n)."""
        return (self.units, *self.transition_units, self.units)

    def build_extra_weights(self) -> None:
        widths = self.layer_widths()
        for index, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
            self.transition_kernels.append(
                self.add_weight(
                    shape=(fan_in, fan_out),
                    name=f"transition_kernel_{index + 1}",
                    initializer=self.kernel_initializer,
                    regularizer=self.kernel_regularizer,
                    constraint=self.kernel_constraint,
                )
            )
            if self.use_bias:
                self.transition_biases.append(
                    self.add_weight(
                        shape=(fan_out,),
                        name=f"transition_bias_{index + 1}",
                        initializer=self.bias_initializer,
                        regularizer=self.bias_regularizer,
                        constraint=self.bias_constraint,
                    )
                )

    def param_count(self, input_dim: int) -> int:
        """n(d + n + 1) + Σ_l (m_{l-1} + 1) m_l (no +1 without bias)."""
        widths = self.layer_widths()
        bias = 1 if self.use_bias else 0
        transition = sum(
            (fan_in + bias) * fan_out
            for fan_in, fan_out in zip(widths, widths[1:])
        )
        return super().param_count(input_dim) + transition

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        z = self.activation(self.pre_activation(inputs, h_prev, training))
        for index, kernel in enumerate(self.transition_kernels):
            a = ops.matmul(z, kernel)
            if self.use_bias:
                a = a + self.transition_biases[index]
            z = self.activation(a)
        return z, [z]

    def get_config(self) -> Config:
        return {
            **super().get_config(),
            "transition_units": list(self.transition_units),
        }


@keras.saving.register_keras_serializable(package="kerasrnn")
class SkipStackedCells(keras.layers.Layer):
    """A stack of recurrent cells with skip connections, stepped as one cell:

        o^1_t = cell_1(x_t,               s^1_{t-1})
        o^l_t = cell_l([x_t ; o^{l-1}_t],  s^l_{t-1})     l = 2, …, L
        y_t   = [o^1_t ; o^2_t ; … ; o^L_t]

    the lecture notes' deep RNN with skip connections (slide 50, right):
    the input reaches every layer directly and every layer reaches the
    output, so no layer's gradient has to cross the layers above it. With
    `input_skip=False` layer l reads only o^{l-1}_t, with
    `output_skip=False` the output is o^L_t; with both False this is the
    hierarchical stack of `keras.layers.StackedRNNCells`.

    Inside `keras.layers.RNN` all layers advance together in one loop,
    which gives the same result as L stacked `RNN` layers (each with
    `return_sequences=True`, their outputs concatenated as above). The
    state is the flat list of every cell's states, layer 1 first, so
    `gradient_flow` sees layer 1's hidden state as h.

    Args:
        cells: Non-empty list of recurrent cells (any Keras or kerasrnn
            cell). Their dropout must be 0: `keras.layers.RNN` draws dropout
            masks only for the cell it holds, so apply dropout between
            stacks instead.
        input_skip: Feed x_t to every layer. Default `True`.
        output_skip: Output every layer's o_t. Default `True`.
        **kwargs: Passed to `keras.layers.Layer`.

    Call arguments:
        inputs: `(batch, d)`, the input x_t of one step.
        states: The flat list of the cells' states, in the cells' order.
        training: Passed to every cell.

    Returns:
        `(y_t, new_states)`; y_t is (batch, Σ_l n_l) with `output_skip`,
        else (batch, n_L).

    Example:

    >>> cells = [kerasrnn.ElmanCell(8), kerasrnn.LSTMCell(8)]
    >>> rnn = keras.layers.RNN(SkipStackedCells(cells))
    >>> tuple(rnn(np.zeros((2, 10, 3), "float32")).shape)
    (2, 16)
    """

    def __init__(
        self,
        cells: Sequence[keras.layers.Layer],
        input_skip: bool = True,
        output_skip: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(cells, (list, tuple)) or not cells:
            raise ValueError(
                "Argument `cells` must be a non-empty list of recurrent "
                f"cells. Received: cells={cells!r}"
            )
        for cell in cells:
            if not isinstance(cell, keras.layers.Layer) or not hasattr(
                cell, "state_size"
            ) or getattr(cell, "output_size", None) is None:
                raise ValueError(
                    "Argument `cells` must hold recurrent cells (Keras "
                    "layers with `state_size` and `output_size`). "
                    f"Received: {cell!r}"
                )
            rates = (getattr(cell, "dropout", 0.0),
                     getattr(cell, "recurrent_dropout", 0.0))
            if any(rates):
                raise ValueError(
                    "Argument `cells` must hold cells without dropout "
                    "(keras.layers.RNN draws masks only for its own cell). "
                    f"Received: {cell.name} with dropout={rates[0]}, "
                    f"recurrent_dropout={rates[1]}"
                )
        self.cells = list(cells)
        self.input_skip = check_bool("input_skip", input_skip)
        self.output_skip = check_bool("output_skip", output_skip)
        self.state_counts = [len(_size_list(c.state_size)) for c in cells]
        self.state_size = [
            size for c in self.cells for size in _size_list(c.state_size)
        ]
        outputs = [int(c.output_size) for c in self.cells]
        self.output_size = sum(outputs) if self.output_skip else outputs[-1]

    def layer_input_dims(self, input_dim: int) -> list[int]:
        """Input size d_l of every layer for an input of size d."""
        dims = [input_dim]
        for cell in self.cells[:-1]:
            below = int(cell.output_size)
            dims.append(input_dim + below if self.input_skip else below)
        return dims

    def build(self, input_shape: ShapeLike) -> None:
        """Build every cell for its own input size.

        Args:
            input_shape: `(batch, d)`, the shape of one time step.
        """
        batch, input_dim = tuple(input_shape)[0], input_shape[-1]
        if len(input_shape) != 2 or input_dim is None:
            raise ValueError(
                "SkipStackedCells steps over inputs of shape (batch, features) "
                "with a known number of features. Received a step input shape "
                f"of {tuple(input_shape)}."
            )
        for cell, dim in zip(self.cells, self.layer_input_dims(input_dim)):
            if not cell.built:
                cell.build((batch, dim))
        super().build(input_shape)

    def call(
        self, inputs: TensorLike, states: list[TensorLike], training: bool = False
    ) -> tuple[TensorLike, list[TensorLike]]:
        """One step of every layer, bottom to top (the equations above).

        Args:
            inputs: `(batch, d)`, x_t.
            states: The flat list of the cells' states, layer 1 first.
            training: Passed to every cell.

        Returns:
            `(y_t, new_states)`, new_states shaped like `states`.
        """
        states = list(states)
        new_states: list[TensorLike] = []
        outputs: list[TensorLike] = []
        below = None
        for cell, count in zip(self.cells, self.state_counts):
            own, states = states[:count], states[count:]
            if below is None:
                layer_input = inputs
            elif self.input_skip:
                layer_input = ops.concatenate([inputs, below], axis=-1)
            else:
                layer_input = below
            below, cell_states = cell(layer_input, own, training=training)
            new_states.extend(
                cell_states
                if isinstance(cell_states, (list, tuple))
                else [cell_states]
            )
            outputs.append(below)
        output = (
            ops.concatenate(outputs, axis=-1) if self.output_skip else below
        )
        return output, new_states

    def get_initial_state(self, batch_size: int | None = None) -> list[TensorLike]:
        """Every cell's initial states, flattened in layer order."""
        initial: list[TensorLike] = []
        for cell in self.cells:
            if hasattr(cell, "get_initial_state"):
                states = cell.get_initial_state(batch_size=batch_size)
                initial.extend(
                    states if isinstance(states, (list, tuple)) else [states]
                )
            else:
                initial.extend(
                    ops.zeros((batch_size, size), dtype=self.compute_dtype)
                    for size in _size_list(cell.state_size)
                )
        return initial

    def param_count(self, input_dim: int) -> int:
        """Σ_l cell_l.param_count(d_l), with d_l from `layer_input_dims`."""
        input_dim = check_positive_int("input_dim", input_dim)
        total = 0
        for cell, dim in zip(self.cells, self.layer_input_dims(input_dim)):
            if not hasattr(cell, "param_count"):
                raise ValueError(
                    "Every cell must have a closed-form `param_count` "
                    f"(the kerasrnn cells do). Received: {cell.name} "
                    f"({type(cell).__name__})"
                )
            total += cell.param_count(dim)
        return total

    def get_config(self) -> Config:
        """The cells serialized, and `input_skip`, `output_skip`."""
        config = {
            "cells": [keras.saving.serialize_keras_object(c)
                      for c in self.cells],
            "input_skip": self.input_skip,
            "output_skip": self.output_skip,
        }
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config: Config) -> SkipStackedCells:
        """Rebuild the stack, deserializing its cells, from `get_config`."""
        config = dict(config)
        cells = [keras.saving.deserialize_keras_object(c)
                 for c in config.pop("cells")]
        return cls(cells, **config)
