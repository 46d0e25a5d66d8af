"""Conversion between kerasrnn cells and Keras's built-in recurrent layers.

Keras's SimpleRNN and LSTM compute the same functions as `ElmanCell` and
`LSTMCell` with the same weight layout, so their weights copy across as they
are. Keras's GRU interpolates the other way round,
`h = z_k ⊙ h_{t-1} + (1 − z_k) ⊙ h̃`, where the chapter writes
`h = (1 − z) ⊙ h_{t-1} + z ⊙ h̃` (`eq:rnn-gru-h`). Because
1 − σ(a) = σ(−a) for the logistic and the hard sigmoid, negating the z block
of the kernel, the recurrent kernel and the bias turns one into the other.

`to_keras` is how a model trained with kerasrnn cells reaches Keras's fused
(cuDNN-backed on GPU) layers; `from_keras` is how weights trained with Keras
come to the textbook cells.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np

from kerasrnn.cells import ElmanCell, GRUCell, LeakyCell, LSTMCell
from kerasrnn.cells.base import RecurrentCell
from kerasrnn.cells.lstm import LSTMBias

# Options copied one-to-one between a Keras cell and ours.
_SHARED_CELL_ARGS = (
    "units",
    "activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "dropout",
    "recurrent_dropout",
    "seed",
)
_GATED_ARGS = ("recurrent_activation",)
# Options of keras.layers.RNN that a converted layer keeps.
_LAYER_ARGS = (
    "return_sequences",
    "return_state",
    "go_backwards",
    "stateful",
    "unroll",
)
# The Keras cells with a kerasrnn counterpart.
_KERAS_CELLS = (keras.layers.SimpleRNNCell, keras.layers.LSTMCell, keras.layers.GRUCell)
# Activations σ with 1 − σ(a) = σ(−a), for which the GRU's z block negates.
_SYMMETRIC_GATES = ("sigmoid", "hard_sigmoid")


def _shared_args(cell: keras.layers.Layer, names: Sequence[str]) -> dict[str, Any]:
    config = cell.get_config()
    return {name: config[name] for name in names}


def _require_built(cell: keras.layers.Layer) -> None:
    if not cell.built:
        raise ValueError(
            f"{type(cell).__name__} '{cell.name}' has no weights to convert "
            "yet: call it (or the model around it) on a batch first."
        )


def _negate_z_block(
    kernel: np.ndarray, recurrent_kernel: np.ndarray, bias: np.ndarray | None, units: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Weights with the update-gate block (the first n columns) negated."""
    flip = np.ones(3 * units, dtype=kernel.dtype)
    flip[:units] = -1.0
    return (
        kernel * flip,
        recurrent_kernel * flip,
        None if bias is None else bias * flip,
    )


def _check_gru_gate(cell: keras.layers.Layer) -> None:
    name = keras.activations.serialize(cell.recurrent_activation)
    if name not in _SYMMETRIC_GATES:
        raise ValueError(
            "A GRU converts between the Keras and the textbook update "
            "convention only when 1 − σ(a) = σ(−a); "
            f"recurrent_activation must be one of {_SYMMETRIC_GATES}. "
            f"Received: recurrent_activation={name!r}"
        )


def _weights(cell: keras.layers.Layer) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    bias = None if cell.bias is None else np.asarray(cell.bias)
    return np.asarray(cell.kernel), np.asarray(cell.recurrent_kernel), bias


def _assign(
    cell: keras.layers.Layer,
    kernel: np.ndarray,
    recurrent_kernel: np.ndarray,
    bias: np.ndarray | None,
) -> None:
    cell.kernel.assign(kernel)
    cell.recurrent_kernel.assign(recurrent_kernel)
    if bias is not None:
        cell.bias.assign(bias)


def _forget_bias_from_keras(cell: keras.layers.LSTMCell) -> dict[str, Any]:
    """`forget_bias` and `bias_initializer` of our LSTM for Keras's `cell`.

    Keras's `unit_forget_bias=True` *sets* the forget block to ones, drawing
    the other blocks from `bias_initializer`; ours *adds* `forget_bias` to a
    bias drawn whole. Zeros plus one is ones; for any other initializer the
    Keras rule travels inside an `LSTMBias`.
    """
    initializer = cell.bias_initializer
    if not cell.unit_forget_bias:
        return {"forget_bias": 0.0}
    if isinstance(initializer, keras.initializers.Zeros):
        return {"forget_bias": 1.0}
    return {
        "forget_bias": 0.0,
        "bias_initializer": LSTMBias(initializer, unit_forget_bias=True),
    }


def _forget_bias_to_keras(cell: LSTMCell) -> dict[str, Any]:
    """`unit_forget_bias` and `bias_initializer` of Keras's LSTM for `cell`.

    Plain Keras options where they say the same (no forget bias; a forget
    bias of 1 on zeros), so the layer reloads without kerasrnn; an
    `LSTMBias` otherwise.
    """
    initializer = cell.bias_initializer
    if cell.forget_bias == 0.0:
        return {"unit_forget_bias": False}
    if cell.forget_bias == 1.0 and isinstance(
        initializer, keras.initializers.Zeros
    ):
        return {"unit_forget_bias": True}
    return {
        "unit_forget_bias": False,
        "bias_initializer": LSTMBias(initializer, cell.forget_bias),
    }


def _cell_from_keras(cell: keras.layers.Layer) -> RecurrentCell:
    if not isinstance(cell, _KERAS_CELLS):
        raise ValueError(
            "Argument `layer_or_cell` must be a Keras SimpleRNN, LSTM or GRU "
            "layer or cell. "
            f"Received: layer_or_cell={cell!r}"
        )
    _require_built(cell)
    kernel, recurrent_kernel, bias = _weights(cell)
    ours: RecurrentCell
    if isinstance(cell, keras.layers.SimpleRNNCell):
        ours = ElmanCell(**_shared_args(cell, _SHARED_CELL_ARGS))
    elif isinstance(cell, keras.layers.LSTMCell):
        ours = LSTMCell(
            **{
                **_shared_args(cell, _SHARED_CELL_ARGS + _GATED_ARGS),
                **_forget_bias_from_keras(cell),
            }
        )
    else:
        _check_gru_gate(cell)
        ours = GRUCell(
            **_shared_args(cell, _SHARED_CELL_ARGS + _GATED_ARGS),
            reset_after=cell.reset_after,
        )
        kernel, recurrent_kernel, bias = _negate_z_block(
            kernel, recurrent_kernel, bias, cell.units
        )
    ours.build((None, kernel.shape[0]))
    _assign(ours, kernel, recurrent_kernel, bias)
    return ours


def _cell_to_keras(cell: keras.layers.Layer) -> keras.layers.Layer:
    if not isinstance(cell, (ElmanCell, LeakyCell, LSTMCell, GRUCell)):
        raise ValueError(
            "Argument `layer_or_cell` must be a kerasrnn ElmanCell, LeakyCell, "
            "LSTMCell or GRUCell, or a keras.layers.RNN wrapping one. "
            f"Received: layer_or_cell={cell!r}"
        )
    _require_built(cell)
    kernel, recurrent_kernel, bias = _weights(cell)
    if isinstance(cell, LeakyCell):
        if cell.learn_alpha or cell.alpha != 1.0:
            raise ValueError(
                "Keras has no leaky unit; only a LeakyCell with alpha=1 and "
                "learn_alpha=False (exactly the Elman cell) converts. "
                f"Received: alpha={cell.alpha}, learn_alpha={cell.learn_alpha}"
            )
        theirs = keras.layers.SimpleRNNCell(
            **_shared_args(cell, _SHARED_CELL_ARGS)
        )
    elif isinstance(cell, ElmanCell):
        theirs = keras.layers.SimpleRNNCell(
            **_shared_args(cell, _SHARED_CELL_ARGS)
        )
    elif isinstance(cell, LSTMCell):
        theirs = keras.layers.LSTMCell(
            **{
                **_shared_args(cell, _SHARED_CELL_ARGS + _GATED_ARGS),
                **_forget_bias_to_keras(cell),
            }
        )
    else:
        _check_gru_gate(cell)
        theirs = keras.layers.GRUCell(
            **_shared_args(cell, _SHARED_CELL_ARGS + _GATED_ARGS),
            reset_after=cell.reset_after,
        )
        kernel, recurrent_kernel, bias = _negate_z_block(
            kernel, recurrent_kernel, bias, cell.units
        )
    theirs.build((None, kernel.shape[0]))
    _assign(theirs, kernel, recurrent_kernel, bias)
    return theirs


def _convert_bidirectional(
    layer: keras.layers.Bidirectional,
    convert: Callable[[keras.layers.Layer], keras.layers.Layer],
) -> keras.layers.Bidirectional:
    """A `Bidirectional` whose two directions are `convert`ed, weights kept.

    Keras's `Bidirectional` rebuilds its forward layer from config, so the
    weights are copied in after construction.
    """
    forward = convert(layer.forward_layer)
    backward = convert(layer.backward_layer)
    converted = keras.layers.Bidirectional(
        forward, backward_layer=backward, merge_mode=layer.merge_mode
    )
    d = forward.cell.kernel.shape[0]
    batch = layer.forward_layer.states[0].shape[0] if layer.stateful else None
    converted.build((batch, None, d))
    converted.forward_layer.set_weights(forward.get_weights())
    converted.backward_layer.set_weights(backward.get_weights())
    return converted


def from_keras(layer_or_cell: keras.layers.Layer) -> keras.layers.Layer:
    """A kerasrnn equivalent of a built Keras SimpleRNN, LSTM or GRU.

    Args:
        layer_or_cell: A built `keras.layers.SimpleRNN`, `LSTM` or `GRU`
            layer (or a `keras.layers.RNN` wrapping one of their cells), or a
            built `SimpleRNNCell`, `LSTMCell` or `GRUCell`. A GRU may use
            either `reset_after` form.

    Returns:
        For a cell, the matching `ElmanCell`, `LSTMCell` or `GRUCell`,
        built, with the weights copied (the GRU's z block negated). For a
        layer, a `keras.layers.RNN` around that cell with the same
        `return_sequences`, `return_state`, `go_backwards`, `stateful` and
        `unroll`. Either computes the same function as its source. A
        `keras.layers.Bidirectional` comes back as a `Bidirectional` of
        converted layers with the same `merge_mode`.
    """
    if isinstance(layer_or_cell, keras.layers.Bidirectional):
        return _convert_bidirectional(layer_or_cell, from_keras)
    if isinstance(layer_or_cell, keras.layers.RNN):
        layer = layer_or_cell
        return keras.layers.RNN(
            _cell_from_keras(layer.cell),
            **{name: getattr(layer, name) for name in _LAYER_ARGS},
        )
    return _cell_from_keras(layer_or_cell)


def to_keras(layer_or_cell: keras.layers.Layer) -> keras.layers.Layer:
    """The Keras built-in that computes the same function as a kerasrnn cell.

    Args:
        layer_or_cell: A built kerasrnn `ElmanCell`, `LSTMCell`, `GRUCell`
            or `LeakyCell` (alpha = 1 only), or a built `keras.layers.RNN`
            wrapping one.

    Returns:
        For a cell, Keras's `SimpleRNNCell`, `LSTMCell` or `GRUCell` with
        the weights copied. For a layer, Keras's `SimpleRNN`, `LSTM` or `GRU`
        layer (the fused, cuDNN-capable implementations) with the same
        layer options, built and holding the weights. A `Bidirectional`
        around such a layer comes back as a `Bidirectional` of Keras layers.
    """
    if isinstance(layer_or_cell, keras.layers.Bidirectional):
        return _convert_bidirectional(layer_or_cell, to_keras)
    if not isinstance(layer_or_cell, keras.layers.RNN):
        return _cell_to_keras(layer_or_cell)
    layer = layer_or_cell
    if not isinstance(layer.cell, RecurrentCell):
        raise ValueError(
            "Argument `layer_or_cell` must wrap a kerasrnn cell. "
            f"Received a keras.layers.RNN around {layer.cell!r}"
        )
    cell = _cell_to_keras(layer.cell)
    layer_class = {
        keras.layers.SimpleRNNCell: keras.layers.SimpleRNN,
        keras.layers.LSTMCell: keras.layers.LSTM,
        keras.layers.GRUCell: keras.layers.GRU,
    }[type(cell)]
    options = {name: getattr(layer, name) for name in _LAYER_ARGS}
    config = cell.get_config()
    for name in ("name", "trainable", "dtype"):
        config.pop(name, None)
    converted = layer_class(**config, **options)
    d = cell.kernel.shape[0]
    batch = layer.states[0].shape[0] if layer.stateful else None
    converted.build((batch, None, d))
    _assign(converted.cell, *_weights(cell))
    return converted
