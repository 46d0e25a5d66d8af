"""Each edit of `kerasrnn.export.rewrites.REWRITES` still fires on what the
installed converter writes, and the file it makes answers as the model
(`predict`, or NumPy for a bare function); an edit that makes the answer
right is shown to be needed: without it the file answers otherwise.

A rewrite fires when, applied to the file written without it, it changes
something; applied to the file written with it, it finds nothing left.
"""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.export.rewrites import REWRITES, rewrites_off
from kerasrnn.litert_internals import parsed
from tests.kerasrnn.test_litert_fused import counting_lstm

BATCH = 2
STEPS = 4


def runner(content):
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_content=content).get_signature_runner("serving_default")


def exported(model, tmp_path, name, **options):
    """The file's bytes written with every rewrite, and without `name`."""
    files = {}
    for label, off in (("with", ()), ("without", (name,))):
        with rewrites_off(*off):
            path = kerasrnn.export_litert(model, tmp_path / f"{label}.tflite", **options)
        files[label] = path.read_bytes()
    return files


def weighted(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    return model


def fused_case(cell, features=2):
    x = keras.Input((STEPS, features), batch_size=BATCH, name="x")
    model = weighted(keras.Model(x, keras.layers.RNN(cell, return_sequences=True)(x)), 1)
    inputs = np.random.default_rng(2).normal(size=(3, BATCH, STEPS, features)).astype("float32")
    return model, {"sequence_length": STEPS, "fused": True}, [{"x": x} for x in inputs]


def cell_clip_case():
    model, sequence = counting_lstm()
    return model, {"sequence_length": sequence.shape[1], "fused": True}, [{"x": sequence}]


def lookup_case(batch_size=BATCH, steps=STEPS):
    # An embedding and its projection (projected_lookup) before a loop; one
    # over any length and batch (static_loops) without `batch_size`, `steps`.
    ids = keras.Input((steps,), batch_size=batch_size, dtype="int32", name="ids")
    embedded = keras.layers.Embedding(7, 3)(ids)
    hidden = keras.layers.RNN(kerasrnn.ElmanCell(4))(keras.layers.Dense(5)(embedded))
    model = weighted(keras.Model(ids, hidden), 3)
    calls = [{"ids": np.random.default_rng(4).integers(0, 7, (BATCH, STEPS)).astype("int32")}]
    return model, {}, calls


#: name -> (a model it fires on, export options, the calls made in turn,
#: whether the file answers otherwise without it)
CASES = {
    "cell_clip": (cell_clip_case, True),
    "sequence_rnn": (lambda: fused_case(kerasrnn.ElmanCell(3)), True),
    # Three calls in a row: without zeroing, a call starts from the states
    # the one before left.
    "zeroed_states": (lambda: fused_case(keras.layers.LSTMCell(3)), True),
    "projected_lookup": (lookup_case, False),
    "static_loops": (lambda: lookup_case(None, None), False),
}


def test_every_rewrite_has_a_case():
    assert sorted([*CASES, "identity_slices"]) == sorted(r.name for r in REWRITES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rewrite_fires_and_the_file_answers_as_predict(tmp_path, name):
    (rewrite,) = [rewrite for rewrite in REWRITES if rewrite.name == name]
    make, needed = CASES[name]
    model, options, calls = make()
    files = exported(model, tmp_path, name, **options)
    assert rewrite.apply(parsed(files["without"]), model), f"{name} no longer fires"
    assert not rewrite.apply(parsed(files["with"]), model)
    errors = {}
    for label, content in files.items():
        run = runner(content)
        errors[label] = max(
            float(np.abs(run(**call)[model.output_names[0]] - model.predict(
                list(call.values())[0], verbose=0)).max())
            for call in calls
        )
    assert errors["with"] < 1e-5, errors
    if needed:
        assert errors["without"] > 1e-3, errors


@pytest.mark.slow
def test_identity_slices_fires_and_the_file_answers_as_numpy():
    import tensorflow as tf

    from kerasrnn.export.converter import convert_concrete_functions

    (rewrite,) = [rewrite for rewrite in REWRITES if rewrite.name == "identity_slices"]

    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="x")])
    def new_axis(x):
        return {"y": x[:, None] * 2.0}

    files = {}
    for label, off in (("with", ()), ("without", ("identity_slices",))):
        with rewrites_off(*off):
            files[label] = convert_concrete_functions(
                {"serving_default": new_axis.get_concrete_function()}
            )
    assert rewrite.apply(parsed(files["without"]), None), "identity_slices no longer fires"
    assert not rewrite.apply(parsed(files["with"]), None)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for content in files.values():
        np.testing.assert_array_equal(runner(content)(x=x)["y"], x[:, None] * 2)


def test_an_unknown_rewrite_is_refused_by_name():
    with pytest.raises(ValueError, match=r"Unknown rewrites \['fold'\]"):
        with rewrites_off("fold"):
            pass
