"""The one place kerasrnn reaches into Keras's private modules.

`DropoutRNNCell` is the mixin by which `keras.layers.RNN` recognises a cell
that carries dropout masks: the layer draws the masks before its loop starts
(so the loop body stays stateless, as `tf.while_loop`, `jax.lax.scan` and XLA
require) and clears them after. Keras does not export it under
`keras.layers`, so it is imported from `keras.src`; the `keras` pin in
pyproject.toml covers it, and `tests/kerasrnn/test_keras_internals.py` names
the symbol if a Keras release moves it.
"""

from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

__all__ = ["DropoutRNNCell"]
