"""Keras's recurrent layers stepped through loops that LiteRT runs.

`traceable_for_litert(model, steps)` makes its layers' calls, while a
LiteRT export traces them, step their cells through `litert_inner_loop`
instead of Keras's own time loop, with their dropout off:

- Keras's `WHILE` loop keeps its per-step inputs and outputs in tensor
  lists, which LiteRT's builtins hold only with a static element shape, so a
  resizable batch dimension cannot pass, and its unrolled loop misplaces the
  zeros of masked steps when it runs backwards; the loops here do neither.
- A fixed number of steps unrolls the time loop: no `WHILE` at all, which
  runs faster than the loop (the documentation's Design notes give the
  figures).
"""

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import keras
import tensorflow as tf
from keras import tree

from kerasrnn.export.paired_lstm import pairable, paired_inner_loops
from kerasrnn.keras_internals import (
    DropoutRNNCell,
    call_has_training_arg,
    replaced_inner_loops,
    sublayers,
)
from kerasrnn.tensorflow_internals import dynamic_update_slice
from kerasrnn.types import TensorLike

__all__ = [
    "dropout_off",
    "litert_inner_loop",
    "litert_stand_ins",
    "looped_steps",
    "recurrent_layers",
    "traceable_for_litert",
    "unrolled_steps",
]

#: One masked cell step, `(inputs, states, keep, previous) -> (output,
#: states)`: `keep` the step's (batch, 1) mask or None, `previous` the
#: previous output or None (zeros).
Step: TypeAlias = Callable[..., tuple[TensorLike, tuple[TensorLike, ...]]]


def recurrent_layers(model: keras.Model) -> list[keras.layers.RNN]:
    """Every `keras.layers.RNN` inside `model`, `Bidirectional`'s included."""
    return [layer for layer in sublayers(model) if isinstance(layer, keras.layers.RNN)]


def litert_inner_loop(layer: keras.layers.RNN, steps: int | None) -> Callable[..., Any]:
    """A stand-in for `layer.inner_loop` that LiteRT runs at any batch size.

    `keras.layers.RNN.inner_loop` steps the cell through Keras's time loop;
    this steps the same cell, with the same arguments and the same masking
    (a masked step keeps the previous states and outputs the previous
    output, or zeros with `zero_output_for_mask`), through one of two loops
    LiteRT's builtins hold with a dynamic batch dimension:

    - `steps` given: unrolled, step t read with `UNPACK`, outputs stacked;
    - `steps` None: a `WHILE` loop reading step t with `GATHER` and writing
      it into row t of a (time, batch, n) tensor (`DYNAMIC_UPDATE_SLICE`).

    Keras's own loops do not serve. Its `WHILE` loop keeps the steps in
    tensor lists, which LiteRT lowers to builtins only when the element
    shape, batch included, is static. Its unrolled loop (Keras 3.15) zeroes
    the outputs of masked steps with the mask in forward order when
    `go_backwards` has reversed the outputs, so a `Bidirectional` layer
    over padded sequences returns zeros at the wrong steps.

    Args:
        layer: A `keras.layers.RNN` (LSTM, GRU and SimpleRNN included).
        steps: The fixed number of time steps, or None.

    Returns:
        A function `(sequences, initial_state, mask, training) ->
        (last_output, outputs, states)` like `keras.layers.RNN.inner_loop`.
    """

    def inner_loop(
        sequences: Any, initial_state: Any, mask: Any, training: bool = False
    ) -> tuple[TensorLike, TensorLike, Any]:
        if tree.is_nested(mask):
            mask = mask[0]
        if not tree.is_nested(initial_state):
            initial_state = [initial_state]
        cell_kwargs = {}
        if call_has_training_arg(layer.cell):
            cell_kwargs["training"] = training

        def step(
            inputs: Any, states: tuple[TensorLike, ...], keep: Any, previous: Any
        ) -> tuple[TensorLike, tuple[TensorLike, ...]]:
            """One masked cell step on flat states; `previous` None: zeros."""
            output, new_states = layer.cell(
                inputs,
                tree.pack_sequence_as(initial_state, list(states)),
                **cell_kwargs,
            )
            new_states = tuple(tree.flatten(new_states))
            if keep is None:
                return output, new_states
            if previous is None or layer.zero_output_for_mask:
                previous = tf.zeros_like(output)
            output = tf.where(keep, output, previous)
            new_states = tuple(tf.where(keep, new, old) for new, old in zip(new_states, states))
            return output, new_states

        def time_first(x: TensorLike) -> TensorLike:
            return tf.transpose(x, [1, 0, *range(2, len(x.shape))])

        sequences = tree.map_structure(time_first, sequences)
        if mask is not None:
            # (time, batch, 1), broadcast over the units by `tf.where`;
            # EXPAND_DIMS has a bool kernel, a bool STRIDED_SLICE has not.
            mask = tf.expand_dims(time_first(tf.cast(mask, tf.bool)), -1)
        if layer.go_backwards:
            sequences = tree.map_structure(lambda x: tf.reverse(x, [0]), sequences)
            if mask is not None:
                mask = tf.reverse(mask, [0])
        flat_states = tuple(tree.flatten(initial_state))
        if steps is None and not _packable(flat_states):
            raise ValueError(
                f"Layer {layer.name!r} has states "
                f"{[(tuple(s.shape), s.dtype.name) for s in flat_states]}; a "
                "looped export (sequence_length=None) carries states of shape "
                "(batch, size) and one dtype. Pass a sequence_length to unroll "
                "the layer instead."
            )
        loop = unrolled_steps if steps is not None else looped_steps
        last, outputs, states = loop(
            step,
            sequences,
            mask,
            flat_states,
            layer.return_sequences,
        )
        outputs = time_first(outputs) if outputs is not None else tf.expand_dims(last, 1)
        return last, outputs, tree.pack_sequence_as(initial_state, list(states))

    return inner_loop


def _packable(states: tuple[TensorLike, ...]) -> bool:
    """Whether `looped_steps` can carry `states` as one concatenated tensor."""
    return all(len(state.shape) == 2 and state.dtype == states[0].dtype for state in states)


def unrolled_steps(
    step: Step, sequences: Any, mask: Any, states: tuple[TensorLike, ...], keep_all: bool
) -> tuple[TensorLike, TensorLike | None, tuple[TensorLike, ...]]:
    """One `step` per time step of a fixed length, no loop op.

    Args:
        step: `(inputs, states, keep, previous) -> (output, states)`.
        sequences: Time-major inputs (nested as the layer takes them).
        mask: `(time, batch, 1)` bool, or None.
        states: Flat tuple of the initial states.
        keep_all: Whether to return every step's output.

    Returns:
        `(last_output, outputs (time, batch, n) or None, states)`.
    """
    flat = [tf.unstack(x) for x in tree.flatten(sequences)]
    steps = len(flat[0])
    keeps = tf.unstack(mask) if mask is not None else [None] * steps
    outputs, output = [], None
    for time in range(steps):
        inputs = tree.pack_sequence_as(sequences, [x[time] for x in flat])
        output, states = step(inputs, states, keeps[time], output)
        outputs.append(output)
    return output, tf.stack(outputs) if keep_all else None, states


def looped_steps(
    step: Step, sequences: Any, mask: Any, states: tuple[TensorLike, ...], keep_all: bool
) -> tuple[TensorLike, TensorLike | None, tuple[TensorLike, ...]]:
    """`step` in a `WHILE` loop over a dynamic number of time steps.

    Arguments and result as `unrolled_steps`. Step t's inputs are read with
    `GATHER`; with `keep_all` its output is written into row t of a
    (time, batch, n) tensor by XLA's dynamic-update-slice op, which
    TensorFlow runs only under XLA but LiteRT has as the builtin
    `DYNAMIC_UPDATE_SLICE` (the traced graph is only ever converted). Its
    alternatives measured worse: `tf.tensor_scatter_nd_update` becomes a
    whole-tensor `SCATTER_ND` and `SELECT` per step, slower at every length,
    and a loop variable growing by concatenation converts but fails when
    the interpreter runs it.
    """
    flat = tree.flatten(sequences)
    steps = tf.shape(flat[0])[0]

    def inputs_at(time: TensorLike) -> Any:
        return tree.pack_sequence_as(sequences, [tf.gather(x, time) for x in flat])

    # Traced once for the output's shape and dtype, as Keras's loop does;
    # the converter prunes it.
    first, _ = step(inputs_at(0), states, None, None)
    history = tf.zeros(
        tf.concat([[steps if keep_all else 0], tf.shape(first)], 0),
        first.dtype,
    )

    # The states travel as one (batch, Σ sizes) tensor: a cell that passes
    # a state through unchanged (TemporalSkipCell's h_{t-1} becomes its
    # h_{t-2}) would otherwise make one body output the same tensor as
    # another body input, and LiteRT's WHILE copies the outputs back one by
    # one, so the pass-through would read the value already overwritten.
    sizes = [state.shape[-1] for state in states]

    def body(
        time: TensorLike, previous: TensorLike, history: TensorLike, packed: TensorLike
    ) -> tuple[TensorLike, ...]:
        states = tuple(tf.split(packed, sizes, axis=-1))
        keep = tf.gather(mask, time) if mask is not None else None
        output, states = step(inputs_at(time), states, keep, previous)
        if keep_all:
            start = tf.stack([time, *[0] * len(first.shape)])
            history = dynamic_update_slice(history, output[None], start)
        return (time + 1, output, history, tf.concat(states, axis=-1))

    packed = tf.concat(states, axis=-1)
    invariants = (
        tf.TensorShape([]),
        first.shape,
        tf.TensorShape([None]).concatenate(first.shape),
        packed.shape,
    )
    _, last, history, packed = tf.while_loop(
        lambda time, *_: time < steps,
        body,
        (tf.constant(0), tf.zeros_like(first), history, packed),
        shape_invariants=invariants,
    )
    states = tf.split(packed, sizes, axis=-1)
    return last, history if keep_all else None, tuple(states)


def litert_stand_ins(
    model: keras.layers.Layer, steps: int | None
) -> list[tuple[keras.layers.RNN, Callable[..., Any]]]:
    """`(layer, stand-in for layer.inner_loop)` for every recurrent layer in
    `model`: `litert_inner_loop`'s, except that a `Bidirectional` LSTM
    layer's two directions are stepped together where they can be
    (`kerasrnn.export.paired_lstm`: one step of both costs 13 operators,
    one of each about 17)."""
    loops = {
        id(layer): (layer, litert_inner_loop(layer, steps)) for layer in recurrent_layers(model)
    }
    for wrapper in sublayers(model):
        if isinstance(wrapper, keras.layers.Bidirectional) and pairable(wrapper):
            fallbacks = (
                loops[id(wrapper.forward_layer)][1],
                loops[id(wrapper.backward_layer)][1],
            )
            for layer, loop in paired_inner_loops(wrapper, fallbacks):
                loops[id(layer)] = (layer, loop)
    return list(loops.values())


@contextlib.contextmanager
def traceable_for_litert(model: keras.layers.Layer, steps: int | None) -> Iterator[None]:
    """Step the recurrent layers of `model` through `litert_stand_ins`' loops
    with their dropout off, then restore both.

    `keras.layers.RNN` draws its cell's dropout masks before its loop even
    when `training` is False (they go unused), and drawing advances the
    cell's seed generator: an assignment to a variable, which the freezing
    of variables into constants cannot hold (TensorFlow's graph import
    refuses it). Dropout changes nothing at inference, so the trace sees
    rates of 0 and draws nothing.

    The layers are the caller's: the stand-in is removed and the rates are
    put back when the trace ends, however it ends.
    """
    with dropout_off(recurrent_layers(model)), replaced_inner_loops(litert_stand_ins(model, steps)):
        yield


@contextlib.contextmanager
def dropout_off(recurrent: list[keras.layers.RNN]) -> Iterator[None]:
    """The recurrent layers' cells at dropout rates of 0, then restored
    (see `traceable_for_litert` for why)."""
    cells = [
        cell
        for layer in recurrent
        for cell in sublayers(layer)
        if isinstance(cell, DropoutRNNCell)
    ]
    rates = [(cell, cell.dropout, cell.recurrent_dropout) for cell in cells]
    try:
        for cell in cells:
            cell.dropout = cell.recurrent_dropout = 0.0
        yield
    finally:
        for cell, dropout, recurrent_dropout in rates:
            cell.dropout, cell.recurrent_dropout = dropout, recurrent_dropout
