"""export_litert at a fixed batch size: LSTM layers as LiteRT's fused
UNIDIRECTIONAL_SEQUENCE_LSTM, held to a NumPy loop of the LSTM equations.

The fused operator keeps its states in variable tensors; the files are
called several times in a row without `reset_all_variables()` to hold them
to the promise that a call never depends on the one before.
"""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from tests.kerasrnn.numpy_reference import gate_blocks, lstm_step, run

UNITS = 3
FEATURES = 2
BATCH = 2
FUSED = "UNIDIRECTIONAL_SEQUENCE_LSTM"

LAYERS = {
    "kerasrnn": lambda **kw: keras.layers.RNN(kerasrnn.LSTMCell(UNITS), **kw),
    "keras": lambda **kw: keras.layers.LSTM(UNITS, **kw),
}


def lstm_model(kind, direction, steps, return_sequences=True):
    inputs = keras.Input((steps, FEATURES), batch_size=BATCH, name="x")
    layer = LAYERS[kind](
        return_sequences=return_sequences, go_backwards=direction == "backward"
    )
    if direction == "bidirectional":
        layer = keras.layers.Bidirectional(layer)
    model = keras.Model(inputs, layer(inputs))
    rng = np.random.default_rng(len(kind) + steps)
    for weight in model.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    return model


def reference(model, x, direction, return_sequences):
    """The model's output from `numpy_reference.run` over the LSTM equations."""
    (layer,) = model.layers[1:]
    layers = [layer]
    if direction == "bidirectional":
        layers = [layer.forward_layer, layer.backward_layer]
    zeros = [np.zeros((x.shape[0], UNITS))] * 2
    outputs = []
    # Forward first, as Bidirectional concatenates them.
    for layer in sorted(layers, key=lambda layer: layer.go_backwards):
        cell, backwards = layer.cell, layer.go_backwards
        w = gate_blocks(
            cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), 4
        )
        sequence, _ = run(functools.partial(lstm_step, w), x, zeros, go_backwards=backwards)
        if direction == "bidirectional" and backwards:
            sequence = sequence[:, ::-1]  # Bidirectional re-reverses it
        outputs.append(sequence if return_sequences else sequence[:, -1])
    return np.concatenate(outputs, -1)


def run_three_times(path, model, direction, return_sequences, steps):
    """The file's answers to three different inputs in a row, against the
    reference; the largest difference."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    (name,) = runner.get_input_details()
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(3):
        x = rng.normal(size=(BATCH, steps, FEATURES)).astype("float32")
        (answer,) = runner(**{name: x}).values()
        expected = reference(model, x, direction, return_sequences)
        worst = max(worst, float(np.abs(answer - expected).max()))
    return worst


def operators(path):
    return kerasrnn.count_litert_operators(path)["serving_default"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize(
    "direction, return_sequences",
    [("forward", True), ("backward", False), ("bidirectional", True)],
)
def test_lstm_layers_become_the_fused_operator(tmp_path, kind, direction, return_sequences):
    steps = 6
    model = lstm_model(kind, direction, steps, return_sequences)
    path = kerasrnn.export_litert(model, tmp_path / "model.tflite", sequence_length=steps)
    counted = operators(path)
    assert counted.get(FUSED) == (2 if direction == "bidirectional" else 1)
    assert "LOGISTIC" not in counted and "TANH" not in counted
    assert run_three_times(path, model, direction, return_sequences, steps) < 1e-5


@pytest.mark.slow
def test_a_fused_file_does_not_grow_with_the_sequence_length(tmp_path):
    counts = {}
    for steps in (4, 40):
        model = lstm_model("kerasrnn", "bidirectional", steps)
        path = kerasrnn.export_litert(model, tmp_path / f"{steps}.tflite", sequence_length=steps)
        counts[steps] = operators(path)
        assert run_three_times(path, model, "bidirectional", True, steps) < 1e-5
    assert counts[4] == counts[40]
    assert sum(counts[40].values()) <= 12


@pytest.mark.slow
def test_where_the_operator_does_not_fit_the_loop_stays(tmp_path):
    steps = 5
    # A mask: the operator has no mask input.
    ids = keras.Input((steps,), batch_size=BATCH, dtype="int32", name="ids")
    embedded = keras.layers.Embedding(6, FEATURES, mask_zero=True)(ids)
    masked = keras.Model(ids, keras.layers.RNN(kerasrnn.LSTMCell(UNITS))(embedded))
    # Final states that are used: the operator does not output them.
    x = keras.Input((steps, FEATURES), batch_size=BATCH, name="x")
    _, h, c = keras.layers.LSTM(UNITS, return_state=True)(x)
    with_states = keras.Model(x, keras.layers.Concatenate()([h, c]))
    # A dynamic batch size, and fused=False.
    free = keras.Sequential([keras.Input((steps, FEATURES)), keras.layers.LSTM(UNITS)])
    plain = lstm_model("keras", "forward", steps)
    ids_batch = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], "int32")
    x_batch = np.random.default_rng(3).normal(size=(BATCH, steps, FEATURES)).astype("float32")
    cases = {
        "masked": (masked, {}, ids_batch),
        "with_states": (with_states, {}, x_batch),
        "free_batch": (free, {}, x_batch),
        "not_fused": (plain, {"fused": False}, x_batch),
    }
    from ai_edge_litert.interpreter import Interpreter

    for name, (model, options, batch) in cases.items():
        path = kerasrnn.export_litert(
            model, tmp_path / f"{name}.tflite", sequence_length=steps, **options
        )
        assert FUSED not in operators(path), name
        runner = Interpreter(str(path)).get_signature_runner("serving_default")
        (input_name,) = runner.get_input_details()
        (answer,) = runner(**{input_name: batch}).values()
        np.testing.assert_allclose(answer, model.predict(batch, verbose=0), atol=1e-5)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"batch_size": 0}, "batch_size=0"),
        ({"batch_size": 1.5}, "batch_size=1.5"),
        ({"fused": "yes"}, "fused='yes'"),
    ],
)
def test_bad_batch_size_or_fused_is_refused_by_name(tmp_path, options, message):
    model = lstm_model("keras", "forward", 3)
    with pytest.raises((TypeError, ValueError), match=message):
        kerasrnn.export_litert(model, tmp_path / "model.tflite", **options)
    assert not (tmp_path / "model.tflite").exists()
