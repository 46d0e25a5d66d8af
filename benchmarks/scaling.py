"""Time and peak memory of an LSTM forward + backward pass as T grows.

Each length runs in its own process; after a warm-up step the process's
peak resident set size is reset (Linux `/proc/self/clear_refs`), so the
peak measured over the timed steps, less the size before them, is the
memory one gradient step needs at that length. Cost must grow linearly in T:
the table prints time and memory per step relative to the shortest T.
"""

import json
import subprocess
import sys

CHILD = """
import json, sys, time
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

def status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])

step()  # trace and warm up
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # resets the peak resident set size (VmHWM) to now
before = status_kib("VmRSS")
times = []
for _ in range(repeats):
    start = time.perf_counter()
    [g.numpy() for g in step()]
    times.append(time.perf_counter() - start)
print(json.dumps({"seconds": sorted(times)[len(times) // 2],
                  "growth_mib": (status_kib("VmHWM") - before) / 1024}))
"""


def measure(batch, steps, features, units, repeats):
    """Median seconds of one gradient step at length T, and how far the
    peak RSS (MiB) rose above the process's size before the timed steps."""
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
