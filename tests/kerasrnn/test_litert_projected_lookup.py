"""An embedding lookup followed by its projection is one lookup of the
projected table in a LiteRT file (`kerasrnn.export.projected_lookup`),
held to NumPy's E[y] W + b; a projection the table cannot stand for keeps
its FULLY_CONNECTED."""

import keras
import numpy as np
import pytest

import kerasrnn

VOCABULARY = 7
EMBEDDING = 3
UNITS = 5


def lookup_model(ids_shape, activation=None):
    ids = keras.Input(ids_shape, batch_size=2, dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, EMBEDDING)(ids)
    model = keras.Model(ids, keras.layers.Dense(UNITS, activation=activation)(embedded))
    rng = np.random.default_rng(5)
    for weight in model.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    return model


def exported(model, ids):
    """The model converted by `convert_concrete_functions`: its output for
    `ids` through the interpreter, and its operators."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from kerasrnn.export.converter import convert_concrete_functions

    spec = tf.TensorSpec(ids.shape, tf.int32, name="ids")
    function = tf.function(lambda ids: {"projected": model(ids)}, input_signature=[spec])
    content = convert_concrete_functions({"serving_default": function.get_concrete_function()})
    runner = Interpreter(model_content=content).get_signature_runner("serving_default")
    return runner(ids=ids)["projected"], kerasrnn.count_litert_operators(content)["serving_default"]


def numpy_projection(model, ids, activation=lambda z: z):
    embedding, kernel, bias = (np.asarray(weight) for weight in model.weights)
    return activation(embedding[ids] @ kernel + bias)


@pytest.mark.parametrize("ids_shape", [(), (4,)], ids=["one id per row", "a sequence per row"])
def test_lookup_and_projection_become_one_lookup(ids_shape):
    model = lookup_model(ids_shape)
    ids = np.random.default_rng(0).integers(0, VOCABULARY, (2, *ids_shape)).astype("int32")
    output, operators = exported(model, ids)
    np.testing.assert_allclose(output, numpy_projection(model, ids), rtol=1e-5, atol=1e-6)
    assert "FULLY_CONNECTED" not in operators, operators
    assert operators["GATHER"] == 1


def test_projection_with_an_activation_keeps_its_operator():
    model = lookup_model((), activation="relu")
    ids = np.arange(2, dtype="int32")
    output, operators = exported(model, ids)
    expected = numpy_projection(model, ids, lambda z: np.maximum(z, 0.0))
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-6)
    assert operators["FULLY_CONNECTED"] == 1


def test_decoder_steps_read_their_projected_embedding(tmp_path):
    from kerasrnn import seq2seq
    from kerasrnn.export.flatbuffer_edits import builtin
    from kerasrnn.litert_internals import schema

    # Without input feeding the embedding is the cell's whole input.
    model = seq2seq.Seq2Seq(
        8, 9, kerasrnn.LSTMCell(6), embedding_dim=4, attention="luong", input_feeding=False
    )
    letters = seq2seq.Vocabulary(list("abcd"))
    phonemes = seq2seq.Vocabulary(list("wxyzv"))
    path = tmp_path / "model.tflite"
    seq2seq.export_litert(
        model, path, letters, phonemes, beam_width=2, max_source_length=3, max_target_length=4
    )
    parsed = schema.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    # The decoder steps in the body of the beam search's loop.
    (loop,) = [
        op for op in parsed.subgraphs[0].operators
        if builtin(parsed, op) == schema.BuiltinOperator.WHILE
    ]
    subgraph = parsed.subgraphs[loop.builtinOptions.bodySubgraphIndex]
    # Lookups in a constant table (the states' reorder gathers computed rows).
    gathered = {
        int(op.outputs[0])
        for op in subgraph.operators
        if builtin(parsed, op) == schema.BuiltinOperator.GATHER
        and subgraph.tensors[int(op.inputs[0])].buffer > 0
        and parsed.buffers[subgraph.tensors[int(op.inputs[0])].buffer].data is not None
    }
    assert gathered
    projections = [
        op for op in subgraph.operators
        if builtin(parsed, op) == schema.BuiltinOperator.FULLY_CONNECTED
    ]
    assert projections
    assert not any(int(op.inputs[0]) in gathered for op in projections)
