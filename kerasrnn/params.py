"""Parameter accounting: closed-form counts and a lecture-style breakdown.

`param_count(cell, d)` is the closed form of the lecture notes' master
formula, generalised to gated cells: a cell with g fused gate blocks of n
units reading d inputs has

    g·n·d  input weights  +  g·n·n  recurrent weights  +  g·n  biases
    = g·n(d + n + 1)

(Elman/leaky g = 1, GRU g = 3, LSTM g = 4; a GRU with `reset_after` has a
second bias row, g·n(d + n + 2); a leaky cell with a learned rate has n
more). `explain_params(model)` prints, for every layer, the same breakdown
the lecture notes write by hand, and checks each total against Keras's own
`count_params()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras

from kerasrnn.cells.base import RecurrentCell
from kerasrnn.cells.leaky import LeakyCell
from kerasrnn.validation import check_positive_int

# Keras's built-in cells and their number of fused gate blocks.
_KERAS_GATES = {
    keras.layers.SimpleRNNCell: 1,
    keras.layers.GRUCell: 3,
    keras.layers.LSTMCell: 4,
}


def _gate_count(cell: keras.layers.Layer) -> int:
    if isinstance(cell, RecurrentCell):
        return cell.gate_count
    for cls, gates in _KERAS_GATES.items():
        if isinstance(cell, cls):
            return gates
    raise ValueError(
        "Argument `cell` must be a kerasrnn cell or one of Keras's "
        "SimpleRNNCell, LSTMCell, GRUCell. "
        f"Received: cell={cell!r}"
    )


# The weights every cell has (and the leaky cell's rate), named in the
# lecture notes' terms by `_cell_parts`.
_FUSED_WEIGHTS = ("kernel", "recurrent_kernel", "bias", "alpha")


def _has_bias_row_pair(cell: keras.layers.Layer) -> bool:
    return bool(getattr(cell, "reset_after", False) and cell.use_bias)


def param_count(cell: keras.layers.Layer, input_dim: int) -> int:
    """Closed-form number of trainable parameters of `cell` on d inputs.

    Args:
        cell: A kerasrnn cell, or Keras's `SimpleRNNCell`, `LSTMCell` or
            `GRUCell`.
        input_dim: d, the number of input features per step.

    Returns:
        An int: n(d + n + 1) for Elman/leaky (+ n with `learn_alpha`),
        4n(d + n + 1) for LSTM, 3n(d + n + 1) for GRU and 3n(d + n + 2)
        with `reset_after`; without bias, the `+ 1`/`+ 2` terms drop.

    Example:

    >>> kerasrnn.param_count(kerasrnn.ElmanCell(50), 1)
    2600
    """
    own_count = getattr(cell, "param_count", None)
    if callable(own_count):
        return own_count(input_dim)
    gates = _gate_count(cell)
    input_dim = check_positive_int("input_dim", input_dim)
    n = cell.units
    bias_rows = (2 if _has_bias_row_pair(cell) else 1) if cell.use_bias else 0
    return gates * n * (input_dim + n + bias_rows)


@dataclasses.dataclass
class LayerParams:
    """One layer's breakdown.

    Attributes:
        name: The layer's name.
        description: What the layer is, e.g. `"RNN(LSTMCell), n=64, d=8"`.
        parts: `(label, count)` pairs, e.g. `("input weights 8×256", 2048)`.
        total: The sum of `parts`.
        formula: The closed form that gives `total`, written out.
        count_params: What Keras's `layer.count_params()` says.
    """

    name: str
    description: str
    parts: list[tuple[str, int]]
    total: int
    formula: str
    count_params: int

    @property
    def agrees(self) -> bool:
        """Whether the closed form equals Keras's own count."""
        return self.total == self.count_params


@dataclasses.dataclass
class ParamReport:
    """`explain_params`'s result: one `LayerParams` per layer, and the sum.

    `str(report)` is the text `explain_params` prints.
    """

    layers: list[LayerParams]
    total: int
    count_params: int

    @property
    def agrees(self) -> bool:
        """Whether every layer's closed form, and the sum, equal Keras's counts."""
        return self.total == self.count_params and all(
            layer.agrees for layer in self.layers
        )

    def __str__(self) -> str:
        lines = []
        for index, layer in enumerate(self.layers, start=1):
            lines.append(f"Layer {index}: {layer.name} — {layer.description}")
            for label, count in layer.parts:
                lines.append(f"  • {label} = {count:,}")
            verdict = "agrees" if layer.agrees else "DISAGREES"
            lines.append(
                f"  • Total: {layer.formula} = {layer.total:,} parameters "
                f"(count_params() = {layer.count_params:,}: {verdict})"
            )
        verdict = "agrees" if self.agrees else "DISAGREES"
        lines.append(
            f"Total parameters in network: {self.total:,} "
            f"(model.count_params() = {self.count_params:,}: {verdict})"
        )
        return "\n".join(lines)


def _cell_parts(
    cell: keras.layers.Layer, prefix: str = ""
) -> tuple[list[tuple[str, int]], int, str]:
    """Breakdown of one built recurrent cell: (parts, closed form, text)."""
    d = int(cell.kernel.shape[0])
    n = cell.units
    g = _gate_count(cell)
    gn = f"{g}n" if g > 1 else "n"
    width = f"{g}×{n}" if g > 1 else f"{n}"
    parts = [
        (f"{prefix}input weights d×{gn} = {d}×{width}", d * g * n),
        (f"{prefix}recurrent weights n×{gn} = {n}×{width}", n * g * n),
    ]
    terms = ["d", "n"]
    if cell.use_bias:
        if _has_bias_row_pair(cell):
            parts.append((f"{prefix}biases 2×{gn} = 2×{width}", 2 * g * n))
            terms.append("2")
        else:
            parts.append(
                (f"{prefix}biases {gn}" + (f" = {width}" if g > 1 else ""), g * n)
            )
            terms.append("1")
    formula = f"{gn if g > 1 else 'n'}({' + '.join(terms)})"
    if isinstance(cell, LeakyCell) and cell.learn_alpha:
        parts.append((f"{prefix}leak rates α, n", n))
        formula += " + n"
    # Weights of the deeper cells (skip kernel, transition MLP) by name.
    for weight in cell.weights:
        if weight.name not in _FUSED_WEIGHTS:
            shape = "×".join(str(s) for s in weight.shape)
            parts.append((f"{prefix}{weight.name} {shape}", _size(weight.shape)))
            formula += f" + {weight.name}"
    return parts, param_count(cell, d), formula


def _rnn_parts(
    layer: keras.layers.RNN, prefix: str = ""
) -> tuple[list[tuple[str, int]], int, str]:
    # StackedRNNCells and SkipStackedCells hold their cells in `.cells`.
    cells = getattr(layer.cell, "cells", None) or [layer.cell]
    parts: list[tuple[str, int]] = []
    total = 0
    formulas: list[str] = []
    for depth, cell in enumerate(cells):
        cell_prefix = prefix + (f"cell {depth + 1} " if len(cells) > 1 else "")
        cell_parts, cell_total, formula = _cell_parts(cell, cell_prefix)
        parts += cell_parts
        total += cell_total
        formulas.append(formula)
    return parts, total, " + ".join(formulas)


def _describe_rnn(layer: keras.layers.RNN) -> str:
    cell = layer.cell
    if getattr(cell, "cells", None):
        names = ", ".join(type(c).__name__ for c in cell.cells)
        return f"{type(layer).__name__}({type(cell).__name__}[{names}])"
    d = int(cell.kernel.shape[0])
    return f"{type(layer).__name__}({type(cell).__name__}), n={cell.units}, d={d}"


def _explain_layer(layer: keras.layers.Layer) -> LayerParams:
    name = layer.name
    keras_count = layer.count_params()
    if isinstance(layer, keras.layers.Bidirectional):
        fwd_parts, fwd_total, fwd_formula = _rnn_parts(
            layer.forward_layer, "forward "
        )
        bwd_parts, bwd_total, bwd_formula = _rnn_parts(
            layer.backward_layer, "backward "
        )
        return LayerParams(
            name,
            f"Bidirectional({_describe_rnn(layer.forward_layer)}), "
            f"merge_mode={layer.merge_mode}",
            fwd_parts + bwd_parts,
            fwd_total + bwd_total,
            f"[{fwd_formula}] + [{bwd_formula}]",
            keras_count,
        )
    if isinstance(layer, keras.layers.RNN):
        parts, total, formula = _rnn_parts(layer)
        return LayerParams(
            name, _describe_rnn(layer), parts, total, formula, keras_count
        )
    closed_form = getattr(layer, "closed_form_params", None)
    if closed_form is not None:
        # Layers that know their own closed form (the seq2seq attention).
        description, parts, formula = closed_form()
        return LayerParams(
            name, description, parts, sum(count for _, count in parts),
            formula, keras_count,
        )
    if isinstance(layer, keras.layers.Dense):
        n_in, n_out = (int(s) for s in layer.kernel.shape)
        parts = [(f"weights N_in×N_out = {n_in}×{n_out}", n_in * n_out)]
        formula = "N_in×N_out"
        if layer.use_bias:
            parts.append(("bias N_out", n_out))
            formula = "(N_in + 1)×N_out"
        return LayerParams(
            name,
            f"Dense, N_in={n_in}, N_out={n_out}",
            parts,
            sum(count for _, count in parts),
            formula,
            keras_count,
        )
    if isinstance(layer, keras.layers.Embedding):
        vocab, dim = layer.input_dim, layer.output_dim
        return LayerParams(
            name,
            f"Embedding, vocabulary={vocab}, dim={dim}",
            [(f"embedding table {vocab}×{dim}", vocab * dim)],
            vocab * dim,
            "vocabulary×dim",
            keras_count,
        )
    # Anything else: list its weights as Keras stores them.
    parts = [
        (f"{w.path} {'×'.join(str(s) for s in w.shape)}", _size(w.shape))
        for w in layer.weights
    ]
    return LayerParams(
        name,
        type(layer).__name__,
        parts,
        sum(count for _, count in parts),
        "sum of its weights" if parts else "no weights",
        keras_count,
    )


def _size(shape: Sequence[int]) -> int:
    size = 1
    for s in shape:
        size *= int(s)
    return size


def _leaf_layers(model: keras.Model) -> Iterator[keras.layers.Layer]:
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from _leaf_layers(layer)
        else:
            yield layer


def explain_params(
    model: keras.Model, print_fn: Callable[[str], Any] | None = print
) -> ParamReport:
    """Print and return a per-layer, per-weight parameter breakdown.

    Written in the lecture notes' style (input weights d×n = …, recurrent
    weights n×n = …, biases n, total), for kerasrnn cells and for Keras's
    SimpleRNN, LSTM, GRU, RNN, Bidirectional, Dense and Embedding layers;
    other layers list their weights. Each layer's closed-form total is
    compared with `layer.count_params()`.

    Args:
        model: A built `keras.Model` (call it once or give it an `Input`).
        print_fn: Where the text goes; `None` prints nothing.

    Returns:
        A `ParamReport`; `str(report)` is the printed text.
    """
    if not isinstance(model, keras.Model):
        raise ValueError(
            "Argument `model` must be a keras.Model. "
            f"Received: model={model!r}"
        )
    if not model.built:
        raise ValueError(
            f"Model '{model.name}' is not built, so its weights have no "
            "shapes yet. Give it a keras.Input or call it on a batch first."
        )
    layers = [
        _explain_layer(layer)
        for layer in _leaf_layers(model)
        if layer.weights or isinstance(layer, keras.layers.Dense)
    ]
    report = ParamReport(
        layers,
        sum(layer.total for layer in layers),
        model.count_params(),
    )
    if print_fn is not None:
        print_fn(str(report))
    return report
