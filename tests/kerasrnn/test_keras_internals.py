"""The one private Keras symbol kerasrnn relies on is still where we import it.

If a Keras release moves or renames it, this test fails first, naming the
symbol, instead of every cell failing at import with a bare ImportError.
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
