"""Time and peak memory of an LSTM forward + backward pass as T grows.

Each length runs in its own process; once the layer is built, the
process's peak resident set size is reset (Linux `/proc/self/clear_refs`),
so the peak over the warm-up and timed steps, less the size before them,
is the memory a gradient step needs at that length (plus a constant for
tracing the graph, which dominates at short lengths). Cost must grow linearly in T:
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

with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # resets the peak resident set size (VmHWM) to now
before = status_kib("VmRSS")
step()  # trace and warm up; TensorFlow's allocator keeps what it took
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
    peak RSS (MiB) rose above the process's size before the first step."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *(str(v) for v in (batch, steps, features, units, repeats))],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling_rows(lengths, batch, features, units, repeats):
    """One row per T: time per step relative to the first length, and the
    memory each extra step costs since the previous length (MiB/step); both
    stay flat when cost is linear in T."""
    rows = [dict(steps=t, **measure(batch, t, features, units, repeats)) for t in lengths]
    base = rows[0]
    previous = None
    for row in rows:
        row["time_per_step_vs_first"] = (row["seconds"] / row["steps"]) / (
            base["seconds"] / base["steps"]
        )
        row["mib_per_extra_step"] = (
            (row["growth_mib"] - previous["growth_mib"]) / (row["steps"] - previous["steps"])
            if previous
            else float("nan")
        )
        previous = row
    return rows
