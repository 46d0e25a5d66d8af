"""Per-sequence dropout masks for a decoder loop written by hand (the
`tf.while_loop` that steps `Seq2Seq.decode_step`), drawn once and released as
`keras.layers.RNN` does for its own loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import keras

from kerasrnn.keras_internals import DropoutRNNCell
from kerasrnn.types import TensorLike


@contextlib.contextmanager
def sequence_dropout_masks(
    cell: keras.layers.Layer,
    step_input: TensorLike,
    state: TensorLike,
    training: bool | None,
) -> Iterator[None]:
    """Draw `cell`'s per-sequence dropout masks before a hand-written loop.

    keras.layers.RNN draws a cell's input and recurrent masks once per
    sequence, outside its loop, so that the loop body stays stateless; a loop
    written here must do the same, and must release the cached masks even when
    the loop fails, or the next call would reuse stale ones.

    Args:
        cell: The recurrent cell the loop steps.
        step_input: `(batch, input_size)` tensor shaped like one step's input.
        state: `(batch, n)` tensor shaped like the recurrent state.
        training: Whether dropout applies.
    """
    uses_masks = isinstance(cell, DropoutRNNCell)
    if training and uses_masks:
        cell.get_dropout_mask(step_input)
        cell.get_recurrent_dropout_mask(state)
    try:
        yield
    finally:
        if uses_masks:
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()
