"""The private Keras names kerasrnn relies on are still where and what
kerasrnn/keras_internals.py expects.

If a Keras release moves, renames or changes one, these tests fail first,
naming it and the Keras version, instead of every cell or export failing
with a bare ImportError or a wrong answer.
"""

import importlib

import pytest

MODULE = "keras.src.layers.rnn.dropout_rnn_cell"
SYMBOL = "DropoutRNNCell"
# What keras.layers.RNN calls on a cell that carries dropout masks.
HOOKS = (
    "get_dropout_mask",
    "get_recurrent_dropout_mask",
    "reset_dropout_mask",
    "reset_recurrent_dropout_mask",
)


def test_dropout_rnn_cell_is_where_kerasrnn_imports_it():
    import keras

    where = f"{MODULE}.{SYMBOL}"
    try:
        found = getattr(importlib.import_module(MODULE), SYMBOL)
    except (ImportError, AttributeError) as error:
        pytest.fail(
            f"Keras {keras.__version__} has no {where}, which "
            f"kerasrnn/keras_internals.py imports ({error}). Find where "
            f"keras.layers.RNN now takes its dropout-mask mixin from and "
            f"import it there instead."
        )
    missing = [hook for hook in HOOKS if not callable(getattr(found, hook, None))]
    assert not missing, f"{where} lost {missing} in Keras {keras.__version__}"
    # keras.layers.RNN must still recognise cells by this very class.
    rnn_module = importlib.import_module("keras.src.layers.rnn.rnn")
    assert getattr(rnn_module, SYMBOL, None) is found, (
        f"keras.layers.RNN no longer uses {where} in Keras {keras.__version__}"
    )

    from kerasrnn.keras_internals import DropoutRNNCell

    assert DropoutRNNCell is found


def test_no_other_kerasrnn_module_imports_keras_src():
    """The seam stays one module: kerasrnn/keras_internals.py."""
    import pathlib

    import kerasrnn

    package = pathlib.Path(kerasrnn.__file__).parent
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "keras_internals.py"
        and any(
            line.lstrip().startswith(("from keras.src", "import keras.src"))
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == [], offenders


def test_sublayers_walks_into_wrappers_rnns_and_stacks():
    import keras

    import kerasrnn
    from kerasrnn.keras_internals import sublayers

    stack = keras.layers.StackedRNNCells([kerasrnn.ElmanCell(2), kerasrnn.GRUCell(2)])
    wrapped = keras.layers.Bidirectional(keras.layers.RNN(stack))
    model = keras.Sequential([keras.Input((3, 4)), wrapped, keras.layers.Dense(1)])
    found = sublayers(model)
    assert model not in found, f"Layer._flatten_layers changed in Keras {keras.__version__}"
    # Bidirectional copies the stack into each direction: both copies' cells.
    elman = [layer for layer in found if isinstance(layer, kerasrnn.ElmanCell)]
    assert wrapped in found and len(elman) == 2, (
        f"Layer._flatten_layers no longer walks into wrappers, RNNs and stacked "
        f"cells in Keras {keras.__version__}: kerasrnn/keras_internals.py's sublayers "
        "must find them another way"
    )
    assert sum(isinstance(layer, kerasrnn.GRUCell) for layer in found) == 2


def test_call_has_training_arg_reads_what_keras_passes():
    import keras

    import kerasrnn
    from kerasrnn.keras_internals import call_has_training_arg

    assert hasattr(keras.layers.Dense(1), "_call_has_training_arg"), (
        f"Keras {keras.__version__} has no Layer._call_has_training_arg"
    )
    assert call_has_training_arg(kerasrnn.LSTMCell(2))  # call(..., training=False)

    class NoTraining(keras.layers.Layer):
        def call(self, inputs):
            return inputs

    assert not call_has_training_arg(NoTraining())


def test_rnn_call_steps_through_the_replaced_inner_loop_and_gets_its_own_back():
    import keras
    import numpy as np

    import kerasrnn
    from kerasrnn.keras_internals import replaced_inner_loops

    layer = keras.layers.RNN(kerasrnn.ElmanCell(2), return_sequences=True)
    x = np.ones((1, 3, 4), "float32")
    expected = np.asarray(layer(x))
    seen = {}

    def stand_in(sequences, initial_state, mask, training=False):
        seen.update(sequences=tuple(sequences.shape), mask=mask, training=training)
        last = keras.ops.zeros((1, 2))
        return last, keras.ops.zeros((1, 3, 2)), [last]

    with replaced_inner_loops([(layer, stand_in)]):
        replaced = np.asarray(layer(x, training=False))
    assert seen == {"sequences": (1, 3, 4), "mask": None, "training": False}, (
        f"keras.layers.RNN.call in Keras {keras.__version__} no longer calls "
        "self.inner_loop(sequences=, initial_state=, mask=, training=) as "
        "kerasrnn/keras_internals.py's replaced_inner_loops expects"
    )
    assert not replaced.any()
    assert "inner_loop" not in vars(layer)
    np.testing.assert_array_equal(np.asarray(layer(x)), expected)


def test_no_other_kerasrnn_module_uses_keras_private_names():
    """`_flatten_layers`, `_call_has_training_arg` and `inner_loop` swaps go
    through kerasrnn/keras_internals.py."""
    import pathlib
    import re

    import kerasrnn

    private = re.compile(r"\._flatten_layers\b|\._call_has_training_arg\b|\.inner_loop\s*=")
    package = pathlib.Path(kerasrnn.__file__).parent
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        if path.name != "keras_internals.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line)
    ]
    assert offenders == [], offenders


def test_additional_loss_sums_a_layer_loss_as_compute_loss_does():
    import keras
    import numpy as np

    from kerasrnn.keras_internals import additional_loss

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    try:
        value = additional_loss(model, np.array([1.5, 2.0], "float32"))
    except AttributeError as error:
        pytest.fail(
            f"Keras {keras.__version__} has no Model._aggregate_additional_loss, "
            f"which kerasrnn/keras_internals.py calls ({error}). Find how "
            "Model.compute_loss now adds the losses of Layer.add_loss."
        )
    # One replica: the sum, unscaled.
    assert float(value) == pytest.approx(3.5), (
        f"Model._aggregate_additional_loss changed in Keras {keras.__version__}"
    )


def test_saving_marks_objects_by_id_and_outside_object_sharing_switches_it_off():
    """While Keras saves or loads (`ObjectSharingScope`), serializing an
    object twice marks it `shared_object_id`, by `id()`; inside
    `outside_object_sharing` nothing is marked, and after it the scope
    marks again."""
    import keras
    from keras.src.saving.serialization_lib import ObjectSharingScope

    from kerasrnn.keras_internals import outside_object_sharing

    cell = keras.layers.LSTMCell(3)
    with ObjectSharingScope():
        keras.saving.serialize_keras_object(cell)
        marked = keras.saving.serialize_keras_object(cell)
        with outside_object_sharing():
            keras.saving.serialize_keras_object(cell)
            unmarked = keras.saving.serialize_keras_object(cell)
        again = keras.saving.serialize_keras_object(cell)
    assert "shared_object_id" in marked, (
        f"Keras {keras.__version__} no longer marks a shared object with "
        "'shared_object_id': check what kerasrnn.keras_internals.outside_object_sharing guards"
    )
    assert "shared_object_id" not in str(unmarked)
    assert again["shared_object_id"] == marked["shared_object_id"]
