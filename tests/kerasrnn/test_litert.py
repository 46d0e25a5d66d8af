"""export_litert: the .tflite answers as model.predict, read without TensorFlow.

Every exported file is checked in one subprocess that cannot import
TensorFlow, Keras or kerasrnn (a `sys.meta_path` finder refuses them before
anything is imported) and has only NumPy and `ai_edge_litert`: it reads the
signature's names, dtypes and shapes, resizes the batch (and, for looped
exports, the time) dimension, runs the inputs saved here and compares with
the outputs `model.predict` gave for them.
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export.cell_litert import export_litert
from kerasrnn.export.converter import (
    QUANTIZE_OPTIONS,
    check_litert_path,
    check_quantize,
    convert_concrete_functions,
    write_atomically,
)
from tests.isolated import run_without

UNITS = 4
VOCABULARY = 9
FEATURES = 3
LENGTH = 5

#: Branch name -> a recurrent layer factory taking Keras RNN keyword
#: arguments; each kerasrnn cell in `keras.layers.RNN`, stacks of cells, and
#: Keras's own layers.
BRANCHES = {
    "elman": lambda **kw: keras.layers.RNN(kerasrnn.ElmanCell(UNITS), **kw),
    "lstm": lambda **kw: keras.layers.RNN(kerasrnn.LSTMCell(UNITS), **kw),
    "gru": lambda **kw: keras.layers.RNN(kerasrnn.GRUCell(UNITS), **kw),
    "gru_reset_after": lambda **kw: keras.layers.RNN(
        kerasrnn.GRUCell(UNITS, reset_after=True), **kw
    ),
    "leaky": lambda **kw: keras.layers.RNN(
        kerasrnn.LeakyCell(UNITS, alpha=0.3, learn_alpha=True), **kw
    ),
    "temporal_skip": lambda **kw: keras.layers.RNN(kerasrnn.TemporalSkipCell(UNITS, delay=2), **kw),
    "multiscale": lambda **kw: keras.layers.RNN(
        kerasrnn.MultiScaleCell(UNITS, periods=(1, 2)), **kw
    ),
    "deep_transition": lambda **kw: keras.layers.RNN(
        kerasrnn.DeepTransitionCell(UNITS, transition_units=(3,)), **kw
    ),
    "skip_stacked": lambda **kw: keras.layers.RNN(
        kerasrnn.SkipStackedCells([kerasrnn.ElmanCell(3), kerasrnn.LSTMCell(3)]),
        **kw,
    ),
    "keras_stacked": lambda **kw: keras.layers.RNN(
        keras.layers.StackedRNNCells([kerasrnn.GRUCell(3), keras.layers.LSTMCell(3)]),
        **kw,
    ),
    "keras_lstm": lambda **kw: keras.layers.LSTM(UNITS, **kw),
    "keras_gru": lambda **kw: keras.layers.GRU(UNITS, **kw),
    "keras_simple_rnn": lambda **kw: keras.layers.SimpleRNN(UNITS, **kw),
}
#: The branches that are also stacked two layers deep.
STACKED = ("elman", "keras_lstm")


def randomize_biases(model, rng):
    """Non-zero biases (Keras starts them at zero), so a bias bug shows."""
    for weight in model.weights:
        if "bias" in weight.path:
            weight.assign(rng.normal(scale=0.5, size=weight.shape))


def masked_model(rng):
    """Token ids → Embedding(mask_zero) → per branch a Bidirectional layer.

    Every branch returns sequences, both directions reading the mask; two
    branches go on into a forward layer that returns its last output (a
    masked stack). One named output per branch.
    """
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    embedded = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(ids)
    outputs = {}
    for name, make in BRANCHES.items():
        outputs[name] = keras.layers.Bidirectional(make(return_sequences=True))(embedded)
    for name in STACKED:
        outputs[f"stacked_{name}"] = BRANCHES[name]()(outputs[name])
    model = keras.Model(ids, outputs, name="masked")
    randomize_biases(model, rng)
    return model


def plain_model(rng):
    """Float features, no mask → per branch a layer's last output; two
    branches are stacks ending in a Bidirectional layer (merge by sum)."""
    features = keras.Input((None, FEATURES), name="features")
    outputs = {name: make()(features) for name, make in BRANCHES.items()}
    for name in STACKED:
        sequence = BRANCHES[name](return_sequences=True)(features)
        outputs[f"stacked_{name}"] = keras.layers.Bidirectional(BRANCHES[name](), merge_mode="sum")(
            sequence
        )
    model = keras.Model(features, outputs, name="plain")
    randomize_biases(model, rng)
    return model


def quantizable_model(rng):
    """Weights large enough to be quantized: dynamic-range int8 leaves
    matrices under 1024 elements in float32, so these cells have 32 units."""
    features = keras.Input((None, FEATURES), name="features")
    hidden = keras.layers.Bidirectional(
        keras.layers.RNN(kerasrnn.LSTMCell(32), return_sequences=True)
    )(features)
    hidden = keras.layers.RNN(kerasrnn.GRUCell(32))(hidden)
    outputs = {"prediction": keras.layers.Dense(2, name="prediction")(hidden)}
    model = keras.Model(features, outputs, name="quantizable")
    randomize_biases(model, rng)
    return model


#: Layer name -> the (dropout, recurrent_dropout) of its cells in
#: `dropout_model`.
DROPOUT_RATES = {
    "bidirectional_lstm": {(0.4, 0.3)},
    "keras_lstm": {(0.2, 0.25)},
    "stacked_gru_elman": {(0.5, 0.0), (0.0, 0.5)},
}


def dropout_model(rng):
    """Every place a recurrent cell carries dropout: a kerasrnn cell with
    input and recurrent dropout in `Bidirectional`, Keras's `LSTM`, and a
    stack of cells, two layers deep. Inactive at inference: the file must
    answer as `predict` does."""
    features = keras.Input((None, FEATURES), name="features")
    lstm = kerasrnn.LSTMCell(UNITS, dropout=0.4, recurrent_dropout=0.3, seed=1)
    hidden = keras.layers.Bidirectional(
        keras.layers.RNN(lstm, return_sequences=True), name="bidirectional_lstm"
    )(features)
    hidden = keras.layers.LSTM(
        UNITS, dropout=0.2, recurrent_dropout=0.25, return_sequences=True, name="keras_lstm"
    )(hidden)
    stack = keras.layers.StackedRNNCells(
        [kerasrnn.GRUCell(3, dropout=0.5), kerasrnn.ElmanCell(3, recurrent_dropout=0.5)]
    )
    hidden = keras.layers.RNN(stack, name="stacked_gru_elman")(hidden)
    outputs = {"prediction": keras.layers.Dense(2, name="prediction")(hidden)}
    model = keras.Model(features, outputs, name="dropout")
    randomize_biases(model, rng)
    return model


def dropout_rates(model):
    """`DROPOUT_RATES`' layout, read from the model's cells."""
    rates = {}
    for name in DROPOUT_RATES:
        layer = model.get_layer(name)
        layer = getattr(layer, "forward_layer", layer)
        cells = getattr(layer.cell, "cells", [layer.cell])
        rates[name] = {(cell.dropout, cell.recurrent_dropout) for cell in cells}
    return rates


def token_ids(rng, batch, length):
    """Ids in [1, VOCABULARY) with padding (0) at the end of some rows and
    one row padded at the start, as a left-padding client would send."""
    ids = rng.integers(1, VOCABULARY, size=(batch, length)).astype("int32")
    if batch > 1:
        ids[0, length - 2 :] = 0
        ids[-1, :1] = 0
    return ids


# --------------------------------------------------- the clean subprocess
CHECKER = textwrap.dedent(
    """
    import importlib.abc
    import json
    import sys


    class Refuse(importlib.abc.MetaPathFinder):
        BLOCKED = ("tensorflow", "keras", "kerasrnn", "tf_keras")

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.BLOCKED:
                raise ImportError(f"{name} is not importable in this process")
            return None


    sys.meta_path.insert(0, Refuse())

    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    cases = json.load(open(sys.argv[1]))
    report = {}
    for case in cases:
        data = np.load(case["data"])
        interpreter = Interpreter(model_path=case["tflite"])
        runner = interpreter.get_signature_runner("serving_default")
        inputs = runner.get_input_details()
        outputs = runner.get_output_details()
        result = {
            "signatures": list(interpreter.get_signature_list()),
            "inputs": {
                name: [np.dtype(d["dtype"]).name, d["shape_signature"].tolist()]
                for name, d in inputs.items()
            },
            "outputs": {
                name: [np.dtype(d["dtype"]).name, d["shape_signature"].tolist()]
                for name, d in outputs.items()
            },
            "errors": {},
        }
        for run in range(case["runs"]):
            feed = {name: data[f"{run}/in/{name}"] for name in inputs}
            got = runner(**feed)
            for name in outputs:
                want = data[f"{run}/out/{name}"]
                result["errors"][f"{run}/{name}"] = (
                    float(np.max(np.abs(got[name] - want)))
                    if got[name].shape == want.shape
                    else f"shape {got[name].shape} != {want.shape}"
                )
        # The interpreter's own resize path, as a client in C would use it,
        # on an interpreter holding no outputs of the runner's.
        interpreter = Interpreter(model_path=case["tflite"])
        (name, detail), = inputs.items()
        feed = data[f"0/in/{name}"]
        interpreter.resize_tensor_input(detail["index"], feed.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(detail["index"], feed)
        interpreter.invoke()
        for out_name, out_detail in outputs.items():
            got = interpreter.get_tensor(out_detail["index"])
            want = data[f"0/out/{out_name}"]
            result["errors"][f"resized/{out_name}"] = float(np.max(np.abs(got - want)))
        report[case["name"]] = result
    report["modules"] = sorted(
        m for m in sys.modules if m.split(".")[0] in Refuse.BLOCKED
    )
    print(json.dumps(report))
    """
)


def check_without_tensorflow(cases, directory):
    """Run `CHECKER` over `cases` in a subprocess; return its report."""
    script = directory / "check_litert.py"
    script.write_text(CHECKER)
    listing = directory / "cases.json"
    listing.write_text(json.dumps(cases))
    environment = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        [sys.executable, str(script), str(listing)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=directory,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def save_case(directory, name, model, tflite, feeds, names=None):
    """Save the feeds and the model's outputs on them for the checker.

    The first feed's outputs come from `model.predict`; the others from the
    model called eagerly (the same layers: `predict` traces them into a
    graph first, which for these many-layered models costs seconds per
    input shape). `names`: `(input, output)` names in the file of a model
    with one unnamed input and one output; otherwise the model's own.
    """
    arrays = {}
    input_name = names[0] if names else model.inputs[0].name
    for run, feed in enumerate(feeds):
        arrays[f"{run}/in/{input_name}"] = feed
        if run == 0:
            predicted = model.predict(feed, verbose=0)
        else:
            predicted = model(feed, training=False)
        if names:
            predicted = {names[1]: predicted}
        for output, value in predicted.items():
            arrays[f"{run}/out/{output}"] = np.asarray(value, "float32")
    data = directory / f"{name}.npz"
    np.savez(data, **arrays)
    return {"name": name, "tflite": str(tflite), "data": str(data), "runs": len(feeds)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Both models, unrolled and looped, checked in one clean subprocess.

    Returns:
        `(models, report)`: name -> (model, sequence_length), and the
        checker's report.
    """
    directory = tmp_path_factory.mktemp("litert")
    rng = np.random.default_rng(20)
    keras.utils.set_random_seed(20)
    models = {"masked": masked_model(rng), "plain": plain_model(rng), "dropout": dropout_model(rng)}

    def features(batch, length):
        return rng.normal(size=(batch, length, FEATURES)).astype("float32")

    makers = {
        "masked": lambda batch, length: token_ids(rng, batch, length),
        "plain": features,
        "dropout": features,
    }
    cases, exports = [], {}
    for name, model in models.items():
        for sequence_length in (LENGTH, None):
            case = f"{name}_{'unrolled' if sequence_length else 'looped'}"
            tflite = export_litert(
                model, directory / f"{case}.tflite", sequence_length=sequence_length
            )
            # Batch 3 then 1; the looped file also at other lengths.
            shapes = [(3, LENGTH), (1, LENGTH)]
            if sequence_length is None:
                shapes += [(2, 3), (2, 7), (1, 1)]
            feeds = [makers[name](*shape) for shape in shapes]
            cases.append(save_case(directory, case, model, tflite, feeds))
            exports[case] = (model, sequence_length)
    quantizable = quantizable_model(rng)
    feeds = [makers["plain"](16, LENGTH), makers["plain"](1, LENGTH)]
    for quantize in QUANTIZE_OPTIONS:
        case = f"quantized_{quantize}"
        tflite = export_litert(
            quantizable,
            directory / f"{case}.tflite",
            sequence_length=LENGTH,
            quantize=quantize,
        )
        cases.append(save_case(directory, case, quantizable, tflite, feeds))
        exports[case] = (quantizable, os.path.getsize(tflite))
    # A Sequential model: its input has no name of its own, its output is
    # its last layer's; the length it declares stays fixed in the loop.
    sequential = keras.Sequential(
        [
            keras.Input((LENGTH, FEATURES)),
            # Built to unroll, yet exported with a loop: the export's choice.
            keras.layers.LSTM(3, return_sequences=True, unroll=True),
            keras.layers.GRU(3),
            keras.layers.Dense(2, name="scores"),
        ]
    )
    tflite = export_litert(sequential, directory / "sequential.tflite")
    assert sequential.layers[0].unroll and "inner_loop" not in vars(sequential.layers[0])
    feeds = [makers["plain"](2, LENGTH), makers["plain"](1, LENGTH)]
    cases.append(
        save_case(directory, "sequential", sequential, tflite, feeds, ("inputs", "scores"))
    )
    return exports, check_without_tensorflow(cases, directory)


CASES = ["masked_unrolled", "masked_looped", "plain_unrolled", "plain_looped"]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["dropout_unrolled", "dropout_looped"])
def test_dropout_is_inactive_in_the_file_as_in_predict(exported, case):
    errors = exported[1][case]["errors"]
    assert errors and max(errors.values()) <= 1e-5
    # The export turned the rates off while it traced, and gave them back.
    assert dropout_rates(exported[0][case][0]) == DROPOUT_RATES


@pytest.mark.slow
def test_a_sequential_model_is_named_inputs_and_by_its_last_layer(exported):
    result = exported[1]["sequential"]
    assert result["inputs"] == {"inputs": ["float32", [-1, LENGTH, FEATURES]]}
    assert result["outputs"] == {"scores": ["float32", [-1, 2]]}
    assert result["errors"] and max(result["errors"].values()) <= 1e-5


@pytest.mark.slow
def test_checker_imported_neither_tensorflow_nor_kerasrnn(exported):
    _, report = exported
    assert report["modules"] == []


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_litert_outputs_equal_model_predict(exported, case):
    errors = exported[1][case]["errors"]
    assert len(errors) >= (len(BRANCHES) + len(STACKED)) * 3
    bad = {key: error for key, error in errors.items() if not error <= 1e-5}
    assert not bad


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_signature_names_dtypes_and_shapes(exported, case):
    exports, report = exported
    model, sequence_length = exports[case]
    result = report[case]
    assert result["signatures"] == ["serving_default"]
    time = sequence_length if sequence_length else -1
    if case.startswith("masked"):
        assert result["inputs"] == {"token_ids": ["int32", [-1, time]]}
    else:
        assert result["inputs"] == {"features": ["float32", [-1, time, FEATURES]]}
    expected = {}
    for name, tensor in model.output.items():
        shape = [-1, *[time if size is None else size for size in tensor.shape[1:]]]
        expected[name] = ["float32", shape]
    assert result["outputs"] == expected


@pytest.mark.slow
def test_quantized_files_are_smaller_and_close(exported):
    """float16 and dynamic-range int8 shrink the file and stay close.

    Tolerances, for outputs of magnitude about 1: float16 keeps 11
    significant bits of every weight (relative error ≤ 2^-12 ≈ 2.4e-4); a
    pre-activation sums about a hundred weight × input products of which
    |input| ≤ 1 for the states, so it moves by at most about 1e-3, and tanh
    and sigmoid do not amplify it: 2e-3. Dynamic-range int8 rounds each
    weight to 1/254 of its output channel's largest weight (≤ 0.4%) and each
    activation row likewise on the fly; about 2% of the output scale:
    2e-2. Measured: 1.7e-4 and 1.8e-3.
    """
    exports, report = exported
    size = {q: exports[f"quantized_{q}"][1] for q in QUANTIZE_OPTIONS}
    assert size["float16"] < size[None]
    assert size["dynamic_int8"] < size[None]
    tolerance = {None: 1e-5, "float16": 2e-3, "dynamic_int8": 2e-2}
    for quantize in QUANTIZE_OPTIONS:
        errors = report[f"quantized_{quantize}"]["errors"]
        assert errors and max(errors.values()) <= tolerance[quantize], quantize
    # Quantizing changes the numbers: the checks above compare something.
    assert max(report["quantized_dynamic_int8"]["errors"].values()) > 1e-5


# ----------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def small_model():
    features = keras.Input((None, FEATURES), name="features")
    hidden = keras.layers.RNN(kerasrnn.ElmanCell(3))(features)
    return keras.Model(features, keras.layers.Dense(1)(hidden))


@pytest.mark.parametrize("value", [0, -2, 2.5, "5", True, np.bool_(True)])
def test_sequence_length_must_be_a_positive_integer(small_model, tmp_path, value):
    target = tmp_path / "model.tflite"
    with pytest.raises(ValueError, match="sequence_length") as error:
        export_litert(small_model, target, sequence_length=value)
    assert repr(value) in str(error.value)
    assert "positive integer" in str(error.value)
    assert not target.exists()


def test_unrolled_layers_need_a_sequence_length(tmp_path):
    features = keras.Input((None, FEATURES), name="features")
    hidden = keras.layers.RNN(kerasrnn.GRUCell(3), unroll=True, name="unrolled_gru")(features)
    model = keras.Model(features, hidden)
    target = tmp_path / "model.tflite"
    with pytest.raises(
        ValueError, match=r"`sequence_length`.*unroll=True.*'unrolled_gru'.*sequence_length=None"
    ):
        export_litert(model, target)
    assert not target.exists()


def test_sequence_length_must_match_a_fixed_input_length(tmp_path):
    features = keras.Input((6, FEATURES), name="features")
    model = keras.Model(features, keras.layers.RNN(kerasrnn.ElmanCell(3))(features))
    with pytest.raises(ValueError, match=r"input length.*\(None, 6, 3\).*sequence_length=4"):
        export_litert(model, tmp_path / "model.tflite", sequence_length=4)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"batch_size": 10**9, "sequence_length": 3}, r"`batch_size` must be at most 65,536"),
        ({"sequence_length": 10**6}, r"`sequence_length` must be at most 4,096"),
        (
            {"batch_size": 65_536, "sequence_length": 4_096},
            r"`batch_size` and `sequence_length`.*'features'.*\(65536, 4096, 3\)",
        ),
    ],
)
def test_sizes_that_cannot_finish_are_refused_before_any_work(
    small_model, tmp_path, options, message
):
    target = tmp_path / "model.tflite"
    with pytest.raises(ValueError, match=message) as error:
        export_litert(small_model, target, **options)
    assert "Received:" in str(error.value)
    assert not target.exists()


@pytest.mark.slow
def test_an_initial_state_input_keeps_its_shape_under_a_sequence_length(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    x = keras.Input((None, FEATURES), name="x")
    h0 = keras.Input((UNITS + 1,), name="h0")
    hidden = keras.layers.RNN(kerasrnn.ElmanCell(UNITS + 1))(x, initial_state=[h0])
    model = keras.Model([x, h0], keras.layers.Dense(2, name="y")(hidden))
    path = export_litert(model, tmp_path / "model.tflite", sequence_length=LENGTH)
    runner = Interpreter(str(path)).get_signature_runner("serving_default")
    shapes = {name: d["shape_signature"].tolist() for name, d in runner.get_input_details().items()}
    assert shapes == {"x": [-1, LENGTH, FEATURES], "h0": [-1, UNITS + 1]}
    rng = np.random.default_rng(4)
    batch = rng.normal(size=(2, LENGTH, FEATURES)).astype("float32")
    state = rng.normal(size=(2, UNITS + 1)).astype("float32")
    expected = model.predict([batch, state], verbose=0)
    np.testing.assert_allclose(runner(x=batch, h0=state)["y"], expected, atol=1e-5)
    # The state matters: zeros answer otherwise.
    assert not np.allclose(runner(x=batch, h0=0 * state)["y"], expected, atol=1e-3)


@pytest.mark.parametrize("value", ["int8", "FLOAT16", 16, ["float16"]])
def test_quantize_must_be_a_known_option(small_model, tmp_path, value):
    with pytest.raises(ValueError, match="quantize") as error:
        export_litert(small_model, tmp_path / "model.tflite", quantize=value)
    assert repr(value) in str(error.value)
    assert "'dynamic_int8'" in str(error.value)
    assert check_quantize("float16") == "float16"
    assert check_quantize(None) is None


def test_path_must_not_be_a_directory(small_model, tmp_path):
    with pytest.raises(ValueError, match="path.*directory") as error:
        export_litert(small_model, tmp_path)
    assert repr(str(tmp_path)) in str(error.value)


def test_path_parent_must_exist(small_model, tmp_path):
    target = tmp_path / "missing" / "model.tflite"
    with pytest.raises(ValueError, match="path.*does not exist"):
        export_litert(small_model, target)
    assert not target.parent.exists()


@pytest.mark.parametrize("value", [42, b"model.tflite", None])
def test_path_must_be_a_path(small_model, value):
    with pytest.raises(TypeError, match="path") as error:
        export_litert(small_model, value)
    assert repr(value) in str(error.value)


def test_check_litert_path_returns_a_path(tmp_path):
    assert check_litert_path(str(tmp_path / "a.tflite")) == tmp_path / "a.tflite"


@pytest.mark.parametrize("value", ["model", keras.layers.RNN(kerasrnn.ElmanCell(3)), np.zeros(3)])
def test_model_must_be_a_keras_model(tmp_path, value):
    with pytest.raises(TypeError, match="model.*keras.Model"):
        export_litert(value, tmp_path / "model.tflite")


def test_model_must_have_a_recurrent_layer(tmp_path):
    features = keras.Input((None, FEATURES), name="features")
    model = keras.Model(features, keras.layers.Dense(2, name="dense_only")(features))
    with pytest.raises(ValueError, match="recurrent layer.*dense_only"):
        export_litert(model, tmp_path / "model.tflite")


def test_stateful_layers_are_refused(tmp_path):
    features = keras.Input((None, FEATURES), batch_size=2, name="features")
    hidden = keras.layers.RNN(kerasrnn.ElmanCell(3), stateful=True, name="carry")(features)
    with pytest.raises(ValueError, match="stateful.*carry"):
        export_litert(keras.Model(features, hidden), tmp_path / "model.tflite")


# ---------------------------------------------------- unsupported ops
class InverseErrorFunction(keras.layers.Layer):
    """erf⁻¹ of its input: TensorFlow's Erfinv has no LiteRT builtin."""

    def call(self, inputs):
        return keras.ops.erfinv(0.5 * keras.ops.tanh(inputs))


@pytest.mark.slow
def test_an_op_without_builtin_names_op_and_layer_and_writes_nothing(tmp_path):
    features = keras.Input((None, FEATURES), name="features")
    hidden = keras.layers.RNN(kerasrnn.GRUCell(3), return_sequences=True)(features)
    outputs = InverseErrorFunction(name="inverse_erf")(hidden)
    model = keras.Model(features, outputs)
    target = tmp_path / "model.tflite"
    target.write_bytes(b"an earlier export")
    with pytest.raises(ValueError) as error:
        export_litert(model, target, sequence_length=4)
    message = str(error.value)
    assert "Erfinv" in message and "layer 'inverse_erf'" in message
    assert "builtin" in message
    assert target.read_bytes() == b"an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tflite"]


# -------------------------------------------------- the shared core
def test_write_atomically_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "model.tflite"
    write_atomically(target, b"first")
    write_atomically(target, b"second")
    assert target.read_bytes() == b"second"
    with pytest.raises(TypeError):
        write_atomically(target, "text, not bytes")
    assert target.read_bytes() == b"second"
    assert [p.name for p in tmp_path.iterdir()] == ["model.tflite"]


def test_write_atomically_gives_the_mode_open_gives(tmp_path):
    # A run's model.tflite is read by other users and services, as the
    # SavedModel beside it is: readable by its owner only would break them.
    reference = tmp_path / "written_with_open"
    reference.write_bytes(b"")
    target = tmp_path / "model.tflite"
    write_atomically(target, b"content")
    assert target.stat().st_mode == reference.stat().st_mode


@pytest.mark.slow
def test_convert_concrete_functions_keeps_every_signature_and_name():
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    weights = tf.Variable([[1.0, -2.0], [0.5, 3.0]])

    @tf.function(
        input_signature=[
            tf.TensorSpec((None, 2), tf.float32, name="left"),
            tf.TensorSpec((None, 2), tf.float32, name="right"),
        ]
    )
    def combine(left, right):
        return {"product": tf.matmul(left, weights), "total": left + right}

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.int32, name="ids")])
    def double(ids):
        return {"doubled": 2 * ids}

    content = convert_concrete_functions(
        {
            "serving_default": combine.get_concrete_function(),
            "double": double.get_concrete_function(),
        }
    )
    interpreter = Interpreter(model_content=content)
    assert interpreter.get_signature_list() == {
        "double": {"inputs": ["ids"], "outputs": ["doubled"]},
        "serving_default": {"inputs": ["left", "right"], "outputs": ["product", "total"]},
    }
    left = np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]], "float32")
    right = np.ones((3, 2), "float32")
    got = interpreter.get_signature_runner("serving_default")(left=left, right=right)
    # Hand-worked: [1, 2] @ [[1, -2], [0.5, 3]] = [2, 4], and so on.
    np.testing.assert_allclose(got["product"], [[2, 4], [5, 6], [0.5, 3]])
    np.testing.assert_allclose(got["total"], left + 1)
    doubled = interpreter.get_signature_runner("double")(ids=np.array([1, -4], "int32"))
    np.testing.assert_array_equal(doubled["doubled"], [2, -8])


def test_slices_that_copy_their_input_are_removed():
    """`x[:, None]` converts to a RESHAPE and a STRIDED_SLICE that copies its
    result whole, which the export removes; a slice that takes part of its
    input stays. Both files answer as NumPy at two batch sizes."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="x")])
    def new_axis(x):
        return {"y": x[:, None] * 2.0}

    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="x")])
    def tail(x):
        return {"y": x[:, None, 1:] * 2.0}

    for function, reference, slices in (
        (new_axis, lambda x: x[:, None] * 2, 0),
        (tail, lambda x: x[:, None, 1:] * 2, 1),
    ):
        content = convert_concrete_functions({"serving_default": function.get_concrete_function()})
        kinds = kerasrnn.count_litert_operators(content)["serving_default"]
        assert kinds.get("STRIDED_SLICE", 0) == slices, kinds
        runner = Interpreter(model_content=content).get_signature_runner()
        for rows in (1, 4):
            x = np.arange(3 * rows, dtype="float32").reshape(rows, 3)
            np.testing.assert_array_equal(runner(x=x)["y"], reference(x))


def test_convert_concrete_functions_wants_dict_outputs():
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.float32, name="x")])
    def bare(x):
        return x

    with pytest.raises(ValueError, match="dict of named tensors"):
        convert_concrete_functions({"serving_default": bare.get_concrete_function()})
    with pytest.raises(ValueError, match="functions"):
        convert_concrete_functions({})
    with pytest.raises(ValueError, match="quantize"):
        convert_concrete_functions(
            {"serving_default": bare.get_concrete_function()}, quantize="int4"
        )


# ------------------------------------------------------------- streaming
#: The example client, run where neither TensorFlow nor kerasrnn imports.
STREAMING_CLIENT = """
import runpy, sys
sys.argv = ["litert_streaming.py", *sys.argv[1:]]
try:
    runpy.run_path("examples/litert_streaming.py", run_name="__main__")
except SystemExit as exit:
    assert exit.code == 0, exit.code
"""


def streaming_models(rng):
    """A stack returning every step's output (dropout in its first cell,
    a Keras layer, stacked cells), and token ids read to a last output;
    both mask their padding (zero features, id 0), at whose steps Keras
    outputs the previous step's output."""
    features = keras.Input((None, FEATURES), name="features")
    masked = keras.layers.Masking(0.0)(features)
    hidden = keras.layers.RNN(
        kerasrnn.LSTMCell(UNITS, dropout=0.2), return_sequences=True, name="lstm"
    )(masked)
    hidden = keras.layers.GRU(3, return_sequences=True, name="gru")(hidden)
    stack = keras.layers.StackedRNNCells([kerasrnn.ElmanCell(3), kerasrnn.GRUCell(2)])
    hidden = keras.layers.RNN(stack, return_sequences=True, name="stack")(hidden)
    every_step = keras.Model(
        features, keras.layers.Dense(2, name="prediction")(hidden), name="every_step"
    )
    ids = keras.Input((None,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(ids)
    last = keras.layers.RNN(kerasrnn.LeakyCell(UNITS, alpha=0.4), name="leaky")(embedded)
    last_output = keras.Model(ids, keras.layers.Dense(1)(last), name="last_output")
    for model in (every_step, last_output):
        randomize_biases(model, rng)
    return {"every_step": every_step, "last_output": last_output}


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """name -> (model, .tflite path, sequence, the client's outputs)."""
    directory = tmp_path_factory.mktemp("streaming")
    rng = np.random.default_rng(30)
    keras.utils.set_random_seed(30)
    found = {}
    for name, model in streaming_models(rng).items():
        tflite = export_litert(
            model, directory / f"{name}.tflite", sequence_length=LENGTH, streaming=True
        )
        if name == "every_step":
            sequence = rng.normal(size=(2, 9, FEATURES)).astype("float32")
        else:
            sequence = rng.integers(1, VOCABULARY, size=(2, 9)).astype("int32")
        # Padding inside a row and at the other's end.
        sequence[0, 3] = 0
        sequence[1, 7:] = 0
        np.save(directory / f"{name}.npy", sequence)
        outputs = directory / f"{name}_outputs.npy"
        run_without(
            ("tensorflow", "keras", "kerasrnn"),
            STREAMING_CLIENT,
            tflite,
            directory / f"{name}.npy",
            outputs,
        )
        found[name] = (model, tflite, sequence, np.load(outputs))
    return found


@pytest.mark.slow
def test_stepping_from_zero_states_gives_the_whole_sequence_outputs(streamed):
    model, _, sequence, stepped = streamed["every_step"]
    # Nine steps, longer than the whole-sequence signature's five: the step
    # signature's memory does not grow with the length.
    np.testing.assert_allclose(stepped, model.predict(sequence, verbose=0), atol=1e-5)


@pytest.mark.slow
def test_a_last_output_model_streams_the_output_of_every_prefix(streamed):
    model, _, sequence, stepped = streamed["last_output"]
    prefixes = [model.predict(sequence[:, : time + 1], verbose=0) for time in range(9)]
    np.testing.assert_allclose(stepped, np.stack(prefixes, axis=1), atol=1e-5)


@pytest.mark.slow
def test_the_step_signature_carries_every_state_in_layer_order(streamed):
    from ai_edge_litert.interpreter import Interpreter

    _, tflite, _, _ = streamed["every_step"]
    interpreter = Interpreter(model_path=str(tflite))
    states = [f"state_{index}" for index in range(5)]  # LSTM h, c; GRU; Elman; GRU
    assert interpreter.get_signature_list() == {
        "serving_default": {"inputs": ["features"], "outputs": ["prediction"]},
        "step": {"inputs": ["inputs", *states], "outputs": ["outputs", *states]},
    }
    runner = interpreter.get_signature_runner("step")
    shapes = {
        name: detail["shape_signature"].tolist()
        for name, detail in runner.get_input_details().items()
    }
    assert shapes == {
        "inputs": [-1, FEATURES],
        "state_0": [-1, UNITS],
        "state_1": [-1, UNITS],
        "state_2": [-1, 3],
        "state_3": [-1, 3],
        "state_4": [-1, 2],
    }


def streaming_refusals():
    features = keras.Input((None, FEATURES))
    return {
        "bidirectional": keras.Model(
            features, keras.layers.Bidirectional(keras.layers.LSTM(2), name="both_ways")(features)
        ),
        "go_backwards": keras.Model(
            features, keras.layers.GRU(2, go_backwards=True, name="backwards")(features)
        ),
        "pooling": keras.Model(
            features,
            keras.layers.GlobalAveragePooling1D()(
                keras.layers.LSTM(2, return_sequences=True)(features)
            ),
        ),
        "cropping": keras.Model(
            features,
            keras.layers.LSTM(2)(keras.layers.Cropping1D((1, 1), name="crop")(features)),
        ),
    }


@pytest.mark.parametrize(
    "case, message",
    [
        ("bidirectional", r"cannot step layer 'both_ways'.*Bidirectional"),
        ("go_backwards", r"cannot step layers \['backwards'\]"),
        ("pooling", r"stepped one step at a time does not give its whole-sequence output"),
        ("cropping", r"cannot step layer 'crop' \(Cropping1D\): it fails on an input of one"),
    ],
)
def test_what_cannot_stream_is_refused_by_name(tmp_path, case, message):
    target = tmp_path / "model.tflite"
    with pytest.raises(ValueError, match=f"`streaming`.*{message}"):
        export_litert(streaming_refusals()[case], target, streaming=True)
    assert not target.exists()


def test_streaming_must_be_a_bool(small_model, tmp_path):
    with pytest.raises(ValueError, match="streaming"):
        export_litert(small_model, tmp_path / "model.tflite", streaming="yes")


@pytest.mark.slow
def test_operators_are_counted_per_signature_as_the_interpreter_lists_them(streamed, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    model, tflite, _, _ = streamed["every_step"]
    counts = kerasrnn.count_litert_operators(tflite)
    assert list(counts) == ["serving_default", "step"]
    # The interpreter lists the operators of a file's first graph: export
    # the whole-sequence signature alone and hold the counts to its list.
    alone = export_litert(model, tmp_path / "alone.tflite", sequence_length=LENGTH)
    listed = [detail["op_name"] for detail in Interpreter(str(alone))._get_ops_details()]
    assert kerasrnn.count_litert_operators(alone.read_bytes()) == {
        "serving_default": {name: listed.count(name) for name in set(listed)}
    }
    assert counts["serving_default"] == {name: listed.count(name) for name in set(listed)}
    # One step of five recurrent cells and a Dense layer: far fewer than the
    # unrolled five steps.
    assert sum(counts["step"].values()) < sum(counts["serving_default"].values())
    assert counts["step"]["FULLY_CONNECTED"] >= 5


#: The example client, its exit status the process's.
STREAMING_CLIENT_EXITING = """
import runpy, sys
sys.argv = ["litert_streaming.py", *sys.argv[1:]]
runpy.run_path("examples/litert_streaming.py", run_name="__main__")
"""


@pytest.fixture(scope="module")
def fused_streaming_file(tmp_path_factory):
    """(model, file): a streaming file with fused LSTM operators, fixed at
    batch 2."""
    features = keras.Input((None, FEATURES))
    hidden = keras.layers.RNN(kerasrnn.LSTMCell(UNITS), return_sequences=True)(features)
    model = keras.Model(features, keras.layers.Dense(2)(hidden))
    path = tmp_path_factory.mktemp("fused") / "fused.tflite"
    return model, export_litert(
        model, path, sequence_length=LENGTH, streaming=True, batch_size=2, fused=True
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    ["no time steps", "no rows", "other features", "outputs folder missing", "folder as model",
     "json as sequence", "fused at batch 2, 1 row", "fused at batch 2, 3 rows"],
)
def test_the_streaming_client_refuses_in_one_line_what_the_file_cannot_run(
    streamed, fused_streaming_file, tmp_path, case
):
    _, every_step, _, _ = streamed["every_step"]
    model, sequence, outputs = every_step, tmp_path / "sequence.npy", tmp_path / "outputs.npy"
    shape = (2, 9, FEATURES)
    if case == "no time steps":
        shape = (0, FEATURES)  # [time, *features]: one row of no steps
        expected = f"{sequence} has no time steps (shape (1, 0, {FEATURES}))"
    elif case == "no rows":
        shape = (0, 9, FEATURES)
        expected = f"{sequence} has no rows (shape (0, 9, {FEATURES}))"
    elif case == "other features":
        shape = (9, FEATURES + 1)
        expected = (
            f"{sequence} has steps of shape [{FEATURES + 1}] (sequence shape (1, 9, "
            f"{FEATURES + 1})); {model} takes steps of shape [{FEATURES}]"
        )
    elif case == "outputs folder missing":
        outputs = tmp_path / "missing" / "outputs.npy"
        expected = f"the folder {outputs.parent} of {outputs} does not exist"
    elif case == "folder as model":
        model = tmp_path
        expected = f"{tmp_path} is a folder; MODEL is a .tflite file"
    elif case == "json as sequence":
        sequence = tmp_path / "sequence.json"
        sequence.write_text(json.dumps(np.zeros(shape).tolist()))
        expected = f"{sequence} is not a NumPy .npy file"
    else:
        rows = 1 if "1 row" in case else 3
        model, shape = fused_streaming_file[1], (rows, 9, FEATURES)
        expected = (
            f"{model} is fixed at batch 2 (exported with batch_size=2); {sequence} has "
            f"{rows} row{'' if rows == 1 else 's'}: pass 2 rows"
        )
    if sequence.suffix == ".npy":
        np.save(sequence, np.ones(shape, "float32"))
    completed = run_without(
        ("tensorflow", "keras", "kerasrnn"), STREAMING_CLIENT_EXITING, model, sequence, outputs,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    (line,) = completed.stderr.splitlines()
    assert line.startswith(f"litert_streaming.py: {expected}"), line
    assert not outputs.exists()


@pytest.mark.slow
def test_the_streaming_client_runs_a_fused_file_at_its_batch(fused_streaming_file, tmp_path):
    model, fused = fused_streaming_file
    # Nine steps, more than the file's whole-sequence length.
    sequence = np.random.default_rng(3).normal(size=(2, 9, FEATURES)).astype("float32")
    np.save(tmp_path / "sequence.npy", sequence)
    run_without(
        ("tensorflow", "keras", "kerasrnn"), STREAMING_CLIENT_EXITING, fused,
        tmp_path / "sequence.npy", tmp_path / "outputs.npy",
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "outputs.npy"), model.predict(sequence, verbose=0), atol=1e-5
    )
