"""`kerasrnn-train g2p --teacher RUN_DIR`: the teacher refused at parse time,
its logits computed once into the batches, a distilled student resumed after
a kill, and a student run end to end."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn_pipelines import encoder_decoder
from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.tasks import g2p
from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig
from kerasrnn_pipelines.training import RunContext
from tests.pipelines.interruptions import KillAtEpochBegin, Killed

TINY = ["--quick", "--epochs", "1", "--limit", "600", "--units", "16", "--embedding", "8"]


def g2p_metrics(**fields):
    """A g2p run's metrics.json, as far as a teacher is read from it."""
    return {"task": "g2p", "test_wer": 0.5, "test_per": 0.1, "parameters": 100,
            "args": {"stress": True}, **fields}


def teacher_directory(tmp_path, metrics, model=True):
    directory = tmp_path / "teacher"
    directory.mkdir()
    if metrics is not None:
        (directory / "metrics.json").write_text(json.dumps(metrics))
    if model:
        (directory / "model.keras").write_bytes(b"")
    return directory


@pytest.mark.parametrize(
    "metrics, model, option, said",
    [
        (None, True, "--teacher", "holds no metrics.json"),
        ({**g2p_metrics(), "task": "forecast"}, True, "--teacher", "task 'forecast'"),
        (g2p_metrics(), False, "--teacher", "holds no model.keras"),
        ({key: value for key, value in g2p_metrics().items() if key != "test_wer"}, True,
         "--teacher", "lacks test_wer"),
    ],
)
def test_a_teacher_that_is_no_finished_g2p_run_is_refused_before_out_is_made(
    tmp_path, capsys, metrics, model, option, said
):
    teacher = teacher_directory(tmp_path, metrics, model)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", "--teacher", str(teacher), "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1
    assert f"argument {option}" in error[0] and str(teacher) in error[0] and said in error[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "arguments, option, value",
    [
        (["--teacher", "missing"], "--teacher", "missing"),
        (["--distillation-weight", "1.5"], "--distillation-weight", "1.5"),
        (["--distillation-weight", "-0.1"], "--distillation-weight", "-0.1"),
        (["--distillation-temperature", "0"], "--distillation-temperature", "0"),
        (["--distillation-temperature", "-2"], "--distillation-temperature", "-2"),
        (["--teacher", "missing", "--distillation-temperature", "1e6", "--distillation-weight",
          "1"], "--distillation-temperature",
         "rounding by the temperature squared, which beyond 100 swamps the term); received '1e6'"),
    ],
)
def test_bad_distillation_values_are_refused_in_one_line(
    tmp_path, capsys, arguments, option, value
):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", *[str(tmp_path / a) if a == "missing" else a for a in arguments],
              "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"argument {option}" in error[0] and value in error[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "arguments",
    [["--distillation-weight", "0.7"], ["--distillation-temperature", "2"],
     ["--distillation-weight", "0.5", "--distillation-temperature", "4"]],
)
def test_distillation_settings_without_a_teacher_are_refused(tmp_path, capsys, arguments):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", *arguments, "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1
    assert f"argument {arguments[0]}" in error[0] and "without --teacher" in error[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "arguments, option",
    [
        (["--ensemble", "2"], "--ensemble 2"),
        (["--right-to-left", "1"], "--right-to-left 1"),
        (["--label-smoothing", "0.1"], "--label-smoothing 0.1"),
    ],
)
def test_a_student_is_one_model_trained_on_the_distillation_loss(
    tmp_path, capsys, arguments, option
):
    teacher = teacher_directory(tmp_path, g2p_metrics())
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", "--teacher", str(teacher), *arguments, "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "argument --teacher" in error[0] and option in error[0]


def test_the_teacher_and_its_settings_are_in_the_fingerprint_only_when_set():
    plain = G2PConfig().fingerprint()
    assert not {"teacher", "distillation_weight", "distillation_temperature"} & set(plain)
    taught = G2PConfig(teacher="runs/big", distillation_weight=0.7).fingerprint()
    assert taught == {**plain, "teacher": "runs/big", "distillation_weight": 0.7,
                      "distillation_temperature": 2.0}


@pytest.mark.slow
def said_words(count=24):
    """`(entries, letters, phonemes)`: words of a, b, c, d said letter by
    letter, with X for a and b."""
    said = {"a": ("X",), "b": ("X",), "c": ("Y",), "d": ("Z", "Y")}
    rng = np.random.default_rng(4)
    words = ["".join(rng.choice(list(said), rng.integers(2, 6))) for _ in range(count)]
    entries = [(word, (tuple(p for letter in word for p in said[letter]),)) for word in words]
    return (entries, *g2p.make_vocabularies(entries))


def test_a_teachers_logits_are_computed_once_into_the_same_batches():
    entries, letters, phonemes = said_words(40)
    keras.utils.set_random_seed(2)
    teacher = seq2seq.Seq2Seq(
        letters.size, phonemes.size, kerasrnn.LSTMCell(8), embedding_dim=4, attention="luong"
    )
    plain = g2p.pair_dataset(entries, letters, phonemes, 8, True, 0)
    carried = g2p.pair_dataset(entries, letters, phonemes, 8, True, 0, teacher)
    batches = 0
    for (inputs, labels), (with_logits, same_labels) in zip(plain, carried):
        np.testing.assert_array_equal(labels, same_labels)
        for key in ("source", "decoder_input"):
            np.testing.assert_array_equal(inputs[key], with_logits[key])
        # What the distiller would compute on this batch, at every real
        # position; 0 at the padding.
        expected = np.asarray(seq2seq.teacher_logits(teacher, inputs))
        real = np.asarray(labels) != 0
        logits = np.asarray(with_logits["teacher_logits"])
        np.testing.assert_allclose(logits[real], expected[real], rtol=1e-5, atol=1e-5)
        assert not logits[~real].any()
        batches += 1
    assert batches == len(list(plain)) == 7  # 40 pairs in 8 length buckets


def test_a_killed_distillation_resumes_to_the_same_student(tmp_path):
    config = G2PConfig(units=6, embedding=4, epochs=3, learning_rate=0.02, batch_size=8)
    entries, letters, phonemes = said_words()

    def trained(directory, callbacks=()):
        keras.utils.set_random_seed(3)
        context = RunContext(config, tf.distribute.get_strategy(), directory)
        with context.scope():
            teacher = seq2seq.Seq2Seq(
                letters.size, phonemes.size, kerasrnn.LSTMCell(8), embedding_dim=4
            )
            distiller = seq2seq.Distiller(
                encoder_decoder.build_model(config, letters, phonemes), teacher, 0.5, 2.0
            )
            distiller.compile(optimizer=context.optimizer())
        # Each sitting computes the teacher's logits again, as a run does.
        # In one order: this checks what the backup restores, not the shuffle.
        dataset = g2p.pair_dataset(
            entries, letters, phonemes, config.batch_size, False, 0, teacher
        )
        context.fit(distiller, dataset, callbacks=callbacks)
        return distiller

    def claim(path):
        return claim_run_directory(path, "test", {}, restart=False, overwrite=False)

    uninterrupted = trained(claim(tmp_path / "whole"))
    killed = claim(tmp_path / "killed")
    with pytest.raises(Killed):
        trained(killed, [KillAtEpochBegin(2)])
    resumed = trained(killed)  # a new process: fresh models, same configuration
    for weights, expected in zip(
        resumed.student.get_weights(), uninterrupted.student.get_weights()
    ):
        np.testing.assert_allclose(weights, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_a_student_run_records_its_teacher_and_refuses_one_of_other_phonemes(
    tmp_path, capsys
):
    teacher, student = tmp_path / "teacher", tmp_path / "student"
    assert main(["g2p", *TINY, "--out", str(teacher)]) == 0
    assert main(["g2p", *TINY, "--teacher", str(teacher), "--distillation-weight", "0.8",
                 "--out", str(student)]) == 0
    taught = json.loads((teacher / "metrics.json").read_text())
    metrics = json.loads((student / "metrics.json").read_text())
    assert metrics["teacher"] == {
        "run": str(teacher), "test_wer": taught["test_wer"], "test_per": taught["test_per"],
        "parameters": taught["parameters"], "training_time_s": taught["training_time_s"],
    }
    assert metrics["args"]["teacher"] == [str(teacher)]
    assert metrics["args"]["distillation_weight"] == 0.8
    # What the run saved and exported is the student alone.
    assert isinstance(keras.models.load_model(student / "model.keras"), seq2seq.Seq2Seq)
    assert (student / "model.tflite").is_file() and (student / "saved_model").is_dir()
    capsys.readouterr()

    # Stress digits make other phonemes: refused after loading the words,
    # before any training.
    other = tmp_path / "other"
    assert main(["g2p", *TINY, "--no-stress", "--teacher", str(teacher),
                 "--out", str(other)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--teacher" in error[0] and "stress" in error[0]
    assert not (other / "metrics.json").exists() and not (other / "backup").exists()

    # Twenty words hold fewer letters than the teacher's 600: other ids.
    few = tmp_path / "few"
    assert main(["g2p", *TINY, "--limit", "20", "--teacher", str(teacher),
                 "--out", str(few)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "other letters" in error[0]
    assert not (few / "metrics.json").exists() and not (few / "backup").exists()
