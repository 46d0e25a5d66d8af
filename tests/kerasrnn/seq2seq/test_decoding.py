"""Greedy, sampling and beam search against the NumPy decoder of eq:rnn-seq2seq."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.numpy_seq2seq import (
    NumpySeq2Seq,
    assert_exhaustive_best,
    log_softmax,
    trimmed,
)

SOURCE = np.array([[4, 5, 6], [7, 4, 0], [5, 0, 0], [6, 6, 7]])


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(7)
    model = seq2seq.Seq2Seq(
        8, 6, kerasrnn.LSTMCell(6, bias_initializer="random_normal"),
        embedding_dim=5, bidirectional=True, context="both",
    )
    # Sharper output distributions than at initialisation, so that the
    # hypotheses are far apart and end early.
    projection = model.output_projection
    rng = np.random.default_rng(0)
    projection.kernel.assign(rng.normal(0, 1.5, projection.kernel.shape))
    projection.bias.assign(rng.normal(0, 1.0, projection.bias.shape))
    return model


@pytest.mark.slow
def test_greedy_matches_numpy(model):
    result = seq2seq.greedy_decode(model, SOURCE, 5)
    sequences, log_probs = result.sequences, result.log_probs
    reference = NumpySeq2Seq(model)
    for row in range(len(SOURCE)):
        expected, expected_lp = reference.greedy(SOURCE[row], 5)
        assert trimmed(sequences[row]) == expected
        np.testing.assert_allclose(log_probs[row], expected_lp, rtol=1e-4)


@pytest.mark.slow
def test_beam_width_one_is_greedy(model):
    greedy = seq2seq.greedy_decode(model, SOURCE, 6)
    beam = seq2seq.beam_search_decode(model, SOURCE, 1, 6)
    np.testing.assert_array_equal(beam.sequences[:, 0], greedy.sequences)
    np.testing.assert_allclose(beam.log_probs[:, 0], greedy.log_probs, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("beam_width, alpha", [(2, 0.0), (3, 0.0), (3, 1.0)])
def test_beam_search_matches_numpy_beam_search(model, beam_width, alpha):
    result = seq2seq.beam_search_decode(
        model, SOURCE, beam_width, 4, length_penalty=alpha
    )
    sequences, log_probs, scores = result.sequences, result.log_probs, result.scores
    reference = NumpySeq2Seq(model)
    for row in range(len(SOURCE)):
        expected = reference.beam_search(SOURCE[row], beam_width, 4, alpha)
        assert [trimmed(s) for s in sequences[row].numpy()] == [e[0] for e in expected]
        np.testing.assert_allclose(log_probs[row], [e[1] for e in expected], rtol=1e-4)
        np.testing.assert_allclose(scores[row], [e[2] for e in expected], rtol=1e-4)


@pytest.mark.slow
def test_wide_beam_finds_the_exhaustive_best(model):
    # 3 emittable words and max_length 3: at most 3 + 9 + 27 live prefixes,
    # so a beam of 40 prunes nothing and must return the brute-force ranking.
    result = seq2seq.beam_search_decode(model, SOURCE, 40, 3)
    assert_exhaustive_best(
        NumpySeq2Seq(model), SOURCE, result.sequences, result.log_probs, 6, 3, top=5
    )


@pytest.mark.slow
def test_sampling_follows_temperature_and_top_k(model):
    copies = 4000
    source = np.repeat(SOURCE[:1], copies, axis=0)
    reference = NumpySeq2Seq(model)
    states, context = reference.encode(SOURCE[0])
    first, _ = reference.step(1, states, context)
    lp = log_softmax(first)
    emittable = np.array([2, 3, 4, 5])
    for temperature, top_k in [(0.7, None), (2.0, 2)]:
        result = seq2seq.sample_decode(
            model, source, 4, temperature=temperature, top_k=top_k, seed=11
        )
        sequences, log_probs = result.sequences, result.log_probs
        scaled = lp[emittable] / temperature
        if top_k is not None:
            scaled[np.argsort(scaled)[:-top_k]] = -np.inf
        expected = np.exp(scaled - scaled.max())
        expected /= expected.sum()
        counts = np.array([(sequences[:, 0] == t).numpy().sum() for t in emittable])
        sigma = np.sqrt(copies * expected * (1 - expected)) + 1e-9
        assert np.all(np.abs(counts - copies * expected) <= 5 * sigma + 0.5)
        # The reported log-probability is the model's, at temperature 1.
        for row in range(5):
            np.testing.assert_allclose(
                log_probs[row],
                reference.sequence_log_prob(SOURCE[0], trimmed(sequences[row])),
                rtol=1e-4,
            )
    again = seq2seq.sample_decode(model, source, 4, 2.0, 2, seed=11)
    np.testing.assert_array_equal(again.sequences, sequences)


@pytest.mark.slow
def test_every_decoder_compiles_with_xla(model):
    source = tf.constant(SOURCE)
    for decode in (
        lambda s: seq2seq.greedy_decode(model, s, 5),
        lambda s: seq2seq.sample_decode(model, s, 5, 0.8, 3, seed=1),
        lambda s: seq2seq.beam_search_decode(model, s, 3, 5, 0.6),
    ):
        plain = decode(source)
        compiled = tf.function(decode, jit_compile=True)(source)
        np.testing.assert_array_equal(plain.sequences, compiled.sequences)
        np.testing.assert_allclose(plain.log_probs, compiled.log_probs, rtol=1e-5)
        np.testing.assert_allclose(plain.scores, compiled.scores, rtol=1e-5)
        assert plain.alignments is None and compiled.alignments is None


@pytest.mark.slow
def test_every_decoder_returns_the_same_fields(model):
    greedy = seq2seq.greedy_decode(model, SOURCE, 4)
    sampled = seq2seq.sample_decode(model, SOURCE, 4, seed=3)
    beams = seq2seq.beam_search_decode(model, SOURCE, 2, 4, length_penalty=1.0)
    for result in (greedy, sampled, beams):
        assert isinstance(result, seq2seq.DecodeResult)
        assert result.alignments is None
    for result in (greedy, sampled):
        assert result.sequences.shape == (len(SOURCE), 4)
        assert result.log_probs.shape == (len(SOURCE),)
        # One hypothesis each: nothing to rank it against, its score is its
        # log-probability.
        np.testing.assert_array_equal(result.scores, result.log_probs)
    assert beams.sequences.shape == (len(SOURCE), 2, 4)
    lengths = (beams.sequences.numpy() != 0).sum(axis=-1)
    np.testing.assert_allclose(
        beams.scores, beams.log_probs / ((5 + lengths) / 6), rtol=1e-6
    )


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: seq2seq.greedy_decode(m, SOURCE, 0), "max_target_length"),
        (lambda m: seq2seq.beam_search_decode(m, SOURCE, 0, 4), "beam_width"),
        (lambda m: seq2seq.beam_search_decode(m, SOURCE, 2, 4, -1.0), "length_penalty"),
        (lambda m: seq2seq.sample_decode(m, SOURCE, 4, temperature=0.0), "temperature"),
        (lambda m: seq2seq.sample_decode(m, SOURCE, 4, top_k=0), "top_k"),
        # The vocabulary has 6 target ids: a larger k has nothing to keep.
        (lambda m: seq2seq.sample_decode(m, SOURCE, 4, top_k=100), "top_k"),
        (lambda m: seq2seq.sample_decode(m, SOURCE, 4, temperature=np.inf), "temperature"),
        (
            lambda m: seq2seq.greedy_decode(m, SOURCE, np.int64(4), return_alignments=1),
            "return_alignments",
        ),
    ],
)
def test_bad_arguments(model, call, name):
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}="):
        call(model)


@pytest.mark.parametrize(
    "source, message",
    [
        ([[-1, 4, 2]], "ids in \\[0, 8\\).*-1"),
        ([[4, 8, 2]], "ids in \\[0, 8\\).*8"),
        (np.array([[4.0, 5.7]]), "integer token ids"),
        (np.zeros((2, 0), np.int32), "length ≥ 1"),
        (np.array([4, 5, 6]), "\\(batch, length\\)"),
    ],
)
def test_bad_source_ids_are_refused_before_decoding(model, source, message):
    for decode in (
        lambda: seq2seq.greedy_decode(model, source, 4),
        lambda: seq2seq.sample_decode(model, source, 4),
        lambda: seq2seq.beam_search_decode(model, source, 2, 4),
    ):
        with pytest.raises(ValueError, match=f"`source_ids`.*{message}"):
            decode()


@pytest.mark.slow
def test_numpy_scalars_are_numbers(model):
    plain = seq2seq.beam_search_decode(model, SOURCE, 2, 4, 0.5)
    numpy = seq2seq.beam_search_decode(
        model, SOURCE, np.int64(2), np.int32(4), np.float32(0.5)
    )
    np.testing.assert_array_equal(plain.sequences, numpy.sequences)
