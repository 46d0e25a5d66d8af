"""The type aliases kerasrnn's signatures use.

Keras and TensorFlow ship no type information, so to a type checker every
tensor is `Any`; these names say in a signature what is meant instead.
"""

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import keras

#: A tensor of the running Keras backend (`tf.Tensor`, `jax.Array`, ...), a
#: symbolic `keras.KerasTensor`, or what `keras.ops` converts to one (a NumPy
#: array, nested lists of numbers).
TensorLike: TypeAlias = Any

#: A shape whose entries are sizes, `None` where unknown (`(batch, d)`).
ShapeLike: TypeAlias = Sequence[int | None]

#: What `keras.layers.Layer.get_config` returns: constructor arguments as
#: plain Python values.
Config: TypeAlias = dict[str, Any]

#: An activation as `keras.activations.get` takes it: a name, a function or
#: `None` (linear).
ActivationLike: TypeAlias = str | Callable[..., Any] | None

#: An initializer as `keras.initializers.get` takes it: a name, a serialized
#: config, an `Initializer` or a function of `(shape, dtype)`.
InitializerLike: TypeAlias = (
    str | dict[str, Any] | keras.initializers.Initializer | Callable[..., Any]
)

#: A regularizer as `keras.regularizers.get` takes it, or `None`.
RegularizerLike: TypeAlias = str | dict[str, Any] | keras.regularizers.Regularizer | None

#: A constraint as `keras.constraints.get` takes it, or `None`.
ConstraintLike: TypeAlias = str | dict[str, Any] | keras.constraints.Constraint | None
