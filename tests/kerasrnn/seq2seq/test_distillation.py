"""Knowledge distillation against a NumPy loop over batch and time, and a
distilled student against the same student trained on labels alone."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from tests.kerasrnn.seq2seq.sharpened import sharpened

SOURCE = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0]])
DECODER_INPUT = np.array([[1, 5, 4, 3], [1, 6, 0, 0], [1, 3, 4, 5]])
LABELS = np.array([[5, 4, 3, 2], [6, 2, 0, 0], [3, 4, 5, 6]])
INPUTS = {"source": SOURCE, "decoder_input": DECODER_INPUT}


def log_softmax(logits):
    """log softmax of one `(V,)` row, in float64."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def reference_loss(labels, student_logits, teacher_logits, weight, temperature):
    """(1 − w)·CE + w·τ²·KL(p_T^τ ‖ p_S^τ), averaged over the labels that
    are not padding, one position at a time."""
    total, tokens = 0.0, 0
    for row in range(labels.shape[0]):
        for t in range(labels.shape[1]):
            label = labels[row, t]
            if label == 0:
                continue
            cross_entropy = -log_softmax(student_logits[row, t])[label]
            teacher = log_softmax(teacher_logits[row, t] / temperature)
            student = log_softmax(student_logits[row, t] / temperature)
            divergence = np.sum(np.exp(teacher) * (teacher - student))
            total += (1 - weight) * cross_entropy + weight * temperature**2 * divergence
            tokens += 1
    return total / tokens


def hand_mixture(member_logits):
    """log (1/N) Σ_k softmax(z_k) of `(N, batch, T, V)` logits, position by
    position."""
    member_logits = np.asarray(member_logits, np.float64)
    count, batch, steps, _ = member_logits.shape
    mixed = np.zeros(member_logits.shape[1:])
    for row in range(batch):
        for t in range(steps):
            probabilities = sum(
                np.exp(log_softmax(member_logits[k, row, t])) for k in range(count)
            ) / count
            mixed[row, t] = np.log(probabilities)
    return mixed


def random_batch(seed, vocabulary_size=7):
    """Random labels with padding at the end of two of three rows (one row
    without any real token), and student and teacher logits far from
    uniform."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, vocabulary_size, (4, 5))
    labels[1, 3:] = 0
    labels[2, 1:] = 0
    labels[3, :] = 0
    student = rng.normal(0, 2.0, (4, 5, vocabulary_size)).astype(np.float32)
    teacher = rng.normal(0, 3.0, (4, 5, vocabulary_size)).astype(np.float32)
    return labels, student, teacher


def make_model(units=5, vocabulary_size=7, seed=3, **options):
    keras.utils.set_random_seed(seed)
    return seq2seq.Seq2Seq(
        10, vocabulary_size, kerasrnn.LSTMCell(units, bias_initializer="random_normal"),
        embedding_dim=4, **options,
    )


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_loss_matches_numpy(weight, temperature):
    labels, student, teacher = random_batch(seed=int(10 * weight + temperature))
    loss = seq2seq.distillation_loss(
        labels, student, teacher, weight=weight, temperature=temperature
    )
    expected = reference_loss(labels, student, teacher, weight, temperature)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_without_the_teacher_it_is_sequence_cross_entropy():
    labels, student, teacher = random_batch(seed=5)
    cross_entropy = seq2seq.SequenceCrossEntropy()(labels, student)
    for temperature in (0.5, 3.0):
        loss = seq2seq.distillation_loss(
            labels, student, teacher, weight=0.0, temperature=temperature
        )
        np.testing.assert_allclose(float(loss), float(cross_entropy), rtol=1e-6)


def test_a_teacher_equal_to_the_student_leaves_the_kl_term_zero():
    labels, student, _ = random_batch(seed=6)
    loss = seq2seq.distillation_loss(labels, student, student, weight=1.0, temperature=2.0)
    assert abs(float(loss)) < 1e-6


def test_ensemble_teacher_is_its_decoding_members_mixture():
    left_to_right = [
        sharpened(make_model(units=5, seed=1), 1),
        sharpened(make_model(units=4, seed=2, attention="luong"), 2),
    ]
    # Reads the target backwards: it rescores beams and is no part of the
    # next-token distribution.
    rescorer = sharpened(make_model(units=3, seed=4, target_order="right_to_left"), 4)
    ensemble = seq2seq.Seq2SeqEnsemble([left_to_right[0], rescorer, left_to_right[1]])
    expected_mixture = hand_mixture([member(INPUTS) for member in left_to_right])
    np.testing.assert_allclose(
        seq2seq.teacher_logits(ensemble, INPUTS), expected_mixture, rtol=1e-5, atol=1e-6
    )
    student = sharpened(make_model(units=3, seed=5), 5)
    distiller = seq2seq.Distiller(student, ensemble, weight=0.3, temperature=2.5)
    student_logits = distiller(INPUTS)
    np.testing.assert_array_equal(student_logits, student(INPUTS))
    loss = distiller.compute_loss(INPUTS, LABELS, student_logits)
    expected = reference_loss(LABELS, np.asarray(student_logits), expected_mixture, 0.3, 2.5)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


@pytest.mark.slow
def test_fit_minimises_the_loss_of_its_batches():
    """With a learning rate of 0 the loss fit logs over one batch is the
    reference loss of the batch, the teacher a single model."""
    teacher = sharpened(make_model(units=6, seed=1, attention="bahdanau"), 1)
    student = sharpened(make_model(units=3, seed=2), 2)
    distiller = seq2seq.Distiller(student, teacher, weight=0.7, temperature=1.5)
    distiller.compile(keras.optimizers.SGD(learning_rate=0.0))
    history = distiller.fit(INPUTS, LABELS, batch_size=len(LABELS), epochs=1, verbose=0)
    expected = reference_loss(LABELS, np.asarray(student(INPUTS)),
                              np.asarray(teacher(INPUTS)), 0.7, 1.5)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)


@pytest.mark.slow
def test_logits_a_batch_carries_replace_the_teachers():
    """Logits precomputed into the inputs are what the loss compares with
    (here other logits than the teacher's, to tell them apart), and the
    student reads the rest of the inputs as without them."""
    teacher = sharpened(make_model(units=6, seed=1, attention="bahdanau"), 1)
    student = sharpened(make_model(units=3, seed=2), 2)
    carried = np.random.default_rng(5).normal(0, 3.0, (*LABELS.shape, 7)).astype(np.float32)
    distiller = seq2seq.Distiller(student, teacher, weight=0.7, temperature=1.5)
    distiller.compile(keras.optimizers.SGD(learning_rate=0.0))
    inputs = {**INPUTS, "teacher_logits": carried}
    np.testing.assert_array_equal(np.asarray(distiller(inputs)), np.asarray(student(INPUTS)))
    history = distiller.fit(inputs, LABELS, batch_size=len(LABELS), epochs=1, verbose=0)
    expected = reference_loss(LABELS, np.asarray(student(INPUTS)), carried, 0.7, 1.5)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)


def test_carried_logits_of_another_vocabulary_are_refused():
    teacher, student = make_model(units=6, seed=1), make_model(units=3, seed=2)
    distiller = seq2seq.Distiller(student, teacher)
    inputs = {**INPUTS, "teacher_logits": np.zeros((*LABELS.shape, 5), np.float32)}
    with pytest.raises(ValueError, match=r"teacher_logits.*Received: shape \(3, 4, 5\) for a "
                                         r"target vocabulary of 7"):
        distiller.compute_loss(inputs, LABELS, student(INPUTS))


@pytest.mark.parametrize(
    ("argument", "value", "allowed"),
    [
        ("weight", -0.1, r"\[0, 1\]"),
        ("weight", 1.5, r"\[0, 1\]"),
        ("weight", float("nan"), r"\[0, 1\]"),
        ("weight", "0.5", r"\[0, 1\]"),
        ("temperature", 0.0, "> 0"),
        ("temperature", -1.0, "> 0"),
        ("temperature", float("inf"), "> 0"),
        ("temperature", 100.5, "at most 100: the KL term multiplies float32's rounding"),
        ("temperature", 1e6, "at most 100"),
    ],
)
def test_weight_outside_0_1_or_temperature_not_positive_is_refused(argument, value, allowed):
    labels, student, teacher = random_batch(seed=0)
    message = rf"`{argument}`.*{allowed}.*Received: {argument}="
    with pytest.raises(ValueError, match=message):
        seq2seq.distillation_loss(labels, student, teacher, **{argument: value})
    with pytest.raises(ValueError, match=message):
        seq2seq.Distiller(make_model(), make_model(), **{argument: value})


def test_at_the_largest_temperature_the_loss_still_matches_float64():
    """τ = 100, the bound, over 60 tokens: float32 still agrees with the
    float64 loop to 1e-4 (the rounding grows as τ², the reason for the
    bound)."""
    labels, student, teacher = random_batch(seed=9, vocabulary_size=60)
    loss = seq2seq.distillation_loss(labels, student, teacher, weight=1.0, temperature=100.0)
    expected = reference_loss(labels, student, teacher, 1.0, 100.0)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-4)


def test_a_teacher_that_is_or_holds_its_student_is_refused():
    student = make_model(units=3, seed=2)
    with pytest.raises(ValueError, match="`teacher` must be another model than `student`.*"
                       f"teacher='{student.name}' and student='{student.name}'"):
        seq2seq.Distiller(student, student)
    ensemble = seq2seq.Seq2SeqEnsemble([make_model(seed=1), student], name="big")
    with pytest.raises(ValueError, match=f"teacher='big' and student='{student.name}': "
                       "the student is one of the teacher's members"):
        seq2seq.Distiller(student, ensemble)


def test_compile_refuses_a_loss():
    distiller = seq2seq.Distiller(make_model(units=3, seed=2), make_model(seed=1))
    with pytest.raises(ValueError, match="`loss` must be None: a Distiller's loss is its own.*"
                       "Received: loss='mse'"):
        distiller.compile(keras.optimizers.Adam(0.01), loss="mse")
    assert not distiller.compiled


def test_a_saved_distiller_loads_and_trains_on(tmp_path):
    student, teacher = make_model(units=3, seed=2), sharpened(make_model(seed=1), 1)
    distiller = seq2seq.Distiller(student, teacher, weight=0.3, temperature=3.0)
    distiller.compile(keras.optimizers.Adam(0.05))
    distiller.fit(INPUTS, LABELS, batch_size=3, epochs=1, verbose=0)
    distiller.save(tmp_path / "distiller.keras")
    loaded = keras.saving.load_model(tmp_path / "distiller.keras")
    assert isinstance(loaded, seq2seq.Distiller)
    assert (loaded.weight, loaded.temperature) == (0.3, 3.0)
    np.testing.assert_array_equal(loaded.student(INPUTS), student(INPUTS))
    np.testing.assert_array_equal(loaded.teacher(INPUTS), teacher(INPUTS))
    assert int(loaded.optimizer.iterations) == 1
    # The teacher stays frozen: only the student's weights train.
    assert len(loaded.trainable_weights) == len(student.trainable_weights)
    teacher_weights = [np.array(weight) for weight in loaded.teacher.weights]
    loaded.fit(INPUTS, LABELS, batch_size=3, epochs=1, verbose=0)
    for kept, weight in zip(teacher_weights, loaded.teacher.weights):
        np.testing.assert_array_equal(weight, kept)
    assert not np.allclose(loaded.student(INPUTS), student(INPUTS))


def test_mismatched_models_are_refused():
    student = make_model(vocabulary_size=7)
    with pytest.raises(
        ValueError,
        match="target_vocabulary_size.*student target_vocabulary_size=7, "
        "teacher target_vocabulary_size=9",
    ):
        seq2seq.Distiller(student, make_model(vocabulary_size=9))
    ensemble = seq2seq.Seq2SeqEnsemble([make_model(vocabulary_size=9)])
    with pytest.raises(ValueError, match="student target_vocabulary_size=7.*=9"):
        seq2seq.Distiller(student, ensemble)
    with pytest.raises(ValueError, match="target in one order"):
        seq2seq.Distiller(student, make_model(target_order="right_to_left"))
    with pytest.raises(ValueError, match="`student` must be a kerasrnn.seq2seq Seq2Seq"):
        seq2seq.Distiller(ensemble, student)
    with pytest.raises(ValueError, match="`teacher` must be .*Received: teacher='model'"):
        seq2seq.Distiller(student, "model")
    with pytest.raises(ValueError, match="`batch_size`.*Received: batch_size=0"):
        seq2seq.teacher_targets(student, SOURCE, batch_size=0)
    with pytest.raises(ValueError, match=r"`source_ids`.*Received: shape \(3,\)"):
        seq2seq.teacher_targets(student, np.array([4, 5, 6]))


def test_teacher_targets_train_on_the_teachers_best_answers():
    """The labels teacher_forcing_pair makes of teacher_targets are the
    beam's best answers, however the sources are batched: an ended answer
    as it is, an answer cut at max_length with `<end>` after it."""
    teacher = sharpened(make_model(units=6, seed=3, attention="luong"), 3)
    # Enough weight on <end> that one answer ends within max_length.
    bias = teacher.output_projection.bias
    bias.assign(bias + 0.2 * np.eye(7)[seq2seq.END_ID])
    sources = np.array([[4, 5, 6, 7], [8, 4, 0, 0], [9, 0, 0, 0], [0, 0, 5, 6], [7, 7, 7, 7]])
    targets = seq2seq.teacher_targets(teacher, sources, beam_width=3, max_target_length=6,
                                      batch_size=2)
    assert targets.dtype == np.int32 and targets.shape[0] == len(sources)
    inputs, labels = seq2seq.teacher_forcing_pair(sources, targets)
    np.testing.assert_array_equal(inputs["source"], sources)
    ended = 0
    for row, source in enumerate(sources):
        alone = seq2seq.beam_search_decode(teacher, source[None], beam_width=3, max_target_length=6)
        answer = [token for token in alone.sequences[0, 0].numpy() if token != 0]
        if answer[-1] == seq2seq.END_ID:
            ended += 1
        else:
            answer.append(seq2seq.END_ID)
        label = list(labels[row].numpy())
        assert label == answer + [0] * (len(label) - len(answer))
    assert 0 < ended < len(sources), "both kinds of answers are checked"


def test_the_student_saves_and_decodes_the_same_answers(tmp_path):
    teacher = sharpened(make_model(units=6, seed=1), 1)
    student = make_model(units=3, seed=2, attention="luong")
    teacher_weights = [np.array(weight) for weight in teacher.weights]
    distiller = seq2seq.Distiller(student, teacher)
    distiller.compile(keras.optimizers.Adam(0.05))
    before = np.array(student(INPUTS))
    distiller.fit(INPUTS, LABELS, batch_size=3, epochs=2, verbose=0)
    assert not np.allclose(student(INPUTS), before)
    for kept, weight in zip(teacher_weights, teacher.weights):
        np.testing.assert_array_equal(weight, kept)
    distiller.student.save(tmp_path / "student.keras")
    restored = keras.saving.load_model(tmp_path / "student.keras")
    assert isinstance(restored, seq2seq.Seq2Seq)
    expected = seq2seq.beam_search_decode(student, SOURCE, beam_width=3, max_target_length=6)
    answers = seq2seq.beam_search_decode(restored, SOURCE, beam_width=3, max_target_length=6)
    np.testing.assert_array_equal(answers.sequences, expected.sequences)
    np.testing.assert_allclose(answers.log_probs, expected.log_probs, rtol=1e-5)


def test_its_weights_load_into_a_new_distiller_before_any_call(tmp_path):
    """A training backup is the distiller's weights (the student's, the
    teacher's and the optimizer's), loaded into a fresh one as a run resumes."""
    trained = seq2seq.Distiller(make_model(units=3, seed=2), sharpened(make_model(seed=1), 1))
    trained.compile(keras.optimizers.Adam(0.05))
    trained.fit(INPUTS, LABELS, batch_size=3, epochs=2, verbose=0)
    trained.save_weights(tmp_path / "distiller.weights.h5")
    fresh = seq2seq.Distiller(make_model(units=3, seed=7), make_model(seed=8))
    fresh.compile(keras.optimizers.Adam(0.05))
    fresh.optimizer.build(fresh.trainable_variables)
    fresh.load_weights(tmp_path / "distiller.weights.h5")
    for model in ("student", "teacher"):
        for loaded, saved in zip(getattr(fresh, model).weights, getattr(trained, model).weights):
            np.testing.assert_array_equal(loaded, saved)
    for loaded, saved in zip(fresh.optimizer.variables, trained.optimizer.variables):
        np.testing.assert_array_equal(loaded, saved)


@pytest.mark.slow
def test_a_distilled_student_beats_the_same_student_on_labels_alone():
    """Spelling words backwards (README's Quickstart 2): a teacher trained
    on 2,000 pairs; a student with 100 labelled pairs alone, and the same
    student (architecture, seed, epochs) trained by token-level distillation
    on those pairs plus 1,000 unlabelled words the teacher answered
    (sequence-level). Exact-match accuracy of beam search on 200 held-out
    words."""
    letters = seq2seq.Vocabulary("abcdef")
    rng = np.random.default_rng(0)

    def words(count):
        return ["".join(rng.choice(list("abcdef"), rng.integers(1, 7))) for _ in range(count)]

    def ids(texts):
        return keras.utils.pad_sequences(
            [letters.encode(text) for text in texts], padding="post", maxlen=6
        )

    def reversed_ids(texts):
        return ids(text[::-1] for text in texts)

    def model(units):
        return seq2seq.Seq2Seq(
            letters.size, letters.size, kerasrnn.LSTMCell(units), embedding_dim=16,
            bidirectional=True, attention="luong", input_feeding=False,
        )

    teacher_words, labelled, unlabelled, held_out = words(2000), words(100), words(1000), words(200)

    def accuracy(student):
        result = seq2seq.beam_search_decode(
            student, ids(held_out), beam_width=3, max_target_length=8
        )
        answers = ["".join(letters.decode(row)) for row in result.sequences[:, 0].numpy()]
        return np.mean([answer == word[::-1] for answer, word in zip(answers, held_out)])

    keras.utils.set_random_seed(0)
    teacher = model(32)
    teacher.compile(keras.optimizers.Adam(0.01), seq2seq.SequenceCrossEntropy())
    teacher.fit(*seq2seq.teacher_forcing_pair(ids(teacher_words), reversed_ids(teacher_words)),
                batch_size=32, epochs=4, verbose=0)
    assert accuracy(teacher) > 0.9, "the teacher knows the task"

    keras.utils.set_random_seed(1)
    alone = model(16)
    alone.compile(keras.optimizers.Adam(0.01), seq2seq.SequenceCrossEntropy())
    alone.fit(*seq2seq.teacher_forcing_pair(ids(labelled), reversed_ids(labelled)),
              batch_size=32, epochs=4, verbose=0)

    answered = seq2seq.teacher_targets(teacher, ids(unlabelled), beam_width=3, max_target_length=8)
    labels = keras.utils.pad_sequences(
        [*reversed_ids(labelled), *answered], padding="post"
    )
    keras.utils.set_random_seed(1)
    distiller = seq2seq.Distiller(model(16), teacher, weight=0.5, temperature=2.0)
    distiller.compile(keras.optimizers.Adam(0.01))
    distiller.fit(
        *seq2seq.teacher_forcing_pair(np.concatenate([ids(labelled), ids(unlabelled)]), labels),
        batch_size=32, epochs=4, verbose=0,
    )
    alone_accuracy, distilled_accuracy = accuracy(alone), accuracy(distiller.student)
    assert distilled_accuracy > alone_accuracy + 0.5, (distilled_accuracy, alone_accuracy)
