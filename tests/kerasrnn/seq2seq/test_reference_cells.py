"""Seq2Seq with the GRU (both forms) and the leaky cell, against NumPy.

The encoder and the decoder step are the cells' seed equations
(`eq:rnn-gru-z` … `eq:rnn-gru-h`, the leaky unit) inside `eq:rnn-seq2seq`,
recomputed by `NumpySeq2Seq` with plain loops; every weight is random, so a
swapped gate block or a lost leak would show.
"""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.cells.harness import randomize
from tests.kerasrnn.seq2seq.numpy_seq2seq import END, NumpySeq2Seq

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5]])

CELLS = {
    "gru": lambda: kerasrnn.GRUCell(5),
    "gru-reset-after": lambda: kerasrnn.GRUCell(5, reset_after=True),
    "leaky": lambda: kerasrnn.LeakyCell(5, alpha=0.35),
    "leaky-learned": lambda: kerasrnn.LeakyCell(5, alpha=0.6, learn_alpha=True),
}


def make_model(cell, **kwargs):
    keras.utils.set_random_seed(11)
    model = seq2seq.Seq2Seq(10, 7, CELLS[cell](), embedding_dim=4, **kwargs)
    model({"source": SOURCE, "decoder_input": DECODER_INPUT})
    # Random, non-constant values in every weight (biases and leak rates
    # included), so that no gate block or rate can stand in for another.
    randomize(model, np.random.default_rng(5), scale=0.7)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("context", seq2seq.CONTEXTS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_teacher_forced_logits_match_numpy(cell, context, bidirectional):
    model = make_model(cell, context=context, bidirectional=bidirectional)
    logits = np.asarray(
        model({"source": SOURCE, "decoder_input": DECODER_INPUT})
    )
    reference = NumpySeq2Seq(model)
    for row in range(len(SOURCE)):
        expected = reference.teacher_forced_logits(
            SOURCE[row], DECODER_INPUT[row]
        )
        np.testing.assert_allclose(logits[row], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("cell", list(CELLS))
def test_greedy_decoding_matches_numpy(cell):
    model = make_model(cell, context="both", bidirectional=True, encoder_layers=2)
    result = seq2seq.greedy_decode(model, SOURCE, 5)
    sequences, log_probs = result.sequences, result.log_probs
    reference = NumpySeq2Seq(model)
    for row in range(len(SOURCE)):
        expected, expected_log_prob = reference.greedy(SOURCE[row], 5)
        got = list(np.asarray(sequences[row]))
        length = got.index(END) + 1 if END in got else len(got)
        assert got[:length] == expected
        assert not any(got[length:])
        np.testing.assert_allclose(log_probs[row], expected_log_prob, rtol=1e-4)


def test_the_reference_tells_the_two_gru_forms_apart():
    """Same weights, other form: the reference must disagree with the model,
    or it could not catch a cell that ignored `reset_after`."""
    model = make_model("gru", context="initial_state")
    reference = NumpySeq2Seq(model)
    for numpy_cell in [reference.decoder, *reference.layers[0]]:
        numpy_cell.step_fn = functools.partial(numpy_cell.step_fn, reset_after=True)
    logits = np.asarray(model({"source": SOURCE, "decoder_input": DECODER_INPUT}))
    other = reference.teacher_forced_logits(SOURCE[0], DECODER_INPUT[0])
    assert np.abs(logits[0] - other).max() > 1e-2
