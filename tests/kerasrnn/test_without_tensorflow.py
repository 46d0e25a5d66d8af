"""kerasrnn on Keras's JAX backend in a process that cannot import TensorFlow.

`import kerasrnn`, the cells in `keras.layers.RNN`, `param_count`,
`explain_params`, `bptt`, `gradient_flow` and `from_keras`/`to_keras` run in
a subprocess where importing `tensorflow` (or any submodule) raises; their
numbers are checked here against NumPy loops of the seed equations, the
closed-form counts, finite differences and Keras's own GRU. Without
TensorFlow, `kerasrnn.seq2seq` is refused in one line that says it needs it.
On the TensorFlow backend, a plain `import kerasrnn` still registers the
sequence-to-sequence classes, so a saved model loads.
"""

import functools
import os

import numpy as np
import pytest

from tests.isolated import last_json, run_without
from tests.kerasrnn import numpy_reference as ref

pytestmark = pytest.mark.slow

BATCH, STEPS, FEATURES, UNITS = 2, 5, 3, 4
# kerasrnn cell -> (gate blocks, NumPy step of its seed equations).
CELLS = {
    "ElmanCell": (1, ref.elman_step),
    "LSTMCell": (4, ref.lstm_step),
    "GRUCell": (3, ref.gru_step),
}
# Elman network of `bptt`: n hidden, d inputs, m outputs, T steps.
N, D, M, T = 3, 2, 2, 4

PROGRAM = """
import json
import sys

import keras
import numpy as np

import kerasrnn

data, outputs = np.load(sys.argv[1]), {}
inputs = data["inputs"]
report = {"backend": keras.backend.backend(), "param_count": {}, "explained": {}}
for name in ("ElmanCell", "LSTMCell", "GRUCell"):
    cell = getattr(kerasrnn, name)(int(data["units"]))
    layer = keras.layers.RNN(cell, return_sequences=True)
    model = keras.Sequential([keras.Input(inputs.shape[1:]), layer])
    cell.kernel.assign(data[name + "/kernel"])
    cell.recurrent_kernel.assign(data[name + "/recurrent_kernel"])
    cell.bias.assign(data[name + "/bias"])
    outputs[name] = np.asarray(model(inputs))
    report["param_count"][name] = kerasrnn.param_count(cell, inputs.shape[-1])
    explained = kerasrnn.explain_params(model, print_fn=lambda text: None)
    report["explained"][name] = [explained.total, model.count_params()]

params = {key.partition("/")[2]: data[key] for key in data.files if key.startswith("bptt/")}
loss, grads = kerasrnn.bptt.bptt(params, data["bptt_xs"], data["bptt_ys"])
report["bptt_loss"] = loss
outputs.update({"grad/" + key: value for key, value in grads.items()})

elman = keras.layers.RNN(kerasrnn.ElmanCell(int(data["units"])))
elman(inputs[:1])
elman.cell.kernel.assign(data["ElmanCell/kernel"])
elman.cell.recurrent_kernel.assign(data["ElmanCell/recurrent_kernel"])
elman.cell.bias.assign(data["ElmanCell/bias"])
outputs["flow"] = kerasrnn.gradient_flow(elman, inputs)

keras.utils.set_random_seed(3)
keras_gru = keras.layers.GRU(int(data["units"]), return_sequences=True)
outputs["keras_gru"] = np.asarray(keras_gru(inputs))
ours = kerasrnn.from_keras(keras_gru)
outputs["from_keras"] = np.asarray(ours(inputs))
outputs["keras_gru_kernel"] = np.asarray(keras_gru.cell.kernel)
outputs["from_keras_kernel"] = np.asarray(ours.cell.kernel)
back = kerasrnn.to_keras(ours)
outputs["round_trip"] = np.asarray(back(inputs))
outputs["round_trip_kernel"] = np.asarray(back.cell.kernel)
report["converted"] = [type(ours.cell).__name__, type(back.cell).__name__]

refusals = []
try:
    kerasrnn.seq2seq
except ImportError as error:
    refusals.append(str(error))
try:
    import kerasrnn.seq2seq
except ImportError as error:
    refusals.append(str(error))
report["refusals"] = refusals
report["tensorflow_loaded"] = any(m.partition(".")[0] == "tensorflow" for m in sys.modules)
np.savez(sys.argv[2], **outputs)
print(json.dumps(report))
"""


def elman_bptt_loss(params, xs, ys):
    """Σ_t ½‖W_y h_t + b_y − z_t‖², h_t = tanh(W_h h_{t−1} + W_x x_t + b)."""
    h, total = np.zeros(params["W_h"].shape[0]), 0.0
    for x, z in zip(xs, ys):
        h = np.tanh(params["W_h"] @ h + params["W_x"] @ x + params["b"])
        residual = params["W_y"] @ h + params["b_y"] - z
        total += 0.5 * residual @ residual
    return total


def finite_difference_gradients(params, xs, ys, step=1e-6):
    gradients = {}
    for name, value in params.items():
        gradient = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = {key: array.copy() for key, array in params.items()}
            shifted[name][index] += step
            up = elman_bptt_loss(shifted, xs, ys)
            shifted[name][index] -= 2 * step
            down = elman_bptt_loss(shifted, xs, ys)
            gradient[index] = (up - down) / (2 * step)
        gradients[name] = gradient
    return gradients


def elman_flow(kernel, recurrent_kernel, bias, xs):
    """σ_max of M_T ⋯ M_{T−lag+1}, M_t = diag(1 − h_t²) W_h (eq:rnn-jacobian)."""
    W_x, W_h = kernel.T, recurrent_kernel.T
    h, factors = np.zeros(W_h.shape[0]), []
    for x in xs:
        h = np.tanh(W_h @ h + W_x @ x + bias)
        factors.append(np.diag(1 - h**2) @ W_h)
    flow, product = [1.0], np.eye(W_h.shape[0])
    for lag in range(1, len(xs)):
        product = product @ factors[len(xs) - lag]
        flow.append(np.linalg.norm(product, ord=2))
    return np.array(flow)


def test_cells_accounting_bptt_and_conversion_run_without_tensorflow(tmp_path):
    rng = np.random.default_rng(11)
    data = {
        "units": np.array(UNITS),
        "inputs": rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32"),
    }
    for name, (gates, _) in CELLS.items():
        data[name + "/kernel"] = rng.normal(scale=0.5, size=(FEATURES, gates * UNITS))
        data[name + "/recurrent_kernel"] = rng.normal(scale=0.5, size=(UNITS, gates * UNITS))
        data[name + "/bias"] = rng.normal(scale=0.3, size=(gates * UNITS,))
    params = {
        "W_x": rng.normal(size=(N, D)), "W_h": rng.normal(scale=0.5, size=(N, N)),
        "b": rng.normal(size=N), "W_y": rng.normal(size=(M, N)), "b_y": rng.normal(size=M),
    }
    data.update({"bptt/" + key: value for key, value in params.items()})
    data["bptt_xs"], data["bptt_ys"] = rng.normal(size=(T, D)), rng.normal(size=(T, M))
    np.savez(tmp_path / "data.npz", **data)

    environment = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    completed = run_without(
        ("tensorflow",), PROGRAM, tmp_path / "data.npz", tmp_path / "out.npz",
        env=environment, timeout=600,
    )
    report = last_json(completed)
    outputs = np.load(tmp_path / "out.npz")
    assert report["backend"] == "jax" and report["tensorflow_loaded"] is False

    for name, (gates, step) in CELLS.items():
        blocks = ref.gate_blocks(
            data[name + "/kernel"], data[name + "/recurrent_kernel"],
            data[name + "/bias"], gates,
        )
        initial = [np.zeros((BATCH, UNITS))] * (2 if name == "LSTMCell" else 1)
        expected, _ = ref.run(
            functools.partial(step, blocks), data["inputs"], initial
        )
        np.testing.assert_allclose(outputs[name], expected, atol=2e-5, err_msg=name)
        # g·n(d + n + 1), worked by hand: 4·(3+4+1)=32, ×4 and ×3 gates.
        closed_form = {"ElmanCell": 32, "LSTMCell": 128, "GRUCell": 96}[name]
        assert report["param_count"][name] == closed_form
        assert report["explained"][name] == [closed_form, closed_form]

    expected_gradients = finite_difference_gradients(params, data["bptt_xs"], data["bptt_ys"])
    assert report["bptt_loss"] == pytest.approx(
        elman_bptt_loss(params, data["bptt_xs"], data["bptt_ys"]), rel=1e-12
    )
    for name, gradient in expected_gradients.items():
        np.testing.assert_allclose(outputs["grad/" + name], gradient, atol=1e-7, err_msg=name)

    np.testing.assert_allclose(
        outputs["flow"],
        elman_flow(
            data["ElmanCell/kernel"], data["ElmanCell/recurrent_kernel"],
            data["ElmanCell/bias"], data["inputs"][0].astype(np.float64),
        ),
        rtol=1e-4,
    )

    # Keras's GRU is the reference for the converted layer; its update-gate
    # block (the first n columns) changes sign (eq:rnn-gru-h).
    assert report["converted"] == ["GRUCell", "GRUCell"]
    np.testing.assert_allclose(outputs["from_keras"], outputs["keras_gru"], atol=1e-5)
    np.testing.assert_allclose(outputs["round_trip"], outputs["keras_gru"], atol=1e-5)
    flip = np.r_[-np.ones(UNITS), np.ones(2 * UNITS)]
    np.testing.assert_array_equal(outputs["from_keras_kernel"], outputs["keras_gru_kernel"] * flip)
    np.testing.assert_array_equal(outputs["round_trip_kernel"], outputs["keras_gru_kernel"])

    # Attribute access and a direct import are refused alike, in one line.
    assert len(report["refusals"]) == 2
    for message in report["refusals"]:
        assert message.startswith("kerasrnn.seq2seq needs TensorFlow")
        assert "pip install tensorflow" in message and "\n" not in message


def test_on_tensorflow_a_plain_import_loads_a_saved_seq2seq_model(tmp_path):
    import keras

    import kerasrnn
    from kerasrnn import seq2seq

    keras.utils.set_random_seed(2)
    model = seq2seq.Seq2Seq(6, 6, kerasrnn.LSTMCell(4), embedding_dim=3)
    pair = (np.array([[3, 4, 5]], "int32"), np.array([[1, 3, 4]], "int32"))
    expected = np.asarray(model(pair))
    model.save(tmp_path / "model.keras")
    np.save(tmp_path / "pair.npy", np.stack(pair))
    program = """
        import sys

        import keras
        import numpy as np

        import kerasrnn

        model = keras.saving.load_model(sys.argv[1])
        source, target = np.load(sys.argv[2])
        np.save(sys.argv[3], np.asarray(model((source, target))))
        """
    run_without(
        (), program, tmp_path / "model.keras", tmp_path / "pair.npy", tmp_path / "out.npy",
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, atol=1e-6)
