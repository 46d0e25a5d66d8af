"""The recurrent layers the shared options describe.

`--cell`, `--units`, `--layers`, `--bidirectional`, `--cell-dropout` and
`--dropout` arrive here from the command line and leave as Keras layers: a
kerasrnn cell (with its input dropout) stepped by `keras.layers.RNN`
(optionally in `keras.layers.Bidirectional`, eq:rnn-bidir), stacked, with
dropout after each layer.

A padding mask is handed to every layer of a stack as an argument: Keras
3.16's recurrent layers no longer pass their input's mask on to the next
layer, which would otherwise read padded steps (`kerasrnn.explicit_masks`).
"""

import keras

import kerasrnn
from kerasrnn.explicit_masks import takes_explicit_mask
from kerasrnn.types import TensorLike
from kerasrnn_pipelines.options import CELLS, RecurrentStackConfig, RunConfig


def make_cell(cell: str, units: int, dropout: float, seed: int) -> keras.Layer:
    """The kerasrnn cell `--cell` names, with its input dropout.

    Args:
        cell: A `--cell` name (a key of `CELLS`).
        units: Hidden units n of the cell.
        dropout: `--cell-dropout`, the fraction of each step's input units
            dropped.
        seed: `--seed`, of the dropout masks.
    """
    cell_class = getattr(kerasrnn, CELLS[cell])
    return cell_class(units, dropout=dropout, seed=seed)


def recurrent_layer(
    config: RunConfig,
    units: int,
    return_sequences: bool,
    stateful: bool = False,
    name: str | None = None,
) -> keras.Layer:
    """One `keras.layers.RNN` over `config.cell`, bidirectional if asked.

    Args:
        config: The resolved config (`cell`, `cell_dropout`,
            `bidirectional`, `seed`).
        units: Hidden units n of the cell (each direction).
        return_sequences: Output `(batch, time, n)` instead of `(batch, n)`.
        stateful: Carry the final state into the next batch (truncated
            BPTT); the model then needs a fixed batch size.
        name: Layer name.

    Returns:
        A layer mapping `(batch, time, d)` to `(batch, time, n')` or
        `(batch, n')`, with n' = n, or 2n when bidirectional, which takes a
        padding mask as `mask=` (`takes_explicit_mask`).
    """
    layer = keras.layers.RNN(
        make_cell(config.cell, units, config.cell_dropout, config.seed),
        return_sequences=return_sequences,
        stateful=stateful,
        name=None if config.bidirectional else name,
    )
    if config.bidirectional:
        layer = keras.layers.Bidirectional(layer, name=name)
    return takes_explicit_mask(layer)


def recurrent_stack(
    inputs: TensorLike,
    config: RecurrentStackConfig,
    return_sequences: bool,
    stateful: bool = False,
    mask: TensorLike | None = None,
) -> TensorLike:
    """`config.layers` recurrent layers of `config.units`, with dropout.

    Every layer but the last returns sequences (the next one reads them);
    the last returns what `return_sequences` asks. `Dropout(config.dropout)`
    follows each layer when the rate is positive. Every layer is called
    with `mask`, so none reads a padded step, whichever Keras runs it.

    Args:
        inputs: Keras tensor `(batch, time, d)`.
        config: The resolved config.
        return_sequences: What the last layer returns.
        stateful: See `recurrent_layer`.
        mask: Keras tensor `(batch, time)` bool, True at the steps to read
            (`Embedding.compute_mask` of the ids), or None for none masked.

    Returns:
        Keras tensor `(batch, time, n')` or `(batch, n')`.
    """
    outputs = inputs
    for index in range(config.layers):
        last = index == config.layers - 1
        outputs = recurrent_layer(
            config,
            config.units,
            return_sequences=return_sequences or not last,
            stateful=stateful,
            name=f"recurrent_{index + 1}",
        )(outputs, mask=mask)
        if config.dropout > 0:
            outputs = keras.layers.Dropout(
                config.dropout, seed=config.seed, name=f"dropout_{index + 1}"
            )(outputs)
    return outputs
