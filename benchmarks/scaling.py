"""Time and peak memory of an LSTM forward + backward pass as T grows.

Each length runs in its own process, so the peak resident set size
(`ru_maxrss`) belongs to that length alone. Cost must grow linearly in T:
the table prints time and memory per step relative to the shortest T.
"""

import json
import subprocess
import sys

CHILD = """
import json, resource, sys, time
import keras, numpy as np, tensorflow as tf
import kerasrnn
batch, steps, features, units, repeats = (int(a) for a in sys.argv[1:6])
layer = keras.layers.RNN(kerasrnn.LSTMCell(units))
x = tf.constant(np.random.default_rng(0).normal(size=(batch, steps, features)), tf.float32)
layer.build(x.shape)

@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    return tape.gradient(loss, layer.trainable_weights)

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
step()
times = []
for _ in range(repeats):
    start = time.perf_counter()
    [g.numpy() for g in step()]
    times.append(time.perf_counter() - start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": sorted(times)[len(times) // 2],
                  "growth_mib": (peak - before) / 1024}))
"""


def measure(batch, steps, features, units, repeats):
    """Median seconds of one gradient step at length T, and how far the
    peak RSS (MiB) rose above the process's size before the first step."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *(str(v) for v in (batch, steps, features, units, repeats))],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling_rows(lengths, batch, features, units, repeats):
    """One row per T, with cost per step relative to the first length."""
    rows = [dict(steps=t, **measure(batch, t, features, units, repeats)) for t in lengths]
    base = rows[0]
    for row in rows:
        row["time_per_step_vs_first"] = (row["seconds"] / row["steps"]) / (
            base["seconds"] / base["steps"]
        )
        row["memory_per_step_vs_first"] = (row["growth_mib"] / row["steps"]) / max(
            base["growth_mib"] / base["steps"], 1e-9
        )
    return rows
