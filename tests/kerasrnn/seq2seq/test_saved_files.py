"""`.keras` files written by the previous release of kerasrnn still load.

`saved/` holds a `Seq2Seq` (bidirectional LSTM, Luong attention) and a
`Seq2SeqEnsemble` of it and a Bahdanau GRU model, saved before right-to-left
target order existed, with their logits on two examples as that release
computed them. They were written by Keras 3.15, whose initializers record
`input_axes` and `output_axes`, which Keras before 3.15 does not read.
"""

import pathlib

import keras
import numpy as np
import pytest

from kerasrnn import seq2seq
from kerasrnn.versions import minor_release

SAVED = pathlib.Path(__file__).parent / "saved"
INPUTS = {
    "source": np.array([[4, 5, 6, 7], [8, 4, 0, 0]]),
    "decoder_input": np.array([[1, 5, 4, 3], [1, 6, 0, 0]]),
}


@pytest.mark.skipif(
    minor_release(keras.__version__) < (3, 15),
    reason=f"Keras {keras.__version__} cannot read a file written by Keras 3.15: its "
    "GlorotUniform takes no input_axes",
)
@pytest.mark.parametrize("name", ["seq2seq", "ensemble"])
def test_a_model_saved_by_the_previous_release_loads_with_its_outputs(name):
    model = keras.models.load_model(SAVED / f"{name}.keras")
    members = model.members if isinstance(model, seq2seq.Seq2SeqEnsemble) else [model]
    assert all(member.target_order == "left_to_right" for member in members)
    expected = np.load(SAVED / "outputs.npz")[name]
    np.testing.assert_allclose(model(INPUTS), expected, rtol=1e-5, atol=1e-6)
