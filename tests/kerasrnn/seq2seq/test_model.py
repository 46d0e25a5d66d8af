"""Seq2Seq against the NumPy loop of eq:rnn-seq2seq, and training with fit."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.numpy_seq2seq import NumpySeq2Seq, log_softmax

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5]])


def make_model(cell="lstm", **kwargs):
    templates = {
        "lstm": lambda: kerasrnn.LSTMCell(5, bias_initializer="random_normal", seed=1),
        "elman": lambda: kerasrnn.ElmanCell(5, bias_initializer="random_normal"),
    }
    keras.utils.set_random_seed(3)
    options = dict(embedding_dim=4)
    options.update(kwargs)
    return seq2seq.Seq2Seq(10, 7, templates[cell](), **options)


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["elman", "lstm"])
@pytest.mark.parametrize("context", seq2seq.CONTEXTS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_teacher_forced_logits_match_numpy(cell, context, bidirectional):
    layers = 2 if cell == "lstm" else 1
    model = make_model(
        cell, context=context, bidirectional=bidirectional, encoder_layers=layers
    )
    logits = model({"source": SOURCE, "decoder_input": DECODER_INPUT}).numpy()
    reference = NumpySeq2Seq(model)
    for row in range(len(SOURCE)):
        expected = reference.teacher_forced_logits(SOURCE[row], DECODER_INPUT[row])
        np.testing.assert_allclose(logits[row], expected, rtol=1e-4, atol=1e-5)


def test_keras_cells_are_accepted():
    model = seq2seq.Seq2Seq(
        10, 7, keras.layers.GRUCell(6), bidirectional=True, context="both"
    )
    logits = model((SOURCE, DECODER_INPUT))
    assert logits.shape == (3, 4, 7)
    # Four GRU copies (2 directions, decoder) plus a bridge: distinct weights.
    assert len({id(w) for w in model.trainable_weights}) == len(model.trainable_weights)


def test_teacher_forcing_pair_hand_worked():
    inputs, target = seq2seq.teacher_forcing_pair(
        np.array([[4, 5, 0]]), np.array([[7, 8, 9, 0], [7, 0, 0, 0]])[:1]
    )
    np.testing.assert_array_equal(inputs["decoder_input"], [[1, 7, 8, 9, 0]])
    np.testing.assert_array_equal(target, [[7, 8, 9, 2, 0]])
    _, target = seq2seq.teacher_forcing_pair(np.array([[4]]), np.array([[7, 0, 0]]))
    np.testing.assert_array_equal(target, [[7, 2, 0, 0]])


def test_sequence_cross_entropy_hand_worked():
    logits = np.log(
        np.array(
            [[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]], [[0.2, 0.2, 0.6], [1 / 3, 1 / 3, 1 / 3]]]
        )
    )
    targets = np.array([[1, 2], [2, 0]])
    # Three real tokens with probabilities 0.25, 0.1 and 0.6; the pad is skipped.
    expected = -(np.log(0.25) + np.log(0.1) + np.log(0.6)) / 3
    loss = seq2seq.SequenceCrossEntropy()(targets, logits)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_label_smoothing_hand_worked():
    probabilities = np.array(
        [[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]], [[0.2, 0.2, 0.6], [1 / 3, 1 / 3, 1 / 3]]]
    )
    targets = np.array([[1, 2], [2, 0]])
    # Each of the three real tokens is scored against 0.9 on its target
    # plus 0.1/3 on each of the three ids; the pad is skipped.
    real = [(probabilities[0, 0], 1), (probabilities[0, 1], 2), (probabilities[1, 0], 2)]
    expected = np.mean(
        [-0.9 * np.log(p[y]) - 0.1 / 3 * np.log(p).sum() for p, y in real]
    )
    loss = seq2seq.SequenceCrossEntropy(label_smoothing=0.1)(
        targets, np.log(probabilities)
    )
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    config = seq2seq.SequenceCrossEntropy(label_smoothing=0.1).get_config()
    assert seq2seq.SequenceCrossEntropy.from_config(config).label_smoothing == 0.1


@pytest.mark.parametrize("label_smoothing", [-0.1, 1.0, float("nan"), "0.1", True])
def test_label_smoothing_out_of_range_is_refused(label_smoothing):
    with pytest.raises(ValueError, match="label_smoothing"):
        seq2seq.SequenceCrossEntropy(label_smoothing=label_smoothing)


@pytest.mark.slow
def test_scheduled_sampling_extremes():
    schedule = seq2seq.LinearSamplingSchedule(decay_steps=10)
    model = make_model("lstm", context="both", sampling_schedule=schedule, seed=2)
    states, context = model.encode(SOURCE)
    decoder_input = tf.constant(DECODER_INPUT, tf.int32)
    teacher = model.scheduled_sampling(decoder_input, states, context, 1.0, True)
    free = model.scheduled_sampling(decoder_input, states, context, 0.0, True)
    reference = NumpySeq2Seq(model)
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
    # Halfway, some steps (after the first) are fed the truth, some not.
    mixed = model.scheduled_sampling(
        tf.tile(decoder_input, [50, 1]), [tf.tile(s, [50, 1]) for s in states],
        {name: tf.tile(c, [50, 1]) for name, c in context.items()}, 0.5, True,
    ).numpy()
    teacher_rows = np.tile(teacher.numpy(), [50, 1, 1])
    free_rows = np.tile(free.numpy(), [50, 1, 1])
    same_as_teacher = np.isclose(mixed, teacher_rows, atol=1e-5).all(axis=(1, 2))
    same_as_free = np.isclose(mixed, free_rows, atol=1e-5).all(axis=(1, 2))
    assert same_as_teacher.any() and (~same_as_teacher & ~same_as_free).any()


def copy_task_dataset(examples=96, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=examples)
    source = np.zeros((examples, 4), np.int32)
    for row, length in enumerate(lengths):
        source[row, :length] = rng.integers(4, 8, size=length)
    return (
        tf.data.Dataset.from_tensor_slices((source, source))
        .batch(16)
        .map(seq2seq.teacher_forcing_pair)
    )


@pytest.mark.slow
def test_fit_learns_copy_task_and_logs_epsilon():
    dataset = copy_task_dataset()
    schedule = seq2seq.InverseSigmoidSamplingSchedule(k=3)
    model = seq2seq.Seq2Seq(
        8, 8, kerasrnn.GRUCell(24), embedding_dim=8, bidirectional=True,
        sampling_schedule=schedule, seed=0,
    )
    model.compile(keras.optimizers.Adam(0.02), seq2seq.SequenceCrossEntropy())
    # `fit` shuffles arrays only; a dataset keeps its own order.
    history = model.fit(dataset, epochs=4, shuffle=False, verbose=0).history
    assert history["loss"][-1] < 0.6 * history["loss"][0]
    # 6 steps per epoch; the last step of epoch e is i = 6e − 1:
    # ε = 3 / (3 + exp(i / 3)).
    expected = [3 / (3 + np.exp((6 * e - 1) / 3)) for e in (1, 2, 3, 4)]
    np.testing.assert_allclose(history["epsilon"], expected, rtol=1e-5)


@pytest.mark.slow
def test_save_and_config_round_trip(tmp_path):
    model = make_model(
        "lstm", bidirectional=True, encoder_layers=2, context="every_step",
        sampling_schedule=seq2seq.ExponentialSamplingSchedule(0.99), seed=4,
    )
    config = model.get_config()
    clone = seq2seq.Seq2Seq.from_config(config)
    assert clone.get_config() == config
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    inputs = {"source": SOURCE, "decoder_input": DECODER_INPUT}
    np.testing.assert_allclose(loaded(inputs), model(inputs), atol=1e-6)
    assert isinstance(loaded.sampling_schedule, seq2seq.ExponentialSamplingSchedule)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"context": "attention"}, "context"),
        ({"encoder_layers": 0}, "encoder_layers"),
        ({"embedding_dim": 2.5}, "embedding_dim"),
        ({"sampling_schedule": 0.5}, "sampling_schedule"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}="):
        seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(4), **kwargs)


def test_bad_cell_names_itself():
    with pytest.raises(ValueError, match="`cell`.*Received: cell="):
        seq2seq.Seq2Seq(10, 7, keras.layers.Dense(3))


def test_next_token_log_probs_forbid_pad_and_start():
    logits = np.array([[0.3, -1.0, 2.0, 0.5]])
    out = seq2seq.next_token_log_probs(logits).numpy()[0]
    expected = log_softmax(logits[0])
    np.testing.assert_allclose(out[2:], expected[2:], rtol=1e-6)
    assert out[0] < -1e8 and out[1] < -1e8
