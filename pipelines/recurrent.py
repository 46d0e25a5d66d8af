"""The recurrent layers the shared options describe.

`--cell`, `--units`, `--layers`, `--bidirectional`, `--cell-dropout` and
`--dropout` arrive here from the command line and leave as Keras layers: a
kerasrnn cell (with its input dropout) stepped by `keras.layers.RNN`
(optionally in `keras.layers.Bidirectional`, eq:rnn-bidir), stacked, with
dropout after each layer.
"""

import keras

import kerasrnn
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
        `(batch, n')`, with n' = n, or 2n when bidirectional.
    """
    layer = keras.layers.RNN(
        make_cell(config.cell, units, config.cell_dropout, config.seed),
        return_sequences=return_sequences,
        stateful=stateful,
        name=None if config.bidirectional else name,
    )
    if config.bidirectional:
        return keras.layers.Bidirectional(layer, name=name)
    return layer


def recurrent_stack(
    inputs: TensorLike,
    config: RecurrentStackConfig,
    return_sequences: bool,
    stateful: bool = False,
) -> TensorLike:
    """`config.layers` recurrent layers of `config.units`, with dropout.

    Every layer but the last returns sequences (the next one reads them);
    the last returns what `return_sequences` asks. `Dropout(config.dropout)`
    follows each layer when the rate is positive.

    Args:
        inputs: Keras tensor `(batch, time, d)`.
        config: The resolved config.
        return_sequences: What the last layer returns.
        stateful: See `recurrent_layer`.

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
        )(outputs)
        if config.dropout > 0:
            outputs = keras.layers.Dropout(
                config.dropout, seed=config.seed, name=f"dropout_{index + 1}"
            )(outputs)
    return outputs
