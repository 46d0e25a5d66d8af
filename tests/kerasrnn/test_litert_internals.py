"""The names of LiteRT's flatbuffer schema kerasrnn's exporters use are
still in `ai_edge_litert.schema_py_generated` and in TensorFlow's copy
(read where ai-edge-litert is not installed), through
kerasrnn/litert_internals.py, and a file it parses and serializes again
still runs.

If an ai-edge-litert release moves or renames one, these tests fail first,
naming it and the version, instead of an export failing on an
AttributeError in the middle of a rewrite.
"""

import importlib.metadata
import pathlib
import re

import numpy as np
import pytest


def schema_names_used():
    """Every `schema.A` and `schema.A.B` the kerasrnn modules read."""
    import kerasrnn

    package = pathlib.Path(kerasrnn.__file__).parent
    pattern = re.compile(r"\bschema\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)")
    return sorted(
        {
            name
            for path in package.rglob("*.py")
            for name in pattern.findall(path.read_text())
        }
    )


def schema_copies():
    """(name, version, module) of each copy of the schema the exporters may
    read: ai-edge-litert's, and TensorFlow's where that is not installed."""
    import tensorflow as tf
    from ai_edge_litert import schema_py_generated

    from kerasrnn.tensorflow_internals import lite_schema

    return [
        ("ai-edge-litert", importlib.metadata.version("ai-edge-litert"), schema_py_generated),
        ("TensorFlow", tf.__version__, lite_schema),
    ]


@pytest.mark.parametrize("copy", [0, 1], ids=["ai_edge_litert", "tensorflow"])
def test_every_schema_name_the_exporters_use_exists(copy):
    owner, version, schema = schema_copies()[copy]
    used = schema_names_used()
    assert "ModelT.InitFromPackedBuf" in used and "BuiltinOperator.WHILE" in used
    missing = []
    for name in used:
        found = schema
        for part in name.split("."):
            found = getattr(found, part, None)
        if found is None:
            missing.append(name)
    assert not missing, (
        f"{owner} {version}'s schema_py_generated has no {missing}, which "
        "kerasrnn's exporters read through kerasrnn/litert_internals.py"
    )


def test_the_schema_is_read_from_the_litert_runtime_where_it_is_installed():
    from ai_edge_litert import schema_py_generated

    from kerasrnn import litert_internals

    assert litert_internals.schema is schema_py_generated


def test_a_parsed_and_serialized_file_runs_as_before():
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from kerasrnn.export.converter import convert_concrete_functions
    from kerasrnn.litert_internals import FILE_IDENTIFIER, parsed, serialized

    @tf.function(input_signature=[tf.TensorSpec((None, 2), tf.float32, name="x")])
    def affine(x):
        return {"y": tf.matmul(x, tf.constant([[1.0, 2.0], [3.0, 4.0]])) + 1.0}

    content = convert_concrete_functions({"serving_default": affine.get_concrete_function()})
    again = serialized(parsed(content))
    assert again[4:8] == FILE_IDENTIFIER
    runner = Interpreter(model_content=again).get_signature_runner()
    # Hand-worked: [1, 1] @ [[1, 2], [3, 4]] + 1 = [5, 7].
    np.testing.assert_allclose(runner(x=np.ones((1, 2), "float32"))["y"], [[5.0, 7.0]])
