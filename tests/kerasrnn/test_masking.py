"""Recurrent layers handed their mask answer for real steps alone, on every
supported Keras, and Keras says nothing about masks.

Keras 3.16 stopped passing a recurrent layer's mask on to the next layer and
warns whenever one is called with a mask; `takes_explicit_mask` marks the
layers kerasrnn calls with `mask=`. The reference is the unpadded sequence.
"""

import warnings

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.explicit_masks import takes_explicit_mask
from tests.padding import PADDED, UNPADDED, assert_padding_changes_nothing, mask_warnings


def bidirectional_stack(return_sequences):
    """Embedding → Bidirectional(RNN(LSTMCell)) → RNN(GRUCell), each
    recurrent layer called with the ids' mask."""
    ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, 4, mask_zero=True)
    mask = embedding.compute_mask(ids)
    first = takes_explicit_mask(
        keras.layers.Bidirectional(
            keras.layers.RNN(kerasrnn.LSTMCell(3, seed=1), return_sequences=True)
        )
    )
    second = takes_explicit_mask(
        keras.layers.RNN(kerasrnn.GRUCell(3, seed=2), return_sequences=return_sequences)
    )
    states = second(first(embedding(ids), mask=mask), mask=mask)
    return keras.Model(ids, states)


@pytest.mark.parametrize("return_sequences", [False, True])
def test_a_bidirectional_stack_answers_padded_as_unpadded(return_sequences):
    keras.utils.set_random_seed(0)
    assert_padding_changes_nothing(
        lambda: bidirectional_stack(return_sequences), per_step=return_sequences
    )


def test_a_per_step_loss_skips_the_padded_steps():
    """Unweighted, the cross-entropy of a marked layer's per-step outputs
    is the mean over the real steps, worked out in NumPy."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10, 4, mask_zero=True)
    states = takes_explicit_mask(
        keras.layers.RNN(kerasrnn.ElmanCell(3, seed=1), return_sequences=True)
    )(embedding(ids), mask=embedding.compute_mask(ids))
    model = keras.Model(ids, keras.layers.Dense(3, activation="softmax")(states))
    model.compile(loss="sparse_categorical_crossentropy")
    labels = np.array([[1, 2, 0, 0, 0, 0, 0], [2, 2, 1, 0, 1, 0, 0]])

    loss = model.evaluate(PADDED, labels, verbose=0)

    probabilities = keras.ops.convert_to_numpy(model(PADDED))
    chosen = np.take_along_axis(probabilities, labels[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(loss, -np.log(chosen[PADDED != 0]).mean(), rtol=1e-5)


def test_seq2seq_encodes_padded_as_unpadded_without_mask_warnings():
    keras.utils.set_random_seed(0)
    model = seq2seq.Seq2Seq(
        10, 7, kerasrnn.LSTMCell(4), embedding_dim=4, encoder_layers=2,
        bidirectional=True, attention="luong",
    )
    decoder_input = np.array([[1, 5, 4]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        padded = [
            keras.ops.convert_to_numpy(
                model({"source": PADDED[row : row + 1], "decoder_input": decoder_input})
            )
            for row in range(len(PADDED))
        ]
    assert mask_warnings(caught) == []
    for row, ids in enumerate(UNPADDED):
        alone = model({"source": ids, "decoder_input": decoder_input})
        np.testing.assert_allclose(padded[row], alone, rtol=1e-5, atol=1e-6)
