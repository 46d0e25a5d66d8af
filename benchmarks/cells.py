"""kerasrnn cells in keras.layers.RNN against Keras's built-in layers.

Each pair computes the same function (ElmanCell/SimpleRNN, LSTMCell/LSTM,
GRUCell/GRU(reset_after=False), LeakyCell(alpha=1)/SimpleRNN) on the same
shapes; a training step (Adam, MSE on the last state) and an inference call
are timed side by side, with Keras's default compile and with
`jit_compile=True`. Achieved GFLOP/s is set against the matmul ceiling for
the step's own matmul shapes, measured in the same run.

`backend_rows` (also `python -m benchmarks.cells --backends`) sets our LSTM
and GRU cells against Keras's built-ins on the JAX backend and on
TensorFlow, call by call in one run: Keras fixes its backend per process, so
the JAX contenders live in a worker process that runs one call per request
while this one waits, and the two never compete for the CPU.
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys

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
        # The defaults bind this iteration's models (ruff B023), though
        # interleaved_medians calls the lambdas before the loop moves on.
        train = interleaved_medians(
            {
                "ours": lambda ours=ours: ours.train_on_batch(x, y),
                "keras": lambda theirs=theirs: theirs.train_on_batch(x, y),
            },
            repeats,
        )
        infer = interleaved_medians(
            {
                "ours": lambda ours=ours: ours.predict_on_batch(x),
                "keras": lambda theirs=theirs: theirs.predict_on_batch(x),
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


# The cells whose JAX rows the benchmark reports.
BACKEND_CELLS = ("lstm", "gru")


def _contenders(names, shapes, jit):
    """`(cell, who, kind) -> call` for ours and Keras's built-in, compiled."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(shapes.batch, shapes.steps, shapes.features)).astype("float32")
    y = rng.normal(size=(shapes.batch, shapes.units)).astype("float32")
    calls = {}
    for name in names:
        ours_cell, builtin, _ = PAIRS[name]
        ours = _model(keras.layers.RNN(ours_cell(shapes.units)), shapes, jit)
        theirs = _model(builtin(shapes.units), shapes, jit)
        theirs.set_weights(ours.get_weights())
        for who, model in (("ours", ours), ("keras", theirs)):
            calls[(name, who, "train")] = (
                lambda model=model: model.train_on_batch(x, y)
            )
            calls[(name, who, "infer")] = (
                lambda model=model: model.predict_on_batch(x)
            )
    return calls


def _jax_worker(shapes_json):
    """The worker's loop: one call per request line, `ok` when it is done."""
    if keras.backend.backend() != "jax":
        raise SystemExit(f"the worker needs KERAS_BACKEND=jax, not {keras.backend.backend()}")
    calls = _contenders(BACKEND_CELLS, Shapes(**json.loads(shapes_json)), jit=True)
    print("ready", flush=True)
    for line in sys.stdin:
        calls[tuple(line.split())]()
        print("ok", flush=True)


class _JaxWorker:
    """A `python -m benchmarks.cells --jax-worker` process and its pipe."""

    def __init__(self, shapes):
        environment = {**os.environ, "KERAS_BACKEND": "jax"}
        environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.cells", "--jax-worker",
             json.dumps(dataclasses.asdict(shapes))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=environment,
        )
        self._expect("ready")

    def _expect(self, word):
        line = self.process.stdout.readline().strip()
        if line != word:
            self.process.kill()
            raise RuntimeError(
                f"the JAX worker answered {line!r} instead of {word!r}; "
                "see its error output above"
            )

    def call(self, name, who, kind):
        self.process.stdin.write(f"{name} {who} {kind}\n")
        self.process.stdin.flush()
        self._expect("ok")

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def backend_rows(shapes, repeats):
    """Our LSTM and GRU vs Keras's built-ins, on JAX and on TensorFlow.

    Both backends compile the step with XLA (JAX always does; TensorFlow
    with `jit_compile=True`). Per cell and kind (train step, inference),
    the four contenders alternate call by call.

    Returns:
        Rows with the four median times in ms, `jax_ratio` and `tf_ratio`
        (Keras time / ours on that backend; above 1: ours is faster) and
        `ours_tf_over_jax` (our time on TensorFlow / on JAX; above 1: JAX
        is faster).
    """
    worker = _JaxWorker(shapes)
    try:
        local = _contenders(BACKEND_CELLS, shapes, jit=True)
        rows = []
        for name in BACKEND_CELLS:
            for kind in ("train", "infer"):
                times = interleaved_medians(
                    {
                        "ours_jax": lambda name=name, kind=kind: worker.call(
                            name, "ours", kind
                        ),
                        "keras_jax": lambda name=name, kind=kind: worker.call(
                            name, "keras", kind
                        ),
                        "ours_tf": local[(name, "ours", kind)],
                        "keras_tf": local[(name, "keras", kind)],
                    },
                    repeats,
                )
                rows.append(
                    {
                        "cell": name,
                        "mode": kind,
                        **{f"{who}_ms": 1e3 * t for who, t in times.items()},
                        "jax_ratio": times["keras_jax"] / times["ours_jax"],
                        "tf_ratio": times["keras_tf"] / times["ours_tf"],
                        "ours_tf_over_jax": times["ours_tf"] / times["ours_jax"],
                    }
                )
    finally:
        worker.close()
    return rows


BACKEND_COLUMNS = [
    "cell", "mode", "ours_jax_ms", "keras_jax_ms", "jax_ratio",
    "ours_tf_ms", "keras_tf_ms", "tf_ratio", "ours_tf_over_jax",
]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cells",
        description="Our LSTM and GRU cells against Keras's built-ins on the "
        "JAX and TensorFlow backends, side by side in one run.",
    )
    parser.add_argument("--backends", action="store_true",
                        help="print the JAX-vs-TensorFlow table")
    parser.add_argument("--quick", action="store_true",
                        help="tiny shapes: a smoke test, its numbers mean nothing")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per contender (default 15; 2 with --quick)")
    parser.add_argument("--jax-worker", metavar="SHAPES", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.jax_worker:
        _jax_worker(args.jax_worker)
        return
    if not args.backends:
        parser.error("nothing to run: pass --backends")
    shapes = QUICK if args.quick else FULL
    repeats = args.repeats or (2 if args.quick else 15)
    rows = backend_rows(shapes, repeats)
    print("\n## kerasrnn cells vs Keras built-ins on JAX and TensorFlow (XLA on both)\n")
    print(f"shapes: B={shapes.batch}, T={shapes.steps}, d={shapes.features}, "
          f"n={shapes.units}; median of {repeats} interleaved repeats\n")
    print("| " + " | ".join(BACKEND_COLUMNS) + " |")
    print("|" + "---|" * len(BACKEND_COLUMNS))
    for row in rows:
        print("| " + " | ".join(
            f"{row[c]:,.2f}" if isinstance(row[c], float) else str(row[c])
            for c in BACKEND_COLUMNS
        ) + " |")


if __name__ == "__main__":
    main()
