"""LSTM layers as LiteRT's fused `UNIDIRECTIONAL_SEQUENCE_LSTM` operator.

LiteRT runs a whole LSTM sequence as one operator, whatever its length,
where the unrolled loop of `kerasrnn.export.rnn_loop` costs about ten
operators per step. Its converter builds that operator from a function
that carries Keras 2's marks: the attribute `api_implements` =
`"lstm_<id>"` (with `time_major` and `go_backwards`), the arguments
`(inputs, h_0, c_0, kernel, recurrent_kernel, bias)` and five results
`(last_output, outputs, h_T, c_T, runtime)`. Keras 3 no longer writes such a
function, so its LSTMs reach LiteRT as loops; `fused_inner_loop` writes it
again for an LSTM layer while an export traces the layer.

The converter fuses the function only when:

- the initial states and the weights have static shapes (a fixed batch
  size), and no mask is passed (the operator has no mask input);
- nothing reads the final states `h_T`, `c_T` (the operator does not output
  them): a layer with `return_state=True` whose states are used is left as
  the function's own body (`lstm_step` through time);
- the function survives as a function: freezing variables into constants
  inlines every function, so the export traces with the weights as
  constants (`constant_weights`) and has nothing to freeze.

The fused operator keeps its states in LiteRT *variable tensors*: each call
would start from the states the previous call ended with (the operator's
design, made for stateful streaming; tensorflow/tensorflow#47813), which
the `zeroed_states` rewrite (`kerasrnn.export.rewrites`) undoes; the batch
size is fixed at conversion (the variable tensors have its shape).
The converter also bounds the operator's cell state to [-10, 10]
(`cell_clip`), which Keras's LSTM never does; `without_cell_clip` takes
the bound off.
"""

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import keras
import tensorflow as tf
from keras import tree

from kerasrnn.export.flatbuffer_edits import builtin
from kerasrnn.export.paired_lstm import is_zero_state
from kerasrnn.export.rnn_loop import looped_steps, unrolled_steps
from kerasrnn.litert_internals import schema
from kerasrnn.types import TensorLike

__all__ = [
    "constant_weights",
    "fused_inner_loop",
    "fused_where_it_fits",
    "lstm_step",
    "marked_lstm_function",
    "without_cell_clip",
]


#: A step of the marked function's body: `(x_t, h, c, kernel,
#: recurrent_kernel, bias) -> (h_t, c_t)`.
Step = Callable[[TensorLike, TensorLike, TensorLike, TensorLike, TensorLike, TensorLike], Any]


def lstm_step(
    x: TensorLike,
    h: TensorLike,
    c: TensorLike,
    kernel: TensorLike,
    recurrent_kernel: TensorLike,
    bias: TensorLike,
) -> tuple[TensorLike, TensorLike]:
    """One LSTM step, `eq:rnn-lstm-f` ... `eq:rnn-lstm-h`, gates in Keras's
    order i, f, c~, o: `(batch, d)`, `(batch, n)` x2 -> `(h_t, c_t)`."""
    z = tf.matmul(x, kernel) + tf.matmul(h, recurrent_kernel) + bias
    z_i, z_f, z_c, z_o = tf.split(z, 4, axis=-1)
    c = tf.sigmoid(z_f) * c + tf.sigmoid(z_i) * tf.tanh(z_c)
    return tf.sigmoid(z_o) * tf.tanh(c), c


def marked_lstm_function(go_backwards: bool, step: Step = lstm_step) -> Any:
    """The function the converter fuses: Keras 2's marks and argument
    layout, its body `step` through time (run where it is not fused)."""

    def lstm(
        inputs: TensorLike,
        h_0: TensorLike,
        c_0: TensorLike,
        kernel: TensorLike,
        recurrent_kernel: TensorLike,
        bias: TensorLike,
    ) -> tuple[TensorLike, ...]:
        """(batch, time, d) inputs -> (last_output, outputs, h_T, c_T, runtime)."""

        def loop_step(
            x: TensorLike, states: tuple[TensorLike, ...], keep: Any, previous: Any
        ) -> tuple[TensorLike, tuple[TensorLike, ...]]:
            h, c = step(x, states[0], states[1], kernel, recurrent_kernel, bias)
            return h, (h, c)

        sequences = tf.transpose(inputs, [1, 0, 2])
        if go_backwards:
            sequences = tf.reverse(sequences, [0])
        loop = unrolled_steps if inputs.shape[1] is not None else looped_steps
        last, outputs, (h, c) = loop(loop_step, sequences, None, (h_0, c_0), True)
        # The fifth result is Keras 2's "runtime" marker, which the
        # converter expects and replaces.
        return last, tf.transpose(outputs, [1, 0, 2]), h, c, tf.constant(0.0)

    return tf.function(
        lstm,
        autograph=False,
        experimental_attributes={
            "api_implements": f"lstm_{uuid.uuid4().hex}",
            "time_major": False,
            "go_backwards": go_backwards,
        },
    )


def fused_inner_loop(layer: keras.layers.RNN, fallback: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for `layer.inner_loop` that the converter fuses.

    Where the call cannot be fused (a mask is passed, the initial state is
    not the zero state or the batch size is not fixed), the call goes to
    `fallback`, `kerasrnn.export.rnn_loop.litert_inner_loop`'s loop.

    Args:
        layer: A `keras.layers.RNN` for which
            `kerasrnn.export.paired_lstm.lstm_unfit_reason` is None.
        fallback: The stand-in used where this one cannot serve.

    Returns:
        A function `(sequences, initial_state, mask, training) ->
        (last_output, outputs, states)` like `keras.layers.RNN.inner_loop`.
    """
    function = marked_lstm_function(layer.go_backwards)

    def fused(sequences: TensorLike, initial_state: Any) -> tuple[TensorLike, TensorLike, Any]:
        cell = layer.cell
        bias = cell.bias if cell.use_bias else tf.zeros([4 * cell.units])
        weights = (cell.kernel, cell.recurrent_kernel, bias)
        last, outputs, h, c, _ = function(
            tf.cast(sequences, tf.float32),
            *tree.flatten(initial_state),
            *[tf.convert_to_tensor(weight) for weight in weights],
        )
        return last, outputs, tree.pack_sequence_as(initial_state, [h, c])

    return fused_where_it_fits(fused, fallback)


def fused_where_it_fits(
    fused: Callable[[TensorLike, Any], tuple[TensorLike, TensorLike, Any]],
    fallback: Callable[..., Any],
) -> Callable[..., Any]:
    """An `inner_loop` stand-in that calls `fused(sequences, initial_state)`
    where LiteRT's fused sequence operators can serve the call (no mask, one
    sequence tensor of a fixed batch size, zero initial states) and
    `fallback` everywhere else."""

    def inner_loop(
        sequences: Any, initial_state: Any, mask: Any, training: bool = False
    ) -> tuple[TensorLike, TensorLike, Any]:
        if tree.is_nested(mask):
            mask = mask[0]
        fits = (
            mask is None
            and not tree.is_nested(sequences)
            and sequences.shape[0] is not None
            and all(is_zero_state(state) for state in tree.flatten(initial_state))
        )
        if not fits:
            return fallback(sequences, initial_state, mask, training)
        return fused(sequences, initial_state)

    return inner_loop


@contextlib.contextmanager
def constant_weights(model: keras.Model) -> Iterator[None]:
    """Trace `model` with its variables read as constants of their values.

    Inside, every read of one of the model's variables gives a constant
    (a `keras.StatelessScope` mapping each variable to its value), so the
    traced function has no variables to freeze, and the fused functions
    survive to the converter.
    """
    mapping = [(variable, tf.constant(variable.numpy())) for variable in model.variables]
    with keras.StatelessScope(state_mapping=mapping):
        yield


def without_cell_clip(model: Any) -> bool:
    """Unclip the `UNIDIRECTIONAL_SEQUENCE_LSTM` operators of `model`.

    The converter writes the operator of a Keras 2 LSTM function with
    `cell_clip` = 10: c_t bounded to [-10, 10], which no Keras LSTM does;
    a long sequence with a forget gate near 1 reaches it. A `cell_clip` of 0
    is LiteRT's "no clipping", the Keras equations exactly.

    Args:
        model: A parsed LiteRT flatbuffer (`schema_py_generated.ModelT`),
            changed in place.

    Returns:
        Whether an operator was clipped.
    """
    changed = False
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            if builtin(model, op) == schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM:
                if op.builtinOptions.cellClip != 0.0:
                    op.builtinOptions.cellClip = 0.0
                    changed = True
    return changed
