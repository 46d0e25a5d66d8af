"""Seq2SeqEnsemble against the NumPy mixture of its members' references."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.numpy_attention import NumpyAttentionSeq2Seq
from tests.kerasrnn.seq2seq.numpy_ensemble import NumpyEnsemble
from tests.kerasrnn.seq2seq.numpy_seq2seq import (
    END,
    NumpySeq2Seq,
    assert_exhaustive_best,
    log_softmax,
    trimmed,
)
from tests.kerasrnn.seq2seq.sharpened import sharpened
from tests.kerasrnn.seq2seq.test_serving import serve_in_clean_process

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0]])
TARGET = np.array([[5, 4, 3, 2], [6, 2, 0, 0], [3, 4, 5, 6]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5]])
INPUTS = {"source": SOURCE, "decoder_input": DECODER_INPUT}


def make_members(third=None, **options):
    """A bidirectional Luong LSTM and a Bahdanau GRU with the context at
    every step (different cells, sizes and attention), and `third` if given:
    "plain" (no attention) or "luong"."""
    keras.utils.set_random_seed(3)
    members = [
        seq2seq.Seq2Seq(
            10, 7, kerasrnn.LSTMCell(5, bias_initializer="random_normal"),
            embedding_dim=4, bidirectional=True, attention="luong", **options,
        ),
        seq2seq.Seq2Seq(
            10, 7, kerasrnn.GRUCell(4, bias_initializer="random_normal"),
            embedding_dim=3, context="both", attention="bahdanau", **options,
        ),
    ]
    if third is not None:
        members.append(
            seq2seq.Seq2Seq(
                10, 7, kerasrnn.ElmanCell(6, bias_initializer="random_normal"),
                embedding_dim=3, attention=None if third == "plain" else third,
            )
        )
    return [
        sharpened(member, seed, attention=member.has_attention)
        for seed, member in enumerate(members)
    ]


def reference(member):
    if not member.has_attention:
        return NumpySeq2Seq(member)
    return NumpyAttentionSeq2Seq(member)


def test_loss_is_the_sum_of_the_members_losses():
    members = make_members(third="plain")
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    logits = ensemble(INPUTS)
    assert logits.shape == (3, 3, 4, 7)
    expected = 0.0
    for member in members:
        numpy_member = reference(member)
        losses = [
            -log_softmax(step_logits)[label]
            for row in range(len(SOURCE))
            for step_logits, label in zip(
                numpy_member.teacher_forced_logits(SOURCE[row], DECODER_INPUT[row]),
                TARGET[row],
            )
            if label != 0
        ]
        expected += np.mean(losses)
    loss = seq2seq.SequenceCrossEntropy()(TARGET, logits)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


@pytest.mark.slow
def test_each_member_trains_as_it_would_alone():
    members = make_members()
    alone = []
    for member in members:
        clone = seq2seq.Seq2Seq.from_config(member.get_config())
        clone.set_weights(member.get_weights())
        alone.append(clone)
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    for model in [ensemble, *alone]:
        model.compile(keras.optimizers.Adam(0.05, clipnorm=0.5), seq2seq.SequenceCrossEntropy())
        model.fit(INPUTS, TARGET, batch_size=2, epochs=2, shuffle=False, verbose=0)
    for member, clone in zip(members, alone):
        for trained, expected in zip(member.get_weights(), clone.get_weights()):
            np.testing.assert_allclose(trained, expected, rtol=1e-5, atol=1e-6)
    # Training moved them: the comparison is not of initial weights.
    fresh = make_members()
    assert not np.allclose(members[0].get_weights()[0], fresh[0].get_weights()[0])


@pytest.mark.slow
def test_scheduled_sampling_follows_the_ensembles_step():
    schedule = seq2seq.LinearSamplingSchedule(decay_steps=10)
    members = make_members(sampling_schedule=schedule, seed=2)
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    ensemble.compile(keras.optimizers.SGD(0.0), seq2seq.SequenceCrossEntropy())
    ensemble.optimizer.build(ensemble.trainable_variables)
    for step, teacher_forced in [(0, True), (10, False)]:
        ensemble.optimizer.iterations.assign(step)
        logits = ensemble(INPUTS, training=True)
        for member, member_logits in zip(members, logits):
            numpy_member = reference(member)
            for row in range(len(SOURCE)):
                expected = (
                    numpy_member.teacher_forced_logits(SOURCE[row], DECODER_INPUT[row])
                    if teacher_forced
                    else numpy_member.free_running_logits(SOURCE[row], 4)
                )
                np.testing.assert_allclose(
                    member_logits[row], expected, rtol=1e-4, atol=1e-5
                )


@pytest.mark.slow
def test_decoders_and_alignments_match_the_numpy_mixture():
    ensemble = seq2seq.Seq2SeqEnsemble(make_members(third="luong"))
    numpy_ensemble = NumpyEnsemble([reference(m) for m in ensemble.members])
    greedy = seq2seq.greedy_decode(ensemble, SOURCE, 5, return_alignments=True)
    sequences, log_probs, alignments = (
        greedy.sequences, greedy.log_probs, greedy.alignments
    )
    beam = seq2seq.beam_search_decode(ensemble, SOURCE, 3, 5, return_alignments=True)
    beams, beam_log_probs = beam.sequences, beam.log_probs
    beam_alignments = beam.alignments.numpy()
    for row in range(len(SOURCE)):
        real = int((SOURCE[row] != 0).sum())
        expected, expected_log_prob = numpy_ensemble.greedy(SOURCE[row], 5)
        assert trimmed(sequences[row]) == expected
        np.testing.assert_allclose(log_probs[row], expected_log_prob, rtol=1e-4)
        np.testing.assert_allclose(
            alignments[row, : len(expected), :real],
            numpy_ensemble.teacher_forced_alignments(SOURCE[row], [1] + expected[:-1]),
            rtol=1e-4, atol=1e-6,
        )
        expected_beam = numpy_ensemble.beam_search(SOURCE[row], 3, 5, 0.0)
        assert [trimmed(s) for s in beams[row].numpy()] == [e[0] for e in expected_beam]
        np.testing.assert_allclose(
            beam_log_probs[row], [e[1] for e in expected_beam], rtol=1e-4
        )
        best = expected_beam[0][0]
        np.testing.assert_allclose(
            beam_alignments[row, 0, : len(best), :real],
            numpy_ensemble.teacher_forced_alignments(SOURCE[row], [1] + best[:-1]),
            rtol=1e-4, atol=1e-6,
        )
        np.testing.assert_allclose(beam_alignments[row, 0, : len(best)].sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_array_equal(beam_alignments[row, :, :, real:], 0.0)
    np.testing.assert_allclose(
        ensemble.attention_weights(INPUTS)[0, :, :4],
        numpy_ensemble.teacher_forced_alignments(SOURCE[0], DECODER_INPUT[0]),
        rtol=1e-4, atol=1e-6,
    )


@pytest.mark.slow
def test_wide_beam_finds_the_exhaustive_best_of_the_mixture():
    # 4 emittable words and max_length 3: at most 4 + 16 + 64 live prefixes,
    # so a beam of 90 prunes nothing and must return the brute-force ranking.
    ensemble = seq2seq.Seq2SeqEnsemble(make_members(third="plain"))
    numpy_ensemble = NumpyEnsemble([reference(m) for m in ensemble.members])
    result = seq2seq.beam_search_decode(ensemble, SOURCE, 90, 3)
    assert_exhaustive_best(
        numpy_ensemble, SOURCE, result.sequences, result.log_probs, 7, 3, top=6
    )


@pytest.mark.slow
def test_one_member_decodes_as_that_member():
    member = make_members()[0]
    alone = seq2seq.beam_search_decode(member, SOURCE, 3, 5)
    inside = seq2seq.beam_search_decode(seq2seq.Seq2SeqEnsemble([member]), SOURCE, 3, 5)
    np.testing.assert_array_equal(inside.sequences, alone.sequences)
    np.testing.assert_allclose(inside.log_probs, alone.log_probs, rtol=1e-5)


@pytest.mark.slow
def test_keras_file_round_trip_and_parameters(tmp_path):
    members = make_members(third="plain")
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    ensemble.save(tmp_path / "ensemble.keras")
    restored = keras.models.load_model(tmp_path / "ensemble.keras")
    assert isinstance(restored, seq2seq.Seq2SeqEnsemble)
    np.testing.assert_array_equal(restored(INPUTS), ensemble(INPUTS))
    report = kerasrnn.explain_params(restored, print_fn=None)
    assert report.agrees
    assert report.total == sum(member.count_params() for member in members)


@pytest.mark.slow
def test_served_without_kerasrnn(tmp_path):
    letters = seq2seq.Vocabulary(list("abcdef"))
    phones = seq2seq.Vocabulary(["AA", "B", "K"])
    members = make_members()
    for member in members:
        # Answers longer than <end> alone, so that alignments have rows.
        bias = member.output_projection.bias
        bias.assign(bias - 4.0 * tf.one_hot(END, 7))
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    seq2seq.export_serving(
        ensemble, tmp_path / "saved_model", letters, phones, beam_width=3,
        max_target_length=5,
    )
    words = ["abc", "fed", "", "a"]
    served = serve_in_clean_process(tmp_path / "saved_model", words)
    numpy_ensemble = NumpyEnsemble([reference(m) for m in ensemble.members])
    for index, word in enumerate(words):
        if not word:
            assert served["beam_outputs"][index] == ["", "", ""]
            continue
        expected = numpy_ensemble.beam_search(np.array(letters.encode(word)), 3, 5, 0.0)
        assert served["beam_outputs"][index] == [
            " ".join(phones.decode(sequence)) for sequence, *_ in expected
        ]
        np.testing.assert_allclose(
            served["beam_log_probs"][index], [e[1] for e in expected], rtol=1e-4
        )
        rows = served["output_lengths"][index]
        assert rows > 0
        np.testing.assert_allclose(
            np.array(served["alignments"][index])[:rows, : len(word)],
            numpy_ensemble.teacher_forced_alignments(
                np.array(letters.encode(word)), [1] + expected[0][0][: rows - 1]
            ),
            rtol=1e-4, atol=1e-5,
        )


@pytest.mark.parametrize(
    "members, message",
    [
        ([], "non-empty list"),
        ("model", "non-empty list"),
        ([keras.layers.Dense(3)], "non-empty list"),
        (
            lambda: [
                seq2seq.Seq2Seq(10, 7, kerasrnn.GRUCell(3)),
                seq2seq.Seq2Seq(10, 8, kerasrnn.GRUCell(3)),
            ],
            r"one target_vocabulary_size.*\[7, 8\]",
        ),
        (
            lambda: [
                seq2seq.Seq2Seq(11, 7, kerasrnn.GRUCell(3)),
                seq2seq.Seq2Seq(10, 7, kerasrnn.GRUCell(3)),
            ],
            r"one source_vocabulary_size.*\[11, 10\]",
        ),
    ],
)
def test_bad_members_are_refused(members, message):
    if callable(members):
        members = members()
    with pytest.raises(ValueError, match=f"`members`.*{message}"):
        seq2seq.Seq2SeqEnsemble(members)


def test_alignments_need_every_member_to_attend():
    ensemble = seq2seq.Seq2SeqEnsemble(make_members(third="plain"))
    assert not ensemble.has_attention and ensemble.attention_kind == "mixed"
    assert ensemble.attention == ()
    with pytest.raises(ValueError, match="return_alignments=True.*has_attention is False"):
        seq2seq.greedy_decode(ensemble, SOURCE, 4, return_alignments=True)
    with pytest.raises(ValueError, match=r"every decoding member.*\['luong', 'bahdanau', None\]"):
        ensemble.attention_weights(INPUTS)
    with pytest.raises(ValueError, match="Seq2Seq or Seq2SeqEnsemble"):
        seq2seq.greedy_decode(ensemble.members, SOURCE, 4)


def test_models_and_ensembles_are_decodable_models_that_say_what_they_carry():
    members = make_members(third="plain")
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    for model in (*members, ensemble):
        assert isinstance(model, seq2seq.DecodableModel)
    assert [member.has_attention for member in members] == [True, True, False]
    # LSTM(5): h and c, then Luong's fed ã (n = 5); GRU(4): h; Elman(6): h.
    assert [member.decoder_state_sizes for member in members] == [[5, 5, 5], [4], [6]]
    states, _ = ensemble.encode(SOURCE)
    assert [state.shape[-1] for state in states] == [5, 5, 5, 4, 6]
    # Without right-to-left members nothing rescores: the scores stand.
    scores = np.array([[-1.0, -2.5], [-0.5, -3.0], [-2.0, -2.0]], np.float32)
    sequences = np.array([[[4, 2, 0], [5, 2, 0]]] * 3, np.int32)
    for model in (*members, ensemble):
        np.testing.assert_array_equal(model.rescore(SOURCE, sequences, scores), scores)


def test_members_cells_stay_their_own_when_their_configs_carry_one_sharing_mark(tmp_path):
    """Keras marks objects it serializes while saving or loading by their
    `id()`, and loading reuses one object for a recurring mark: a file whose
    members' cells carry the same mark (as two short-lived cells at one
    address would) still loads each member with its own cell."""
    import json
    import zipfile

    ensemble = seq2seq.Seq2SeqEnsemble(make_members())
    expected = ensemble(INPUTS)
    saved, marked = tmp_path / "ensemble.keras", tmp_path / "marked.keras"
    ensemble.save(saved)

    def mark_cells(config):
        if isinstance(config, dict):
            if isinstance(config.get("cell"), dict):
                config["cell"]["shared_object_id"] = 7
            for value in config.values():
                mark_cells(value)
        elif isinstance(config, list):
            for value in config:
                mark_cells(value)

    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(marked, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(content)
                mark_cells(config)
                assert json.dumps(config).count('"shared_object_id": 7') == 2
                content = json.dumps(config).encode()
            target.writestr(item, content)
    restored = keras.models.load_model(marked)
    assert [type(m.decoder.cell).__name__ for m in restored.members] == ["LSTMCell", "GRUCell"]
    np.testing.assert_allclose(restored(INPUTS), expected, rtol=1e-6, atol=1e-6)


def test_a_model_built_from_its_config_while_keras_loads_shares_no_object():
    """Inside Keras's loading scope, building a model from its config must
    not enter its short-lived copies (cells, Bidirectional's backward layer)
    in the maps by which Keras reuses objects of the same `id()`."""
    from keras.src.backend.common import global_state
    from keras.src.saving.serialization_lib import ObjectSharingScope

    config = make_members()[0].get_config()
    with ObjectSharingScope():
        rebuilt = seq2seq.Seq2Seq.from_config(config)
        recorded = global_state.get_global_attribute("shared_objects/id_to_config_map")
        assert recorded == {}
    assert rebuilt.get_config() == config
