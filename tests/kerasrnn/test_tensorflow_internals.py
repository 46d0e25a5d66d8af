"""The private TensorFlow names kerasrnn relies on are still where and what
kerasrnn/tensorflow_internals.py expects.

If a TensorFlow release moves, renames or changes one, these tests fail
first, naming it and the TensorFlow version, instead of every LiteRT export
failing with a bare ImportError.
"""

import importlib
import pathlib
import re

import numpy as np
import pytest

#: name -> the module kerasrnn/tensorflow_internals.py imports it from.
NAMES = {
    "convert_variables_to_constants_v2": "tensorflow.python.framework.convert_to_constants",
    "dynamic_update_slice": "tensorflow.compiler.tf2xla.python.xla",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_name_is_where_kerasrnn_imports_it(name):
    import tensorflow as tf

    from kerasrnn import tensorflow_internals

    try:
        found = getattr(importlib.import_module(NAMES[name]), name)
    except (ImportError, AttributeError) as error:
        pytest.fail(
            f"TensorFlow {tf.__version__} has no {NAMES[name]}.{name}, which "
            f"kerasrnn/tensorflow_internals.py imports ({error})"
        )
    assert getattr(tensorflow_internals, name) is found


def test_freezing_makes_a_function_of_constants_that_computes_the_same():
    import tensorflow as tf

    from kerasrnn.tensorflow_internals import convert_variables_to_constants_v2

    weights = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    function = tf.function(
        lambda x: tf.matmul(x, weights), input_signature=[tf.TensorSpec((None, 2))]
    ).get_concrete_function()
    frozen = convert_variables_to_constants_v2(function, lower_control_flow=False)
    assert not frozen.variables, (
        f"convert_variables_to_constants_v2 in TensorFlow {tf.__version__} left variables"
    )
    # Hand-worked: [1, 1] @ [[1, 2], [3, 4]] = [4, 6].
    np.testing.assert_allclose(frozen(tf.ones((1, 2)))[0], [[4.0, 6.0]])


def test_dynamic_update_slice_is_the_xla_op_litert_has_as_a_builtin():
    import tensorflow as tf

    from kerasrnn.export.converter import convert_concrete_functions
    from kerasrnn.tensorflow_internals import dynamic_update_slice

    @tf.function(
        input_signature=[
            tf.TensorSpec((3, 2), tf.float32, name="history"),
            tf.TensorSpec((), tf.int32, name="row"),
        ]
    )
    def write(history, row):
        update = tf.fill([1, 2], 9.0)
        return {"y": dynamic_update_slice(history, update, tf.stack([row, 0]))}

    graph = write.get_concrete_function().graph
    assert "XlaDynamicUpdateSlice" in {op.type for op in graph.get_operations()}, (
        f"dynamic_update_slice no longer writes XlaDynamicUpdateSlice in TensorFlow "
        f"{tf.__version__}"
    )
    from ai_edge_litert.interpreter import Interpreter

    content = convert_concrete_functions({"serving_default": write.get_concrete_function()})
    runner = Interpreter(model_content=content).get_signature_runner()
    answer = runner(history=np.zeros((3, 2), "float32"), row=np.array(1, "int32"))["y"]
    np.testing.assert_array_equal(answer, [[0, 0], [9, 9], [0, 0]])


def test_no_other_kerasrnn_module_imports_tensorflow_or_litert_privately():
    """The seams stay one module each: tensorflow_internals.py for
    TensorFlow, litert_internals.py for LiteRT's schema."""
    import kerasrnn

    private = re.compile(
        r"^\s*(from|import)\s+(tensorflow\.(python|lite|compiler|core)|"
        r"ai_edge_litert\.(schema_py_generated|tools))\b"
    )
    package = pathlib.Path(kerasrnn.__file__).parent
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        if path.name not in ("tensorflow_internals.py", "litert_internals.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if private.match(line)
    ]
    assert offenders == [], offenders


def test_lite_schema_is_tensorflow_s_generated_schema_module():
    import tensorflow as tf

    from kerasrnn.tensorflow_internals import lite_schema

    assert lite_schema.__name__ == "tensorflow.lite.python.schema_py_generated", (
        f"TensorFlow {tf.__version__} moved its LiteRT schema module, which "
        "kerasrnn/tensorflow_internals.py imports as lite_schema"
    )
    assert lite_schema.BuiltinOperator.WHILE == 119


@pytest.mark.slow
def test_a_litert_export_runs_without_the_litert_runtime_installed(tmp_path):
    """Without the `litert` extra, `export_litert` reads TensorFlow's copy of
    the schema and writes a file whose answer is the model's; the file is
    run here, in the test's own process, where the runtime is installed."""
    from ai_edge_litert.interpreter import Interpreter

    from tests.isolated import last_json, run_without

    path = tmp_path / "affine.tflite"
    completed = run_without(
        ("ai_edge_litert",),
        """
        import json, sys
        import keras
        import numpy as np
        import kerasrnn
        from kerasrnn import litert_internals

        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [keras.Input((3, 2)), keras.layers.RNN(kerasrnn.ElmanCell(4))]
        )
        kerasrnn.export_litert(model, sys.argv[1])
        x = np.arange(12, dtype="float32").reshape(2, 3, 2) / 10
        print(json.dumps({
            "schema": litert_internals.schema.__name__,
            "x": x.tolist(),
            "y": model.predict(x, verbose=0).tolist(),
        }))
        """,
        path,
    )
    result = last_json(completed)
    assert result["schema"] == "tensorflow.lite.python.schema_py_generated"
    runner = Interpreter(str(path)).get_signature_runner()
    (name,) = runner.get_input_details()
    (answer,) = runner(**{name: np.array(result["x"], "float32")}).values()
    np.testing.assert_allclose(answer, result["y"], atol=1e-6)
