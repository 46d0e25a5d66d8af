"""Right-to-left models and right-to-left rescoring, against NumPy references
run on the reversed targets by hand."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.seq2seq.target_order import reverse_first
from tests.kerasrnn.seq2seq.numpy_attention import NumpyAttentionSeq2Seq
from tests.kerasrnn.seq2seq.numpy_ensemble import NumpyEnsemble
from tests.kerasrnn.seq2seq.numpy_seq2seq import END, START, log_softmax, trimmed
from tests.kerasrnn.seq2seq.test_ensemble import make_members, reference, sharpened
from tests.kerasrnn.seq2seq.test_serving import serve_in_clean_process

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0], [6, 9, 5, 0]])
# Every target ends with <end>, as teacher_forcing_pair makes them.
TARGET = np.array([[5, 4, 3, 2], [6, 2, 0, 0], [2, 0, 0, 0], [3, 3, 2, 0]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 0, 0, 0], [1, 3, 3, 0]])
INPUTS = {"source": SOURCE, "decoder_input": DECODER_INPUT}


def right_to_left_model(seed=7, attention="luong"):
    keras.utils.set_random_seed(seed)
    model = seq2seq.Seq2Seq(
        10, 7, kerasrnn.LSTMCell(5, bias_initializer="random_normal"),
        embedding_dim=4, bidirectional=True, attention=attention,
        target_order="right_to_left",
    )
    return sharpened(model, seed)


def body(sequence):
    """The tokens of a decoded or target row before <end>."""
    return [t for t in trimmed(sequence) if t != END]


def test_reverse_first_hand_worked():
    values = tf.constant([[1, 2, 3, 0], [4, 5, 0, 0], [6, 0, 0, 0]])
    reversed_rows = reverse_first(values, tf.constant([3, 2, 0]), axis=1)
    assert reversed_rows.numpy().tolist() == [[3, 2, 1, 0], [5, 4, 0, 0], [6, 0, 0, 0]]
    # A trailing axis moves with its row.
    pairs = tf.stack([values, -values], axis=-1)
    np.testing.assert_array_equal(
        reverse_first(pairs, tf.constant([3, 2, 0]), axis=1)[..., 1], -reversed_rows
    )


def test_right_to_left_logits_score_the_reversed_target_in_the_targets_order():
    model = right_to_left_model()
    numpy_model = NumpyAttentionSeq2Seq(model)
    logits = np.asarray(model(INPUTS))
    alignments = np.asarray(model.attention_weights(INPUTS))
    for row in range(len(SOURCE)):
        tokens = body(TARGET[row])
        length = len(tokens)
        # The reference reads <start>, y_L … y_1: its step k scores y_{L-k}
        # (k < L), its step L scores <end>.
        reversed_input = [START, *tokens[::-1]]
        expected = numpy_model.teacher_forced_logits(SOURCE[row], reversed_input)
        expected_alignments = numpy_model.teacher_forced_alignments(
            SOURCE[row], reversed_input
        )
        for t in range(length):
            np.testing.assert_allclose(
                logits[row, t], expected[length - 1 - t], rtol=1e-4, atol=1e-5
            )
            np.testing.assert_allclose(
                alignments[row, t, : len(expected_alignments[0])],
                expected_alignments[length - 1 - t], rtol=1e-4, atol=1e-6,
            )
        np.testing.assert_allclose(logits[row, length], expected[length], rtol=1e-4, atol=1e-5)
    # The loss is therefore the mean of −log p over the reversed targets.
    losses = [
        -log_softmax(step)[label]
        for row in range(len(SOURCE))
        for step, label in zip(
            numpy_model.teacher_forced_logits(
                SOURCE[row], [START, *body(TARGET[row])[::-1]]
            ),
            [*body(TARGET[row])[::-1], END],
        )
    ]
    loss = seq2seq.SequenceCrossEntropy()(TARGET, logits)
    np.testing.assert_allclose(float(loss), np.mean(losses), rtol=1e-5)


@pytest.mark.slow
def test_right_to_left_decoders_return_answers_that_read_left_to_right():
    model = right_to_left_model()
    numpy_model = NumpyAttentionSeq2Seq(model)
    greedy = seq2seq.greedy_decode(model, SOURCE, 5, return_alignments=True)
    sequences, log_probs, alignments = (
        greedy.sequences, greedy.log_probs, greedy.alignments
    )
    beam = seq2seq.beam_search_decode(model, SOURCE, 3, 5)
    beams, beam_log_probs = beam.sequences, beam.log_probs
    for row in range(len(SOURCE)):
        emitted, total = numpy_model.greedy(SOURCE[row], 5)
        tokens = [t for t in emitted if t != END]
        assert trimmed(sequences[row]) == tokens[::-1] + emitted[len(tokens):]
        np.testing.assert_allclose(log_probs[row], total, rtol=1e-4)
        # α rows move with their tokens: row t is the α that emitted y_t.
        reference_alignments = numpy_model.teacher_forced_alignments(
            SOURCE[row], [START, *emitted[:-1]]
        )
        for t in range(len(tokens)):
            np.testing.assert_allclose(
                alignments[row, t, : len(reference_alignments[0])],
                reference_alignments[len(tokens) - 1 - t], rtol=1e-4, atol=1e-6,
            )
        expected = numpy_model.beam_search(SOURCE[row], 3, 5, 0.0)
        for beam, (emitted, total, _) in enumerate(expected):
            tokens = [t for t in emitted if t != END]
            assert trimmed(beams[row, beam]) == tokens[::-1] + emitted[len(tokens):]
            np.testing.assert_allclose(beam_log_probs[row, beam], total, rtol=1e-4)


@pytest.mark.slow
def test_right_to_left_members_rescore_the_left_to_right_beam():
    left_to_right = make_members()
    rescorer = right_to_left_model()
    weight = 3.0
    ensemble = seq2seq.Seq2SeqEnsemble([*left_to_right, rescorer], rescoring_weight=weight)
    assert ensemble.rescorers() == [rescorer]
    assert ensemble.decoding_members() == left_to_right
    numpy_mixture = NumpyEnsemble([reference(m) for m in left_to_right])
    numpy_rescorer = NumpyAttentionSeq2Seq(rescorer)
    result = seq2seq.beam_search_decode(ensemble, SOURCE, 3, 5)
    sequences, log_probs, scores = result.sequences, result.log_probs, result.scores
    reordered = 0
    for row in range(len(SOURCE)):
        found = numpy_mixture.beam_search(SOURCE[row], 3, 5, 0.0)
        ranked = []
        for emitted, total, _ in found:
            tokens = [t for t in emitted if t != END]
            backwards = numpy_rescorer.sequence_log_prob(
                SOURCE[row], tokens[::-1] + emitted[len(tokens):]
            )
            ranked.append((emitted, total, total + weight * backwards))
        ranked.sort(key=lambda h: -h[2])
        reordered += [h[0] for h in ranked] != [h[0] for h in found]
        assert [trimmed(s) for s in np.asarray(sequences[row])] == [h[0] for h in ranked]
        np.testing.assert_allclose(log_probs[row], [h[1] for h in ranked], rtol=1e-4)
        np.testing.assert_allclose(scores[row], [h[2] for h in ranked], rtol=1e-4)
    # The rescorer changed some ranking: the comparison is not of the plain beam.
    assert reordered > 0
    # Greedy decoding keeps one hypothesis: the left-to-right mixture alone.
    greedy = seq2seq.greedy_decode(ensemble, SOURCE, 5)
    for row in range(len(SOURCE)):
        emitted, total = numpy_mixture.greedy(SOURCE[row], 5)
        assert trimmed(greedy.sequences[row]) == emitted
        np.testing.assert_allclose(greedy.log_probs[row], total, rtol=1e-4)


def while_loops(function, *specs):
    """The number of `tf.while_loop`s in the graph of `function` traced at
    `specs`."""
    graph = tf.function(function, input_signature=list(specs)).get_concrete_function().graph
    return sum(op.type in ("While", "StatelessWhile") for op in graph.get_operations())


@pytest.mark.slow
def test_unrolled_rescoring_steps_the_rescorer_without_a_loop():
    """`rescore(..., unrolled=True)`, what the LiteRT export's beam search
    calls: the NumPy rescorer's log-probability, as the teacher-forced call
    gives it, with no loop beyond the rescorer's encoder (which the export
    unrolls on its own) although the rescorer's attention feeds its cell."""
    rescorer = right_to_left_model()
    assert rescorer.input_feeding
    weight = 0.5
    ensemble = seq2seq.Seq2SeqEnsemble([*make_members(), rescorer], rescoring_weight=weight)
    # Ended hypotheses, an empty one, and ones cut at L = 4 tokens.
    sequences = np.array(
        [
            [[5, 4, 2, 0], [3, 4, 5, 6]],
            [[6, 2, 0, 0], [2, 0, 0, 0]],
            [[4, 4, 4, 2], [3, 3, 3, 3]],
            [[3, 3, 2, 0], [6, 5, 4, 3]],
        ],
        np.int32,
    )
    scores = np.array([[-1.0, -2.5], [-0.5, -3.0], [-2.0, -2.0], [-4.0, -1.5]], np.float32)
    specs = (
        tf.TensorSpec([None, SOURCE.shape[1]], tf.int32),
        tf.TensorSpec([None, 2, 4], tf.int32),
        tf.TensorSpec([None, 2], tf.float32),
    )

    def unrolled(source, hypotheses, found):
        return ensemble.rescore(source, hypotheses, found, unrolled=True)

    rescored = tf.function(unrolled, input_signature=list(specs))(SOURCE, sequences, scores)
    numpy_rescorer = NumpyAttentionSeq2Seq(rescorer)
    for row in range(len(SOURCE)):
        for beam in range(2):
            emitted = trimmed(sequences[row, beam])
            tokens = [t for t in emitted if t != END]
            backwards = numpy_rescorer.sequence_log_prob(
                SOURCE[row], tokens[::-1] + emitted[len(tokens):]
            )
            np.testing.assert_allclose(
                rescored[row, beam], scores[row, beam] + weight * backwards, rtol=1e-4
            )
    np.testing.assert_allclose(rescored, ensemble.rescore(SOURCE, sequences, scores), rtol=1e-5)
    encoder_loops = while_loops(lambda source: rescorer.encode(source)[0], specs[0])
    assert while_loops(unrolled, *specs) == encoder_loops
    assert while_loops(lambda *inputs: ensemble.rescore(*inputs), *specs) > encoder_loops


@pytest.mark.slow
def test_rescored_ensemble_round_trips_and_serves_without_kerasrnn(tmp_path):
    ensemble = seq2seq.Seq2SeqEnsemble(
        [*make_members(), right_to_left_model()], rescoring_weight=0.5
    )
    path = tmp_path / "model.keras"
    ensemble.save(path)
    restored = keras.models.load_model(path)
    assert restored.rescoring_weight == 0.5
    assert [m.target_order for m in restored.members] == [
        "left_to_right", "left_to_right", "right_to_left"
    ]
    np.testing.assert_array_equal(restored(INPUTS), ensemble(INPUTS))
    letters = seq2seq.Vocabulary(list("abcdef"))
    phonemes = seq2seq.Vocabulary(list("XYZ"))
    module = seq2seq.export_serving(
        ensemble, tmp_path / "served", letters, phonemes, beam_width=3,
        max_target_length=5,
    )
    words = ["abc", "fed", ""]
    served = serve_in_clean_process(tmp_path / "served", words)
    in_process = module.serve(tf.constant(words))
    assert served["outputs"] == [t.decode() for t in in_process["outputs"].numpy()]
    np.testing.assert_allclose(served["log_probs"], in_process["log_probs"], rtol=1e-5)
    # The served answer is the rescored beam's best.
    source = tf.ragged.constant([letters.encode(w) for w in words], tf.int32).to_tensor(0)
    sequences = seq2seq.beam_search_decode(ensemble, source, 3, 5).sequences
    assert served["outputs"][:2] == [
        " ".join(phonemes.decode(row)) for row in sequences[:2, 0].numpy()
    ]


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ({"target_order": "backwards"}, "target_order"),
        ({"target_order": None}, "target_order"),
    ],
)
def test_unknown_target_order_is_refused(arguments, fragment):
    with pytest.raises(ValueError, match=fragment):
        seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(3), **arguments)


@pytest.mark.parametrize("weight", [-1.0, float("nan"), "1"])
def test_bad_rescoring_weight_is_refused(weight):
    with pytest.raises(ValueError, match="`rescoring_weight` must be a finite number"):
        seq2seq.Seq2SeqEnsemble(
            [*make_members(), right_to_left_model()], rescoring_weight=weight
        )


@pytest.mark.parametrize("right_to_left_only", [False, True])
def test_a_rescoring_weight_without_rescorers_is_refused(right_to_left_only):
    members = (
        [right_to_left_model(seed) for seed in (1, 2)] if right_to_left_only else make_members()
    )
    for weight in (0.5, 1.0, 0.0):
        with pytest.raises(
            ValueError,
            match="`rescoring_weight` needs right-to-left members.*left-to-right.*"
            f"Received: rescoring_weight={weight}",
        ):
            seq2seq.Seq2SeqEnsemble(members, rescoring_weight=weight)
    # Not given, it is None: nothing rescores, and the configuration says so.
    ensemble = seq2seq.Seq2SeqEnsemble(members)
    assert ensemble.rescoring_weight is None
    assert ensemble.get_config()["rescoring_weight"] is None


def test_rescorers_weigh_one_unless_told_otherwise():
    ensemble = seq2seq.Seq2SeqEnsemble([*make_members(), right_to_left_model()])
    assert ensemble.rescoring_weight == 1.0


def test_a_saved_weight_without_rescorers_still_loads():
    # Configurations written before the refusal hold a weight (1.0 by
    # default) for ensembles with nothing to rescore with; it never had an
    # effect, and loading drops it.
    config = seq2seq.Seq2SeqEnsemble(make_members()).get_config()
    for weight in (1.0, 0.5):
        restored = seq2seq.Seq2SeqEnsemble.from_config({**config, "rescoring_weight": weight})
        assert restored.rescoring_weight is None and not restored.rescorers()
