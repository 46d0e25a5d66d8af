"""The one place kerasrnn reaches into Keras's private names.

Each name below is Keras's own, without a public equivalent; the `keras`
pin in pyproject.toml covers them, and `tests/kerasrnn/test_keras_internals.py`
checks every one, naming it and the Keras version when a release moves or
changes it.

- `DropoutRNNCell` is the mixin by which `keras.layers.RNN` recognises a
  cell that carries dropout masks: the layer draws the masks before its
  loop starts (so the loop body stays stateless, as `tf.while_loop`,
  `jax.lax.scan` and XLA require) and clears them after. Keras does not
  export it under `keras.layers`, so it is imported from `keras.src`.
- `sublayers` is `Layer._flatten_layers`: every tracked sublayer, nested
  models, wrappers and cells included (a `Layer` method since tf.keras 2).
- `call_has_training_arg` reads `Layer._call_has_training_arg`: whether
  Keras passes `training` to the layer's `call`.
- `additional_loss` is `Trainer._aggregate_additional_loss`: a loss a
  layer adds (`Layer.add_loss`) as `Model.compute_loss` adds it to the
  batch's loss (summed, scaled for the distribution strategy), for a
  model that overrides `compute_loss`.
- `replaced_inner_loops` swaps `keras.layers.RNN.inner_loop`, the method
  `RNN.call` steps its cell through time with, for a stand-in on given
  layers, and gives the layers their own back.
- `outside_object_sharing` switches off, for a block, the object sharing
  by which Keras's saving format reuses one object wherever a config
  carries the same `shared_object_id`. While a model is loaded, Keras
  marks every object it serializes twice and tells objects apart by
  `id()`; a layer built from its config that serializes and deserializes
  short-lived objects (a `Bidirectional` copies its layer so, `Seq2Seq`
  copies its cell) can meet an address an earlier object had, and get that
  object back instead of a copy. The switch is the two maps of
  `keras.src.backend.common.global_state` that `ObjectSharingScope` sets.
"""

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
from keras.src.backend.common import global_state
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

__all__ = [
    "DropoutRNNCell",
    "additional_loss",
    "call_has_training_arg",
    "replaced_inner_loops",
    "outside_object_sharing",
    "sublayers",
]

#: The global attributes by which Keras's saving shares objects.
OBJECT_SHARING_MAPS = ("shared_objects/id_to_obj_map", "shared_objects/id_to_config_map")


@contextlib.contextmanager
def outside_object_sharing() -> Iterator[None]:
    """Keras's object sharing off inside the block (nothing is marked or
    reused by `id()`), as it was after."""
    saved = [global_state.get_global_attribute(name) for name in OBJECT_SHARING_MAPS]
    for name in OBJECT_SHARING_MAPS:
        global_state.set_global_attribute(name, None)
    try:
        yield
    finally:
        for name, value in zip(OBJECT_SHARING_MAPS, saved):
            global_state.set_global_attribute(name, value)


def sublayers(layer: keras.layers.Layer) -> list[keras.layers.Layer]:
    """Every layer tracked inside `layer` (not `layer` itself), depth first:
    a model's layers, a wrapper's wrapped layer, an RNN's cell and a stack's
    cells."""
    return list(layer._flatten_layers(include_self=False))


def call_has_training_arg(layer: keras.layers.Layer) -> bool:
    """Whether Keras passes `training` to `layer.call`."""
    return bool(getattr(layer, "_call_has_training_arg", False))


def additional_loss(model: keras.Model, loss: Any) -> Any:
    """A loss of `model.losses` as `Model.compute_loss` adds it: summed to a
    scalar and scaled for the distribution strategy."""
    return model._aggregate_additional_loss(loss)


@contextlib.contextmanager
def replaced_inner_loops(
    loops: Sequence[tuple[keras.layers.RNN, Callable[..., Any]]],
) -> Iterator[None]:
    """Run each RNN layer's time loop through its stand-in: `loops` holds
    `(layer, stand_in)` pairs.

    A stand-in is called as `RNN.call` calls `inner_loop`:
    `(sequences, initial_state, mask, training) -> (last_output, outputs,
    states)`. The layers are the caller's: the stand-ins are removed when
    the block ends, however it ends.
    """
    try:
        for layer, loop in loops:
            layer.inner_loop = loop
        yield
    finally:
        for layer, _ in loops:
            if "inner_loop" in vars(layer):
                del layer.inner_loop
