"""Where a source's padding sits changes no answer: padded at the front (what
`keras.utils.pad_sequences` does by default) or between its tokens, a source
gets the logits, answers, log-probabilities and scores of the same tokens
padded at the end, and the same α on the same tokens, in every context mode,
attention kind and direction."""

import itertools

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.sharpened import sharpened

TOKENS = [[4, 5, 6, 7], [8, 4], [9], []]
# Every layout six columns wide: one trace of each decoder serves them all.
END_PADDED = keras.utils.pad_sequences(TOKENS, maxlen=6, padding="post")
FRONT_PADDED = keras.utils.pad_sequences(TOKENS, maxlen=6)
SCATTERED = np.array(
    [[4, 0, 5, 6, 0, 7], [0, 8, 0, 0, 4, 0], [0, 0, 0, 9, 0, 0], [0, 0, 0, 0, 0, 0]]
)
LAYOUTS = {"front": FRONT_PADDED, "scattered": SCATTERED}
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5], [1, 4, 0, 0]])


def make_model(context, attention, bidirectional):
    keras.utils.set_random_seed(4)
    model = seq2seq.Seq2Seq(
        10, 7, kerasrnn.LSTMCell(5, bias_initializer="random_normal"),
        embedding_dim=4, context=context, attention=attention,
        bidirectional=bidirectional,
    )
    # α far from uniform and sharp output distributions, so that a token
    # read at the wrong position or a wrong final output would show.
    return sharpened(model, 4, attention=bool(attention))


def assert_same_weights_on_the_same_tokens(alignments, layout, expected):
    """`alignments` (rows of `layout`) put on each real token the weight that
    `expected` (rows of END_PADDED) puts on it, and 0 on padding."""
    for row in range(len(layout)):
        real, reference = np.flatnonzero(layout[row]), np.flatnonzero(END_PADDED[row])
        np.testing.assert_allclose(
            alignments[row][..., real], expected[row][..., reference], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_array_equal(alignments[row][..., layout[row] == 0], 0.0)


def assert_same_answers(result, expected, layout):
    np.testing.assert_array_equal(result.sequences, expected.sequences)
    np.testing.assert_allclose(result.log_probs, expected.log_probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.scores, expected.scores, rtol=1e-5, atol=1e-6)
    if expected.alignments is not None:
        assert_same_weights_on_the_same_tokens(
            np.asarray(result.alignments), layout, np.asarray(expected.alignments)
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    "context, attention, bidirectional",
    list(itertools.product(seq2seq.CONTEXTS, [None, "bahdanau", "luong"], [False, True])),
)
def test_padding_at_the_front_or_between_tokens_changes_no_answer(
    context, attention, bidirectional
):
    model = make_model(context, attention, bidirectional)
    with_attention = attention is not None

    def answers(source):
        inputs = {"source": source, "decoder_input": DECODER_INPUT}
        return {
            "logits": np.asarray(model(inputs)),
            "alignments": (
                np.asarray(model.attention_weights(inputs)) if with_attention else None
            ),
            "greedy": seq2seq.greedy_decode(
                model, source, 5, return_alignments=with_attention
            ),
            "sample": seq2seq.sample_decode(model, source, 5, temperature=1.5, seed=3),
            "beams": seq2seq.beam_search_decode(
                model, source, 3, 5, length_penalty=0.6, return_alignments=with_attention
            ),
        }

    expected = answers(END_PADDED)
    for layout in LAYOUTS.values():
        found = answers(layout)
        np.testing.assert_allclose(found["logits"], expected["logits"], rtol=1e-5, atol=1e-6)
        if with_attention:
            assert_same_weights_on_the_same_tokens(
                found["alignments"], layout, expected["alignments"]
            )
        for decoder in ("greedy", "sample", "beams"):
            assert_same_answers(found[decoder], expected[decoder], layout)
