"""export_litert(fused=True) at a fixed batch size: LSTM layers as LiteRT's fused
UNIDIRECTIONAL_SEQUENCE_LSTM and Elman layers as its
UNIDIRECTIONAL_SEQUENCE_RNN, held to a NumPy loop of their equations.

The fused operator keeps its states in variable tensors; the files are
called several times in a row without `reset_all_variables()` to hold them
to the promise that a call never depends on the one before.
"""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from tests.kerasrnn.numpy_reference import elman_step, gate_blocks, lstm_step, run

UNITS = 3
FEATURES = 2
BATCH = 2
FUSED = "UNIDIRECTIONAL_SEQUENCE_LSTM"
FUSED_RNN = "UNIDIRECTIONAL_SEQUENCE_RNN"

LAYERS = {
    "kerasrnn": lambda **kw: keras.layers.RNN(kerasrnn.LSTMCell(UNITS), **kw),
    "keras": lambda **kw: keras.layers.LSTM(UNITS, **kw),
    "elman": lambda **kw: keras.layers.RNN(kerasrnn.ElmanCell(UNITS), **kw),
    "simple_rnn": lambda **kw: keras.layers.SimpleRNN(UNITS, **kw),
}
#: kind -> the operator it becomes
OPERATOR = {"kerasrnn": FUSED, "keras": FUSED, "elman": FUSED_RNN, "simple_rnn": FUSED_RNN}


def recurrent_model(kind, direction, steps, return_sequences=True):
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
    """The model's output from `numpy_reference.run` over the cell's
    equations (`eq:rnn-hidden` or the LSTM's)."""
    (layer,) = model.layers[1:]
    layers = [layer]
    if direction == "bidirectional":
        layers = [layer.forward_layer, layer.backward_layer]
    outputs = []
    # Forward first, as Bidirectional concatenates them.
    for layer in sorted(layers, key=lambda layer: layer.go_backwards):
        cell, backwards = layer.cell, layer.go_backwards
        gates, step = (4, lstm_step) if "LSTM" in type(cell).__name__ else (1, elman_step)
        zeros = [np.zeros((x.shape[0], UNITS))] * (2 if gates == 4 else 1)
        w = gate_blocks(
            cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), gates
        )
        sequence, _ = run(functools.partial(step, w), x, zeros, go_backwards=backwards)
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
@pytest.mark.parametrize(
    "kind, direction, return_sequences",
    [
        (kind, direction, return_sequences)
        for kind in ("kerasrnn", "keras")
        for direction, return_sequences in [
            ("forward", True),
            ("backward", False),
            ("bidirectional", True),
        ]
    ]
    + [
        ("elman", "backward", False),
        ("elman", "bidirectional", True),
        ("simple_rnn", "forward", True),
    ],
)
def test_lstm_and_elman_layers_become_the_fused_operators(
    tmp_path, kind, direction, return_sequences
):
    steps = 6
    model = recurrent_model(kind, direction, steps, return_sequences)
    path = kerasrnn.export_litert(
        model, tmp_path / "model.tflite", sequence_length=steps, fused=True
    )
    counted = operators(path)
    fused = OPERATOR[kind]
    assert counted.get(fused) == (2 if direction == "bidirectional" else 1)
    assert "LOGISTIC" not in counted and "TANH" not in counted
    assert ({FUSED, FUSED_RNN} - {fused}).isdisjoint(counted)
    assert run_three_times(path, model, direction, return_sequences, steps) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["kerasrnn", "elman"])
def test_a_fused_file_does_not_grow_with_the_sequence_length(tmp_path, kind):
    counts = {}
    for steps in (4, 40):
        model = recurrent_model(kind, "bidirectional", steps)
        path = kerasrnn.export_litert(
            model, tmp_path / f"{steps}.tflite", sequence_length=steps, fused=True
        )
        counts[steps] = operators(path)
        assert run_three_times(path, model, "bidirectional", True, steps) < 1e-5
    assert counts[4] == counts[40]
    assert sum(counts[40].values()) <= 12


@pytest.mark.slow
def test_an_elman_layer_whose_final_state_is_used_is_fused(tmp_path):
    # h_T is the last output, which the RNN operator gives.
    steps = 5
    x = keras.Input((steps, FEATURES), batch_size=BATCH, name="x")
    sequence, h = keras.layers.RNN(
        kerasrnn.ElmanCell(UNITS), return_sequences=True, return_state=True
    )(x)
    model = keras.Model(x, keras.layers.Concatenate()([sequence[:, 0], h]))
    path = kerasrnn.export_litert(
        model, tmp_path / "model.tflite", sequence_length=steps, fused=True
    )
    assert operators(path).get(FUSED_RNN) == 1
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    batch = np.random.default_rng(5).normal(size=(BATCH, steps, FEATURES)).astype("float32")
    (answer,) = runner(x=batch).values()
    cell = model.layers[1].cell
    w = gate_blocks(cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), 1)
    outputs, (final,) = run(
        functools.partial(elman_step, w), batch, [np.zeros((BATCH, UNITS))]
    )
    np.testing.assert_allclose(answer, np.concatenate([outputs[:, 0], final], -1), atol=1e-5)


def counting_lstm():
    """`(model, batch)`: an LSTM(1) whose gates are open (i = f = o = 1) and
    whose candidate is the input's sign: over 30 steps of +1 then 15 of -1
    the cell state counts up to 30 and down to 15. The converter's
    cell_clip of 10 would stop it at 10 and end at -5."""
    steps = 45
    x = keras.Input((steps, 1), batch_size=1, name="x")
    layer = keras.layers.LSTM(1, return_sequences=True)
    model = keras.Model(x, layer(x))
    layer.cell.kernel.assign(np.array([[0.0, 0.0, 20.0, 0.0]], "float32"))
    layer.cell.recurrent_kernel.assign(np.zeros((1, 4), "float32"))
    layer.cell.bias.assign(np.array([30.0, 30.0, 0.0, 30.0], "float32"))
    batch = np.concatenate([np.ones(30), -np.ones(15)]).reshape(1, steps, 1).astype("float32")
    return model, batch


@pytest.mark.slow
def test_the_fused_lstm_does_not_clip_its_cell_state(tmp_path):
    model, batch = counting_lstm()
    layer = model.layers[1]
    path = kerasrnn.export_litert(
        model, tmp_path / "model.tflite", sequence_length=batch.shape[1], fused=True
    )
    assert operators(path).get(FUSED) == 1
    w = gate_blocks(
        layer.cell.kernel.numpy(), layer.cell.recurrent_kernel.numpy(), layer.cell.bias.numpy(), 4
    )
    expected, (_, c) = run(functools.partial(lstm_step, w), batch, [np.zeros((1, 1))] * 2)
    assert c[0, 0] == pytest.approx(15.0)
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    (answer,) = runner(x=batch).values()
    np.testing.assert_allclose(answer, expected, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["keras", "elman"])
def test_a_float16_fused_call_does_not_depend_on_the_one_before(tmp_path, kind):
    # A float16 file sets the operators' states from float16 zeros once,
    # when the interpreter prepares it; the export zeroes them every call.
    steps = 6
    model = recurrent_model(kind, "forward", steps)
    path = kerasrnn.export_litert(
        model, tmp_path / "model.tflite", sequence_length=steps, quantize="float16", fused=True
    )
    assert operators(path).get(OPERATOR[kind]) == 1
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    rng = np.random.default_rng(11)
    first, second = (
        rng.normal(size=(BATCH, steps, FEATURES)).astype("float32") for _ in range(2)
    )
    (output,) = runner.get_output_details()
    answers = [runner(x=batch)[output] for batch in (first, second, first)]
    np.testing.assert_array_equal(answers[0], answers[2])
    expected = reference(model, first, "forward", True)
    np.testing.assert_allclose(answers[0], expected, atol=5e-3)


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
    # fused=False, the default.
    plain = recurrent_model("keras", "forward", steps)
    masked_elman = keras.Model(
        ids, keras.layers.RNN(kerasrnn.ElmanCell(UNITS))(embedded)
    )
    relu = keras.Sequential(
        [
            keras.Input((steps, FEATURES), batch_size=BATCH),
            keras.layers.SimpleRNN(UNITS, activation="relu"),
        ]
    )
    ids_batch = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], "int32")
    x_batch = np.random.default_rng(3).normal(size=(BATCH, steps, FEATURES)).astype("float32")
    cases = {
        "masked": (masked, {"fused": True}, ids_batch),
        "with_states": (with_states, {"fused": True}, x_batch),
        "not_fused": (plain, {}, x_batch),
        "masked_elman": (masked_elman, {"fused": True}, ids_batch),
        "relu_elman": (relu, {"fused": True}, x_batch),
    }
    from ai_edge_litert.interpreter import Interpreter

    for name, (model, options, batch) in cases.items():
        path = kerasrnn.export_litert(
            model, tmp_path / f"{name}.tflite", sequence_length=steps, **options
        )
        assert FUSED not in operators(path) and FUSED_RNN not in operators(path), name
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
    model = recurrent_model("keras", "forward", 3)
    with pytest.raises((TypeError, ValueError), match=message):
        kerasrnn.export_litert(model, tmp_path / "model.tflite", **options)
    assert not (tmp_path / "model.tflite").exists()


@pytest.mark.slow
def test_a_dynamic_int8_elman_layer_is_fused_on_its_int8_weights(tmp_path):
    # Weights of 1,024 values or more are quantized: the RNN operator reads
    # them as int8 (a hybrid kernel), within int8's rounding of the model.
    steps, features, units = 20, 48, 64
    x = keras.Input((steps, features), batch_size=BATCH, name="x")
    model = keras.Model(x, keras.layers.RNN(kerasrnn.ElmanCell(units))(x))
    path = kerasrnn.export_litert(
        model,
        tmp_path / "model.tflite",
        sequence_length=steps,
        quantize="dynamic_int8",
        fused=True,
    )
    assert operators(path).get(FUSED_RNN) == 1
    assert int8_tensors(path) >= 2  # W and U
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    (output,) = runner.get_output_details()
    batch = np.random.default_rng(2).normal(size=(BATCH, steps, features)).astype("float32")
    cell = model.layers[1].cell
    w = gate_blocks(cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), 1)
    expected, _ = run(functools.partial(elman_step, w), batch, [np.zeros((BATCH, units))])
    np.testing.assert_allclose(runner(x=batch)[output], expected[:, -1], atol=0.05)


@pytest.mark.slow
def test_the_compiled_model_refuses_a_fused_file_and_runs_the_loop(tmp_path):
    # What the docs tell a client on LiteRT's CompiledModel: a fused file
    # holds variable tensors, which it does not load; the default file,
    # fused=False, it runs.
    from ai_edge_litert.compiled_model import CompiledModel

    model = recurrent_model("elman", "forward", 3)
    fused = kerasrnn.export_litert(model, tmp_path / "fused.tflite", fused=True)
    looped = kerasrnn.export_litert(model, tmp_path / "looped.tflite")
    assert FUSED_RNN in operators(fused) and FUSED_RNN not in operators(looped)
    with pytest.raises(RuntimeError, match="Failed to load model"):
        CompiledModel.from_file(str(fused))
    compiled = CompiledModel.from_file(str(looped))
    x = np.random.default_rng(3).normal(size=(BATCH, 3, FEATURES)).astype("float32")
    inputs, outputs = compiled.create_input_buffers(0), compiled.create_output_buffers(0)
    inputs[0].write(x)
    compiled.run_by_index(0, inputs, outputs)
    answer = outputs[0].read(BATCH * 3 * UNITS, np.float32).reshape(BATCH, 3, UNITS)
    np.testing.assert_allclose(answer, reference(model, x, "forward", True), atol=1e-5)


def test_fused_without_a_fixed_batch_size_is_refused_naming_its_contract(tmp_path):
    free = keras.Sequential([keras.Input((3, FEATURES)), keras.layers.LSTM(UNITS)])
    with pytest.raises(ValueError, match=r"`fused`.*batch size.*Interpreter") as refused:
        kerasrnn.export_litert(free, tmp_path / "model.tflite", fused=True)
    assert "Received: fused=True, batch_size=None" in str(refused.value)
    assert not (tmp_path / "model.tflite").exists()


def int8_tensors(path):
    """How many int8 tensors the interpreter lists in the file."""
    from ai_edge_litert.interpreter import Interpreter

    details = Interpreter(str(path)).get_tensor_details()
    return sum(detail["dtype"] == np.int8 for detail in details)


@pytest.mark.slow
@pytest.mark.parametrize(
    "layer, features",
    [
        (lambda: keras.layers.LSTM(40), 3),  # input gates 40 x 3
        (lambda: keras.layers.SimpleRNN(40), 3),
        (lambda: keras.layers.LSTM(20), 60),  # recurrent gates 20 x 20
    ],
)
def test_a_fused_dynamic_int8_file_holds_int8_weights_where_the_loop_does(
    tmp_path, layer, features
):
    # The converter leaves a weight matrix of fewer than 1,024 values in
    # float32 and quantizes a fused operator only if all its gate matrices
    # are int8: such a layer keeps its loop.
    steps = 4
    model = keras.Sequential([keras.Input((steps, features), batch_size=BATCH), layer()])
    counts = {}
    for fused in (False, True):
        path = kerasrnn.export_litert(
            model,
            tmp_path / f"{fused}.tflite",
            sequence_length=steps,
            quantize="dynamic_int8",
            fused=fused,
        )
        counts[fused] = int8_tensors(path)
        assert FUSED not in operators(path) and FUSED_RNN not in operators(path)
    assert counts[True] == counts[False] > 0


@pytest.mark.slow
def test_a_fused_file_shows_its_batch_size_and_refuses_another(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    steps = 3
    model = recurrent_model("keras", "forward", steps)
    path = kerasrnn.export_litert(
        model, tmp_path / "model.tflite", sequence_length=steps, fused=True
    )
    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    (detail,) = runner.get_input_details().values()
    assert detail["shape_signature"].tolist() == [BATCH, steps, FEATURES]
    x = np.zeros((BATCH + 1, steps, FEATURES), "float32")
    with pytest.raises(RuntimeError, match="UNIDIRECTIONAL_SEQUENCE_LSTM"):
        runner(x=x)
