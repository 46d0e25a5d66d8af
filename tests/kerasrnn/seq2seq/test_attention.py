"""Attention (Bahdanau, Luong) against NumPy loops of their equations."""


import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.seq2seq.attention import (
    BahdanauAttention,
    LuongAttention,
    masked_softmax,
)
from tests.kerasrnn.seq2seq.numpy_attention import (
    NumpyAttentionSeq2Seq,
    additive_scores,
    general_scores,
    softmax,
)
from tests.kerasrnn.seq2seq.numpy_seq2seq import assert_exhaustive_best, trimmed

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5]])
INPUTS = {"source": SOURCE, "decoder_input": DECODER_INPUT}


def make_model(attention, cell="lstm", **kwargs):
    templates = {
        "lstm": lambda: kerasrnn.LSTMCell(5, bias_initializer="random_normal", seed=1),
        "elman": lambda: kerasrnn.ElmanCell(5, bias_initializer="random_normal"),
    }
    keras.utils.set_random_seed(3)
    options = dict(embedding_dim=4, attention=attention)
    options.update(kwargs)
    model = seq2seq.Seq2Seq(10, 7, templates[cell](), **options)
    # Scores far from zero, so that α is far from uniform and a wrong
    # score function, mask or memory would show.
    rng = np.random.default_rng(5)
    for weight in model.attention.weights:
        weight.assign(rng.normal(0, 1.5, weight.shape))
    return model


# ------------------------------------------------------------- score layers
def test_masked_softmax_hand_worked():
    scores = np.array([[1.0, 2.0, 30.0], [0.5, -1.0, 4.0], [3.0, 3.0, 3.0]])
    mask = np.array([[True, True, False], [False, False, False], [True, True, True]])
    weights = masked_softmax(scores, mask).numpy()
    e = np.exp(1.0) + np.exp(2.0)
    np.testing.assert_allclose(weights[0], [np.exp(1.0) / e, np.exp(2.0) / e, 0.0], rtol=1e-6)
    assert weights[0, 2] == 0.0
    np.testing.assert_array_equal(weights[1], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[2], [1 / 3] * 3, rtol=1e-6)


def test_masked_softmax_over_one_position_is_one_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = masked_softmax(np.array([[5.0], [-2.0]]), np.array([[True], [False]]))
    np.testing.assert_array_equal(weights, [[1.0], [0.0]])


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_score_layers_match_numpy(kind):
    rng = np.random.default_rng(0)
    batch, length, memory_size, query_size = 3, 5, 6, 4
    layer = BahdanauAttention(7) if kind == "bahdanau" else LuongAttention(query_size)
    layer.build_for(query_size, memory_size)
    for weight in layer.weights:
        weight.assign(rng.normal(0, 1, weight.shape))
    query = rng.normal(size=(batch, query_size)).astype("float32")
    memory = rng.normal(size=(batch, length, memory_size)).astype("float32")
    lengths = [5, 2, 0]
    mask = np.arange(length)[None] < np.array(lengths)[:, None]
    context, weights = layer(query, layer.keys(memory), memory, mask)
    kernels = [np.asarray(w, np.float64) for w in layer.weights]
    for row, real in enumerate(lengths):
        h = memory[row, :real].astype(np.float64)
        if real == 0:
            np.testing.assert_array_equal(weights[row], 0.0)
            np.testing.assert_array_equal(context[row], 0.0)
            continue
        if kind == "bahdanau":
            scores = additive_scores(query[row], h, kernels[0], kernels[1], kernels[2][:, 0])
        else:
            scores = general_scores(query[row], h, kernels[0])
        alpha = softmax(scores)
        np.testing.assert_allclose(weights[row, :real], alpha, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(weights[row, real:], 0.0)
        np.testing.assert_allclose(context[row], alpha @ h, rtol=1e-5, atol=1e-6)
        # Whatever the memory holds at padded positions is never read.
        noisy = memory.copy()
        noisy[row, real:] = 1e3 * rng.normal(size=noisy[row, real:].shape)
        again, _ = layer(query, layer.keys(noisy), noisy, mask)
        np.testing.assert_allclose(again[row], context[row], rtol=1e-6)


def test_luong_attentional_vector_from_the_projected_memory_matches_numpy():
    # A decoder step computes ã = tanh(W_c [s; a]), a = Σ_j α_j h_j, as
    # s W_s + Σ_j α_j (h_j W_a), with h_j W_a projected once per source.
    rng = np.random.default_rng(3)
    layer = LuongAttention(4)
    layer.build_for(4, 6)
    memory = rng.normal(size=(2, 5, 6)).astype("float32")
    alpha = rng.dirichlet(np.ones(5), size=2).astype("float32")
    query = rng.normal(size=(2, 4)).astype("float32")
    kernel = np.asarray(layer.attentional_projection.kernel)
    attended = np.einsum("bs,bsm->bm", alpha, memory)
    expected = np.tanh(np.concatenate([query, attended], axis=-1) @ kernel)
    projected = np.einsum("bs,bsn->bn", alpha, np.asarray(layer.projected_memory(memory)))
    np.testing.assert_allclose(
        layer.attentional_from_projected(query, projected), expected, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_several_queries_per_example_match_numpy(kind):
    """`(batch, T, q)` queries (beam search's hypotheses, Luong's teacher
    forcing) each score against their example's one memory."""
    rng = np.random.default_rng(1)
    batch, queries, length, memory_size, query_size = 3, 2, 5, 6, 4
    layer = BahdanauAttention(7) if kind == "bahdanau" else LuongAttention(query_size)
    layer.build_for(query_size, memory_size)
    for weight in layer.weights:
        weight.assign(rng.normal(0, 1, weight.shape))
    query = rng.normal(size=(batch, queries, query_size)).astype("float32")
    memory = rng.normal(size=(batch, length, memory_size)).astype("float32")
    lengths = [5, 2, 0]
    mask = np.arange(length)[None] < np.array(lengths)[:, None]
    context, weights = layer(query, layer.keys(memory), memory, mask)
    assert context.shape == (batch, queries, memory_size)
    assert weights.shape == (batch, queries, length)
    kernels = [np.asarray(w, np.float64) for w in layer.weights]
    for row, real in enumerate(lengths):
        h = memory[row, :real].astype(np.float64)
        for t in range(queries):
            if real == 0:
                np.testing.assert_array_equal(weights[row, t], 0.0)
                np.testing.assert_array_equal(context[row, t], 0.0)
                continue
            if kind == "bahdanau":
                scores = additive_scores(
                    query[row, t], h, kernels[0], kernels[1], kernels[2][:, 0]
                )
            else:
                scores = general_scores(query[row, t], h, kernels[0])
            alpha = softmax(scores)
            np.testing.assert_allclose(weights[row, t, :real], alpha, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(weights[row, t, real:], 0.0)
            np.testing.assert_allclose(context[row, t], alpha @ h, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ the decoder
@pytest.mark.slow
@pytest.mark.parametrize(
    "attention, cell, context, bidirectional, options",
    [
        ("bahdanau", "lstm", "initial_state", True, dict(encoder_layers=2)),
        ("bahdanau", "elman", "every_step", False, dict(attention_units=3)),
        ("bahdanau", "lstm", "both", True, {}),
        ("luong", "lstm", "initial_state", True, {}),
        ("luong", "elman", "both", False, dict(encoder_layers=2)),
        ("luong", "lstm", "every_step", True, dict(input_feeding=False)),
    ],
)
def test_teacher_forced_logits_and_alignments_match_numpy(
    attention, cell, context, bidirectional, options
):
    model = make_model(
        attention, cell, context=context, bidirectional=bidirectional, **options
    )
    logits = model(INPUTS).numpy()
    alignments = model.attention_weights(INPUTS).numpy()
    assert alignments.shape == (3, 4, 4) and alignments.dtype == np.float32
    reference = NumpyAttentionSeq2Seq(model)
    for row in range(len(SOURCE)):
        real = int((SOURCE[row] != 0).sum())
        np.testing.assert_allclose(
            logits[row],
            reference.teacher_forced_logits(SOURCE[row], DECODER_INPUT[row]),
            rtol=1e-4, atol=1e-5,
        )
        np.testing.assert_allclose(
            alignments[row, :, :real],
            reference.teacher_forced_alignments(SOURCE[row], DECODER_INPUT[row]),
            rtol=1e-4, atol=1e-6,
        )
        np.testing.assert_allclose(alignments[row].sum(-1), 1.0, rtol=1e-6)
        np.testing.assert_array_equal(alignments[row, :, real:], 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_extra_padding_changes_nothing(attention):
    model = make_model(attention, bidirectional=True, context="both")
    padded = np.pad(SOURCE, [(0, 0), (0, 3)])
    np.testing.assert_allclose(
        model(INPUTS), model({"source": padded, "decoder_input": DECODER_INPUT}),
        rtol=1e-5, atol=1e-6,
    )
    wide = model.attention_weights({"source": padded, "decoder_input": DECODER_INPUT})
    np.testing.assert_allclose(wide[:, :, :4], model.attention_weights(INPUTS), atol=1e-6)
    np.testing.assert_array_equal(wide[:, :, 4:], 0.0)


@pytest.mark.slow
def test_all_padding_source_gets_zero_weight_and_an_empty_answer():
    model = make_model("bahdanau", bidirectional=True)
    source = np.array([[4, 5, 0], [0, 0, 0]])
    alignments = model.attention_weights(
        {"source": source, "decoder_input": np.array([[1, 3], [1, 3]])}
    ).numpy()
    assert np.isfinite(alignments).all()
    np.testing.assert_array_equal(alignments[1], 0.0)
    result = seq2seq.greedy_decode(model, source, 4, return_alignments=True)
    np.testing.assert_array_equal(result.sequences[1], 0)
    assert result.log_probs[1] == 0.0
    np.testing.assert_array_equal(result.alignments[1], 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_decoders_and_their_alignments_match_numpy(attention):
    model = make_model(attention, bidirectional=True)
    model.output_projection.kernel.assign(
        np.random.default_rng(1).normal(0, 1.5, model.output_projection.kernel.shape)
    )
    reference = NumpyAttentionSeq2Seq(model)
    greedy = seq2seq.greedy_decode(model, SOURCE, 5, return_alignments=True)
    sequences, log_probs, alignments = (
        greedy.sequences, greedy.log_probs, greedy.alignments
    )
    beam = seq2seq.beam_search_decode(model, SOURCE, 3, 5, return_alignments=True)
    beams, beam_log_probs, beam_alignments = (
        beam.sequences, beam.log_probs, beam.alignments
    )
    for row in range(len(SOURCE)):
        real = int((SOURCE[row] != 0).sum())
        expected, expected_log_prob = reference.greedy(SOURCE[row], 5)
        assert trimmed(sequences[row]) == expected
        np.testing.assert_allclose(log_probs[row], expected_log_prob, rtol=1e-4)
        expected_rows = reference.teacher_forced_alignments(SOURCE[row], [1] + expected[:-1])
        steps = len(expected)
        np.testing.assert_allclose(
            alignments[row, :steps, :real], expected_rows, rtol=1e-4, atol=1e-6
        )
        np.testing.assert_array_equal(alignments[row, steps:], 0.0)
        for beam in range(3):
            sequence = trimmed(beams[row, beam])
            np.testing.assert_allclose(
                beam_log_probs[row, beam],
                reference.sequence_log_prob(SOURCE[row], sequence), rtol=1e-4,
            )
            np.testing.assert_allclose(
                beam_alignments[row, beam, : len(sequence), :real],
                reference.teacher_forced_alignments(SOURCE[row], [1] + sequence[:-1]),
                rtol=1e-4, atol=1e-6,
            )


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_wide_beam_with_attention_finds_the_exhaustive_best(attention):
    # 4 emittable words and max_length 3: at most 4 + 16 + 64 live prefixes,
    # so a beam of 90 prunes nothing and must return the brute-force ranking.
    model = make_model(attention, bidirectional=True, context="both")
    result = seq2seq.beam_search_decode(model, SOURCE, 90, 3)
    assert_exhaustive_best(
        NumpyAttentionSeq2Seq(model), SOURCE, result.sequences, result.log_probs,
        7, 3, top=6,
    )


@pytest.mark.slow
def test_beam_search_matches_the_numpy_beam_search_with_length_penalty():
    model = make_model("luong", bidirectional=True)
    reference = NumpyAttentionSeq2Seq(model)
    result = seq2seq.beam_search_decode(model, SOURCE, 3, 4, length_penalty=1.0)
    for row in range(len(SOURCE)):
        expected = reference.beam_search(SOURCE[row], 3, 4, 1.0)
        assert [trimmed(s) for s in result.sequences[row].numpy()] == [
            e[0] for e in expected
        ]
        np.testing.assert_allclose(
            result.scores[row], [e[2] for e in expected], rtol=1e-4
        )


@pytest.mark.slow
def test_beam_of_one_is_greedy_for_sources_of_every_length():
    # The second and third calls have other source lengths, which makes
    # beam_search_decode trace again for sources of any length: one
    # hypothesis per example must still be a beam of static width 1.
    model = make_model("luong", bidirectional=True)
    reference = NumpyAttentionSeq2Seq(model)
    for source in (SOURCE, SOURCE[:, :3], SOURCE[:2, :2]):
        result = seq2seq.beam_search_decode(model, source, 1, 5)
        for row in range(len(source)):
            expected, expected_log_prob = reference.greedy(source[row], 5)
            assert trimmed(result.sequences[row, 0]) == expected
            np.testing.assert_allclose(result.log_probs[row, 0], expected_log_prob, rtol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_scheduled_sampling_extremes_match_numpy(attention):
    schedule = seq2seq.LinearSamplingSchedule(decay_steps=10)
    model = make_model(attention, context="both", sampling_schedule=schedule, seed=2)
    states, context = model.encode(SOURCE)
    decoder_input = tf.constant(DECODER_INPUT, tf.int32)
    teacher = model.scheduled_sampling(decoder_input, states, context, 1.0, True)
    free = model.scheduled_sampling(decoder_input, states, context, 0.0, True)
    reference = NumpyAttentionSeq2Seq(model)
    for row in range(len(SOURCE)):
        np.testing.assert_allclose(
            teacher[row],
            reference.teacher_forced_logits(SOURCE[row], DECODER_INPUT[row]),
            rtol=1e-4, atol=1e-5,
        )
        np.testing.assert_allclose(
            free[row], reference.free_running_logits(SOURCE[row], 4),
            rtol=1e-4, atol=1e-5,
        )


@pytest.mark.slow
def test_every_decoder_compiles_with_xla():
    model = make_model("luong", bidirectional=True, context="both")
    source = tf.constant(SOURCE)
    for decode in (
        lambda s: seq2seq.greedy_decode(model, s, 5, return_alignments=True),
        lambda s: seq2seq.sample_decode(model, s, 5, 0.8, 3, seed=1, return_alignments=True),
        lambda s: seq2seq.beam_search_decode(model, s, 3, 5, 0.6, return_alignments=True),
    ):
        plain = decode(source)
        compiled = tf.function(decode, jit_compile=True)(source)
        np.testing.assert_array_equal(plain.sequences, compiled.sequences)
        np.testing.assert_allclose(plain.log_probs, compiled.log_probs, rtol=1e-5)
        np.testing.assert_allclose(
            plain.alignments, compiled.alignments, rtol=1e-4, atol=1e-6
        )


# ------------------------------------------------------ training and saving
def copy_task(rng, count=512, length=5, vocabulary=10):
    lengths = rng.integers(2, length + 1, count)
    source = np.zeros((count, length), np.int32)
    for row, n in enumerate(lengths):
        source[row, :n] = rng.integers(4, vocabulary, n)
    return seq2seq.teacher_forcing_pair(source, source)


@pytest.mark.slow
@pytest.mark.parametrize("attention, jit", [("bahdanau", True), ("luong", False)])
def test_fit_learns_to_copy_with_dropout(attention, jit):
    rng = np.random.default_rng(0)
    inputs, targets = copy_task(rng)
    keras.utils.set_random_seed(0)
    model = seq2seq.Seq2Seq(
        10, 10, kerasrnn.GRUCell(24, dropout=0.1, recurrent_dropout=0.1, seed=0),
        embedding_dim=8, bidirectional=True, attention=attention,
    )
    model.compile(keras.optimizers.Adam(1e-2), seq2seq.SequenceCrossEntropy(), jit_compile=jit)
    history = model.fit(inputs, targets, batch_size=64, epochs=12, verbose=0)
    assert history.history["loss"][-1] < 0.3 * history.history["loss"][0]
    # The masks drawn for the training loop were released.
    assert model.decoder.cell._dropout_mask is None
    # Copying aligns output t with source position t.
    alignments = model.attention_weights({k: v[:32] for k, v in inputs.items()}).numpy()
    lengths = (np.asarray(inputs["source"][:32]) != 0).sum(1)
    diagonal = [alignments[r, t, t] for r in range(32) for t in range(lengths[r])]
    assert np.mean(diagonal) > 0.5


@pytest.mark.slow
def test_mixed_precision_training_step():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        rng = np.random.default_rng(1)
        inputs, targets = copy_task(rng, count=64)
        model = seq2seq.Seq2Seq(
            10, 10, kerasrnn.LSTMCell(8), embedding_dim=8, bidirectional=True,
            attention="bahdanau", context="both",
        )
        model.compile("adam", seq2seq.SequenceCrossEntropy())
        history = model.fit(inputs, targets, batch_size=32, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        alignments = model.attention_weights(inputs).numpy()
        lengths = (np.asarray(inputs["source"]) != 0).sum(1)
        for row, real in enumerate(lengths):
            np.testing.assert_allclose(alignments[row].sum(-1), 1.0, rtol=1e-3)
            np.testing.assert_array_equal(alignments[row, :, real:], 0.0)
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_keras_file_round_trip(tmp_path, attention):
    model = make_model(
        attention, bidirectional=True,
        **({"attention_units": 3} if attention == "bahdanau" else {"input_feeding": False}),
    )
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert restored.get_config() == model.get_config()
    np.testing.assert_array_equal(model(INPUTS), restored(INPUTS))
    np.testing.assert_array_equal(
        model.attention_weights(INPUTS), restored.attention_weights(INPUTS)
    )


@pytest.mark.slow
def test_keras_cells_with_attention():
    model = seq2seq.Seq2Seq(
        10, 7, keras.layers.GRUCell(6), bidirectional=True, context="both",
        attention="luong",
    )
    assert model((SOURCE, DECODER_INPUT)).shape == (3, 4, 7)
    alignments = model.attention_weights((SOURCE, DECODER_INPUT)).numpy()
    np.testing.assert_allclose(alignments[0].sum(-1), 1.0, rtol=1e-6)


# ----------------------------------------------------------------- counting
@pytest.mark.parametrize(
    "attention, options, attention_params",
    [
        # u·q + u·m + u with u = 3, q = n = 5, m = 2n = 10.
        ("bahdanau", dict(attention_units=3), 3 * 5 + 3 * 10 + 3),
        # n·m + (n + m)·n with n = 5, m = 10.
        ("luong", {}, 5 * 10 + 15 * 5),
    ],
)
def test_attention_parameters_in_closed_form(attention, options, attention_params):
    model = make_model(attention, bidirectional=True, **options)
    report = kerasrnn.explain_params(model, print_fn=None)
    assert report.total == model.count_params()
    rows = [layer for layer in report.layers if layer.name == "attention"]
    assert len(rows) == 1 and rows[0].total == attention_params == rows[0].count_params
    assert "×" in rows[0].formula
    # The decoder's input grows by what attention feeds it: [E y; a] with
    # a of size m = 10 (Bahdanau), [E y; ã] with ã of size n = 5 (Luong).
    fed = 10 if attention == "bahdanau" else 5
    assert model.decoder.cell.kernel.shape == (4 + fed, 4 * 5)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "options, name",
    [
        (dict(attention="dot"), "attention"),
        (dict(attention="bahdanau", attention_units=0), "attention_units"),
        (dict(attention="bahdanau", attention_units=2.5), "attention_units"),
        (dict(attention="luong", attention_units=4), "attention_units"),
        (dict(attention=None, input_feeding=True), "input_feeding"),
        (dict(attention="luong", input_feeding="no"), "input_feeding"),
    ],
)
def test_bad_attention_arguments(options, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(4), **options)


def test_bad_alignment_requests():
    plain = seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(4))
    with pytest.raises(ValueError, match="return_alignments"):
        seq2seq.greedy_decode(plain, SOURCE, 4, return_alignments=True)
    with pytest.raises(ValueError, match="attention=None"):
        plain.attention_weights(INPUTS)
    model = make_model("luong")
    with pytest.raises(ValueError, match="same number of examples"):
        model.attention_weights({"source": SOURCE, "decoder_input": DECODER_INPUT[:2]})
    with pytest.raises(ValueError, match="decoder_input"):
        model.attention_weights({"source": SOURCE, "decoder_input": DECODER_INPUT[0]})
    with pytest.raises(ValueError, match="return_alignments"):
        seq2seq.beam_search_decode(model, SOURCE, 2, 4, return_alignments="yes")
