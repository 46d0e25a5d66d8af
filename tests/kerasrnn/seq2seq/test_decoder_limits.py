"""The decoders at the edges of their arguments: extreme temperatures and
length penalties, beams wider than the hypotheses that exist, the largest
lengths and seeds, and sources that are not a dense batch of ids."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.numpy_attention import NumpyAttentionSeq2Seq
from tests.kerasrnn.seq2seq.numpy_seq2seq import END, PAD, START, log_softmax, trimmed

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [0, 0, 0, 0]])
#: Every target id but <pad> and <start>: what a decoder may emit.
EMITTABLE = [2, 3, 4, 5, 6]
#: The bounds the decoders' docstrings state.
MAX_LENGTH = 2**16
MAX_LENGTH_PENALTY = 8.0


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(5), attention="luong")


def assert_emittable(sequences):
    """Each row holds emittable tokens, <end> last if at all, then padding."""
    for row in np.asarray(sequences).reshape(-1, np.shape(sequences)[-1]):
        length = int(np.argmax(row == PAD)) if PAD in row else len(row)
        tokens = row[:length].tolist()
        assert START not in tokens and END not in tokens[:-1], row
        np.testing.assert_array_equal(row[length:], PAD)


def first_step_log_probs(model, source_row):
    """log p(y_1 | x) of every target id, by the NumPy reference."""
    reference = NumpyAttentionSeq2Seq(model)
    states, context = reference.encode(source_row)
    logits, _ = reference.step(START, states, context)
    return log_softmax(logits)


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [1e-39, 1e-300, 5e-324])
def test_a_tiny_temperature_decodes_as_greedy(model, temperature):
    sampled = seq2seq.sample_decode(model, SOURCE, 12, temperature=temperature, seed=1)
    reference = NumpyAttentionSeq2Seq(model)
    for row in range(2):
        expected, expected_log_prob = reference.greedy(SOURCE[row], 12)
        assert trimmed(sampled.sequences[row]) == expected
        np.testing.assert_allclose(sampled.log_probs[row], expected_log_prob, rtol=1e-4)
    # All padding: the empty answer.
    np.testing.assert_array_equal(sampled.sequences[2], 0)
    assert sampled.log_probs[2] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "temperature, top_k", [(1e9, None), (1e9, 7), (1.7e308, 5), (1e9, 2)]
)
def test_a_huge_temperature_samples_uniformly_over_the_tokens_allowed(
    model, temperature, top_k
):
    copies = 2000
    source = np.repeat(SOURCE[:1], copies, axis=0)
    result = seq2seq.sample_decode(
        model, source, 12, temperature=temperature, top_k=top_k, seed=1
    )
    sequences = result.sequences.numpy()
    assert_emittable(sequences)
    # At an infinite temperature every token the decoder may emit is equally
    # likely; top_k keeps the k most likely of them (<pad> and <start> are
    # never among them).
    log_probs = first_step_log_probs(model, SOURCE[0])
    allowed = sorted(EMITTABLE, key=lambda token: -log_probs[token])[:top_k]
    counts = np.array([(sequences[:, 0] == token).sum() for token in allowed])
    assert counts.sum() == copies
    expected, share = copies / len(allowed), 1 / len(allowed)
    assert np.all(np.abs(counts - expected) <= 5 * np.sqrt(copies * share * (1 - share)))
    # The log-probabilities are the model's, finite.
    reference = NumpyAttentionSeq2Seq(model)
    assert np.all(np.isfinite(result.log_probs))
    for row in range(5):
        np.testing.assert_allclose(
            result.log_probs[row],
            reference.sequence_log_prob(SOURCE[0], trimmed(sequences[row])),
            rtol=1e-4,
        )


@pytest.mark.slow
def test_the_largest_length_penalty_ranks_by_the_penalised_score(model):
    result = seq2seq.beam_search_decode(
        model, SOURCE, 3, 12, length_penalty=MAX_LENGTH_PENALTY
    )
    assert_emittable(result.sequences)
    reference = NumpyAttentionSeq2Seq(model)
    for row in range(2):
        expected = reference.beam_search(SOURCE[row], 3, 12, MAX_LENGTH_PENALTY)
        assert [trimmed(s) for s in result.sequences[row].numpy()] == [e[0] for e in expected]
        np.testing.assert_allclose(result.log_probs[row], [e[1] for e in expected], rtol=1e-4)
        np.testing.assert_allclose(result.scores[row], [e[2] for e in expected], rtol=1e-4)
    # All padding: the empty answer, first, at log-probability and score 0.
    np.testing.assert_array_equal(result.sequences[2], 0)
    assert result.log_probs[2, 0] == 0.0 and result.scores[2, 0] == 0.0
    assert np.all(np.isfinite(result.scores))


@pytest.mark.slow
def test_a_beam_wider_than_the_hypotheses_fills_up_with_empty_ones(model):
    # One step: the five emittable tokens are the only hypotheses there are.
    result = seq2seq.beam_search_decode(model, SOURCE, 8, 1)
    sequences = result.sequences.numpy()
    for row in range(2):
        log_probs = first_step_log_probs(model, SOURCE[row])
        ranked = sorted(EMITTABLE, key=lambda token: -log_probs[token])
        assert sequences[row, :5, 0].tolist() == ranked
        np.testing.assert_allclose(result.log_probs[row, :5], log_probs[ranked], rtol=1e-4)
        # The other three exist only to fill the beam: empty, and ranked last
        # at the log-probability no hypothesis reaches.
        np.testing.assert_array_equal(sequences[row, 5:], PAD)
        np.testing.assert_array_equal(result.log_probs[row, 5:], -1e9)
    np.testing.assert_array_equal(sequences[2], PAD)
    assert not np.isin(sequences, [START]).any()


DECODERS = {
    "greedy": lambda model, source, max_target_length: seq2seq.greedy_decode(
        model, source, max_target_length
    ),
    "sample": lambda model, source, max_target_length: seq2seq.sample_decode(
        model, source, max_target_length
    ),
    "beam": lambda model, source, max_target_length: seq2seq.beam_search_decode(
        model, source, 2, max_target_length
    ),
}


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("length", [2**31, 2**32 + 3, 2**40, MAX_LENGTH + 1])
def test_a_max_target_length_above_the_bound_is_refused_before_decoding(model, decoder, length):
    with pytest.raises(
        ValueError,
        match=f"`max_target_length` must be an integer in \\[1, {MAX_LENGTH}\\].*"
        f"Received: max_target_length={length}",
    ):
        DECODERS[decoder](model, SOURCE, length)


@pytest.mark.parametrize("length_penalty", [MAX_LENGTH_PENALTY + 0.5, 100.0, 1e6])
def test_a_length_penalty_above_the_bound_is_refused(model, length_penalty):
    with pytest.raises(
        ValueError,
        match=f"`length_penalty` must be a number in \\[0, {MAX_LENGTH_PENALTY}\\].*"
        f"Received: length_penalty={length_penalty}",
    ):
        seq2seq.beam_search_decode(model, SOURCE, 3, 12, length_penalty=length_penalty)


@pytest.mark.parametrize("seed", [2**63, 2**64, -(2**63) - 1])
def test_a_seed_outside_int64_is_refused(model, seed):
    with pytest.raises(
        ValueError,
        match="`seed` must be an integer in \\[-9223372036854775808, "
        f"9223372036854775807\\].*Received: seed={seed}",
    ):
        seq2seq.sample_decode(model, SOURCE, 4, seed=seed)


@pytest.mark.slow
def test_the_extreme_seeds_draw_different_samples(model):
    source = np.repeat(SOURCE[:1], 50, axis=0)
    low, high = (
        seq2seq.sample_decode(model, source, 4, temperature=5.0, seed=seed).sequences
        for seed in (-(2**63), 2**63 - 1)
    )
    assert_emittable(low)
    assert_emittable(high)
    assert not np.array_equal(low, high)


def test_ragged_sources_are_refused_with_what_to_do(model):
    for decoder in DECODERS.values():
        with pytest.raises(
            ValueError, match="`source_ids` must be a dense.*pad.*Received: a tf.RaggedTensor"
        ):
            decoder(model, tf.ragged.constant([[4, 5, 6], [7]]), 4)
        with pytest.raises(
            ValueError,
            match="`source_ids` must have rows of one length.*pad_sequences.*"
            "Received: rows of lengths \\[3, 1\\]",
        ):
            decoder(model, [[4, 5, 6], [7]], 4)
