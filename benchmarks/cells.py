"""kerasrnn cells in keras.layers.RNN against Keras's built-in layers.

Each pair computes the same function (ElmanCell/SimpleRNN, LSTMCell/LSTM,
GRUCell/GRU(reset_after=False), LeakyCell(alpha=1)/SimpleRNN) on the same
shapes; a training step (Adam, MSE on the last state) and an inference call
are timed side by side, with Keras's default compile and with
`jit_compile=True`. Achieved GFLOP/s is set against the matmul ceiling for
the step's own matmul shapes, measured in the same run.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

import kerasrnn
from benchmarks.timing import interleaved_medians

PAIRS = {
    "elman": (lambda n: kerasrnn.ElmanCell(n), lambda n: keras.layers.SimpleRNN(n), 1),
    "lstm": (lambda n: kerasrnn.LSTMCell(n), lambda n: keras.layers.LSTM(n), 4),
    "gru": (
        lambda n: kerasrnn.GRUCell(n),
        lambda n: keras.layers.GRU(n, reset_after=False),
        3,
    ),
    "leaky": (
        lambda n: kerasrnn.LeakyCell(n, alpha=1.0),
        lambda n: keras.layers.SimpleRNN(n),
        1,
    ),
}


@dataclasses.dataclass
class Shapes:
    batch: int
    steps: int
    features: int
    units: int


FULL = Shapes(batch=64, steps=100, features=64, units=256)
QUICK = Shapes(batch=8, steps=10, features=8, units=16)


def _model(layer, shapes, jit):
    inputs = keras.Input((shapes.steps, shapes.features), batch_size=shapes.batch)
    model = keras.Model(inputs, layer(inputs))
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4), loss="mse", jit_compile=jit
    )
    return model


def step_flops(gates, shapes):
    """FLOPs of one training step's matmuls: forward 2·B·(d+n)·g·n per time
    step; the backward pass costs twice the forward."""
    forward = 2 * shapes.batch * (shapes.features + shapes.units) * gates * shapes.units
    return 3 * forward * shapes.steps


def matmul_ceiling(shapes, gates, repeats):
    """GFLOP/s of the step's own matmul, (B, d+n) × (d+n, g·n), looped in a
    compiled function so dispatch overhead is amortised."""
    a = tf.random.normal((shapes.batch, shapes.features + shapes.units))
    b = tf.random.normal((shapes.features + shapes.units, gates * shapes.units))
    loops = 200

    @tf.function
    def run():
        acc = tf.zeros((shapes.batch, gates * shapes.units))
        for i in tf.range(loops):
            # A left operand that changes every iteration, so the compiler
            # cannot hoist the product out of the loop.
            acc += tf.matmul(a + tf.cast(i, a.dtype), b)
        return acc

    median = interleaved_medians({"mm": lambda: run().numpy()}, repeats)["mm"]
    flops = 2 * shapes.batch * (shapes.features + shapes.units) * gates * shapes.units
    return flops * loops / median / 1e9


def large_matmul_ceiling(size, repeats):
    """GFLOP/s of one size³ float32 matmul: the machine's GEMM peak."""
    a = tf.random.normal((size, size))
    b = tf.random.normal((size, size))
    run = tf.function(lambda: tf.matmul(a, b))
    median = interleaved_medians({"mm": lambda: run().numpy()}, repeats)["mm"]
    return 2 * size**3 / median / 1e9


def compare(name, shapes, repeats):
    """Rows for one cell pair: train and inference, default and jit."""
    ours_cell, builtin, gates = PAIRS[name]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(shapes.batch, shapes.steps, shapes.features)).astype("float32")
    y = rng.normal(size=(shapes.batch, shapes.units)).astype("float32")
    rows = []
    for jit in (False, True):
        ours = _model(keras.layers.RNN(ours_cell(shapes.units)), shapes, jit)
        theirs = _model(builtin(shapes.units), shapes, jit)
        theirs.set_weights(ours.get_weights())
        train = interleaved_medians(
            {
                "ours": lambda: ours.train_on_batch(x, y),
                "keras": lambda: theirs.train_on_batch(x, y),
            },
            repeats,
        )
        infer = interleaved_medians(
            {
                "ours": lambda: ours.predict_on_batch(x),
                "keras": lambda: theirs.predict_on_batch(x),
            },
            repeats,
        )
        compile_mode = "jit" if jit else "default"
        for kind, times in (("train", train), ("infer", infer)):
            rows.append(
                {
                    "cell": name,
                    "mode": f"{kind}/{compile_mode}",
                    "ours_ms": 1e3 * times["ours"],
                    "keras_ms": 1e3 * times["keras"],
                    "ratio": times["keras"] / times["ours"],
                    "ours_gflops": (
                        step_flops(gates, shapes) / times["ours"] / 1e9
                        if kind == "train"
                        else step_flops(gates, shapes) / 3 / times["ours"] / 1e9
                    ),
                }
            )
    return rows
