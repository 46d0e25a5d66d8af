"""`kerasrnn-train g2p --members RUN_DIR ...` and `--teacher RUN_DIR ...`:
finished runs assembled into one ensemble or teaching as one mixture, the
runs refused at parse time when they cannot be mixed, a run of one
right-to-left model, and `--precision mixed_bfloat16`."""

import csv
import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from benchmarks import g2p_ensemble, g2p_runs
from kerasrnn import seq2seq
from kerasrnn_pipelines import encoder_decoder
from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig

#: The smallest runs that finish: one epoch of an 8-unit model on 600 words.
TINY = ["--quick", "--epochs", "1", "--limit", "600", "--units", "8", "--embedding", "4"]

LETTERS = list("abcdefghijklmnopqrstuvwxyz'")
PHONEMES = ["AA0", "AA1", "B", "D", "K"]


def finished_run(directory, task="g2p", stress=True, limit=600, seed=0, letters=LETTERS,
                 phonemes=PHONEMES, metrics=True, model=True):
    """A directory that holds what the parse-time checks read of a finished
    run: `metrics.json`, `vocabulary.json` and a `model.keras`."""
    directory.mkdir(parents=True)
    if metrics:
        (directory / "metrics.json").write_text(json.dumps({
            "task": task, "test_wer": 0.5, "test_per": 0.1, "parameters": 100,
            "args": {"stress": stress, "limit": limit, "seed": seed, "data": "embedded"},
        }))
    (directory / "vocabulary.json").write_text(json.dumps({
        "source_tokens": ["<pad>", "<start>", "<end>", "<unk>", *letters],
        "target_tokens": ["<pad>", "<start>", "<end>", "<unk>", *phonemes],
    }))
    if model:
        (directory / "model.keras").write_bytes(b"")
    return directory


def refused(capsys, argv, out):
    """The one line `main(argv)` exits 2 with, `out` untouched."""
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1, error
    assert not out.exists()
    return error[0]


@pytest.mark.parametrize(
    "second, said",
    [
        ({"task": "forecast"}, "not a g2p run's (task 'forecast')"),
        ({"stress": False}, "was trained with stress=False"),
        ({"letters": LETTERS[:-1]}, "knows other letters"),
        ({"phonemes": PHONEMES[1:]}, "knows other phonemes"),
        ({"metrics": False}, "holds no metrics.json (an unfinished run"),
        ({"model": False}, "holds no model.keras"),
        ({"limit": 900}, "was trained with limit=900, this assembly reads limit=600"),
        ({"seed": 3}, "was trained with seed=3, this assembly reads seed=0"),
    ],
)
def test_members_that_cannot_be_mixed_are_refused_naming_the_run(tmp_path, capsys, second,
                                                                  said):
    first = finished_run(tmp_path / "first")
    other = finished_run(tmp_path / "other", **second)
    error = refused(capsys, ["g2p", "--limit", "600", "--members", str(first), str(other)],
                    tmp_path / "out")
    assert "argument --members" in error and str(other) in error and said in error


def test_a_member_twice_or_no_run_or_out_is_refused(tmp_path, capsys):
    first = finished_run(tmp_path / "first")
    twice = refused(capsys, ["g2p", "--limit", "600", "--members", str(first),
                             str(tmp_path / "." / "first")], tmp_path / "out")
    assert "argument --members" in twice and f"is the run {str(first)!r} again" in twice
    missing = refused(capsys, ["g2p", "--limit", "600", "--members", str(first),
                               str(tmp_path / "none")], tmp_path / "out")
    assert str(tmp_path / "none") in missing and "not a directory" in missing
    before = sorted(path.name for path in first.iterdir())
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", "--limit", "600", "--members", str(first), "--out", str(first)])
    assert exit_info.value.code == 2
    assert "is --out too" in capsys.readouterr().err
    assert sorted(path.name for path in first.iterdir()) == before


@pytest.mark.parametrize(
    "extra, said",
    [
        (["--units", "32"], "received --members with --units 32"),
        (["--precision", "mixed_bfloat16"], "with --precision mixed_bfloat16"),
        (["--teacher", "elsewhere"], "received --members with --teacher"),
    ],
)
def test_an_assembly_refuses_options_it_would_ignore(tmp_path, capsys, extra, said):
    first = finished_run(tmp_path / "first")
    error = refused(capsys, ["g2p", "--limit", "600", "--members", str(first), *extra],
                    tmp_path / "out")
    assert "argument --members" in error and said in error


@pytest.mark.parametrize(
    "second, said",
    [
        ({"stress": False}, "was trained with stress=False"),
        ({"phonemes": PHONEMES[1:]}, "knows other phonemes"),
        ({"metrics": False}, "holds no metrics.json"),
    ],
)
def test_several_teachers_that_cannot_be_mixed_are_refused(tmp_path, capsys, second, said):
    first = finished_run(tmp_path / "first")
    other = finished_run(tmp_path / "other", **second)
    error = refused(capsys, ["g2p", "--teacher", str(first), str(other)], tmp_path / "out")
    assert "argument --teacher" in error and str(other) in error and said in error
    twice = refused(capsys, ["g2p", "--teacher", str(first), str(first)], tmp_path / "out")
    assert "argument --teacher" in twice and "again" in twice


def test_fingerprints_of_runs_before_the_options_are_kept():
    """The full preset's fingerprint, as runs recorded it before
    --members, --precision and several teachers existed."""
    full = G2PConfig(**G2PConfig.PRESETS["full"])
    assert full.fingerprint() == {
        "attention": "luong", "batch_size": 128, "bidirectional": True, "cell": "lstm",
        "cell_dropout": 0.3, "clipnorm": 1.0, "context": "initial_state", "data": "embedded",
        "ema_momentum": None, "embedding": 64, "ensemble": 3, "epochs": 14,
        "input_feeding": False, "label_smoothing": 0.0, "layers": 1, "learning_rate": 0.003,
        "limit": 0, "right_to_left": 1, "sampling_midpoint": 2000,
        "scheduled_sampling": "none", "seed": 0, "shuffle": True, "stress": True, "units": 256,
    }
    plain = G2PConfig().fingerprint()
    assert G2PConfig(precision="mixed_bfloat16").fingerprint() == {
        **plain, "precision": "mixed_bfloat16"}
    assert G2PConfig(teacher="runs/big").fingerprint()["teacher"] == "runs/big"
    assert G2PConfig(teacher=("a", "b")).fingerprint()["teacher"] == ["a", "b"]
    assert G2PConfig(members=("a", "b")).fingerprint() == {**plain, "members": ["a", "b"]}


def test_a_run_of_one_right_to_left_model():
    letters, phonemes = seq2seq.Vocabulary(list("abc")), seq2seq.Vocabulary(["X", "Y"])
    model = encoder_decoder.build_model(
        G2PConfig(units=4, embedding=3, ensemble=0, right_to_left=1, beam_width=1),
        letters, phonemes,
    )
    assert isinstance(model, seq2seq.Seq2Seq) and model.reads_right_to_left
    with pytest.raises(ValueError, match="--ensemble 0 with --right-to-left 2"):
        G2PConfig(ensemble=0, right_to_left=2)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Two finished tiny runs over the same words: one left-to-right model
    with Luong attention, and one GRU reading the target right to left
    without attention (other cell, size and attention), trained in
    mixed_bfloat16. One --seed: with a --limit it draws the words."""
    root = tmp_path_factory.mktemp("runs")
    assert main(["g2p", *TINY, "--out", str(root / "forward")]) == 0
    assert main(["g2p", *TINY, "--ensemble", "0", "--right-to-left", "1", "--cell", "gru",
                 "--units", "6", "--attention", "none",
                 "--precision", "mixed_bfloat16", "--out", str(root / "backward")]) == 0
    return root


@pytest.mark.slow
def test_an_assembly_decodes_serves_and_outlives_its_members(tmp_path, tiny_runs):
    members = [tmp_path / "forward", tmp_path / "backward"]
    for member in members:
        shutil.copytree(tiny_runs / member.name, member)
    out = tmp_path / "assembled"
    assert main(["g2p", "--limit", "600", "--beam-width", "2",
                 "--members", *map(str, members), "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    member_metrics = [json.loads((m / "metrics.json").read_text()) for m in members]
    assert metrics["members"] == [
        {"run": str(member), "test_wer": taught["test_wer"], "test_per": taught["test_per"],
         "parameters": taught["parameters"], "training_time_s": taught["training_time_s"],
         "members": 1}
        for member, taught in zip(members, member_metrics)
    ]
    assert metrics["parameters"] == sum(taught["parameters"] for taught in member_metrics)
    # It trained nothing; the results table gives it its members' time.
    assert "training_time_s" not in metrics
    assert g2p_runs.training_minutes(metrics) == pytest.approx(
        sum(taught["training_time_s"] for taught in member_metrics) / 60
    )
    assert metrics["args"]["members"] == [str(member) for member in members]
    for member in members:
        shutil.rmtree(member)  # the assembly copied what it needs
    model = keras.saving.load_model(out / "model.keras")
    assert isinstance(model, seq2seq.Seq2SeqEnsemble)
    assert [member.reads_right_to_left for member in model.members] == [False, True]
    assert model.rescoring_weight == encoder_decoder.RESCORING_WEIGHT
    served = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"](
        texts=tf.constant(["hello"])
    )
    # The SavedModel answers as the run's own rescored beam search.
    assert served["outputs"].numpy()[0].decode() == metrics["examples"]["hello"]
    assert (out / "model.tflite").is_file() and "litert_test_wer" in metrics
    # Its parts, decoded again: the member alone as its own run scored it,
    # the whole as the assembly scored it.
    alone, mixed, rescored = g2p_ensemble.ensemble_rows(out)
    assert alone["test_wer_%"] == pytest.approx(100 * member_metrics[0]["test_wer"])
    assert mixed["test_wer_%"] == alone["test_wer_%"]  # one left-to-right member
    assert mixed["in_best_2_%"] >= 100 - mixed["test_wer_%"]
    assert rescored["test_wer_%"] == pytest.approx(100 * metrics["test_wer"])
    assert rescored["test_per_%"] == pytest.approx(100 * metrics["test_per"])


@pytest.mark.slow
def test_several_teachers_teach_as_their_mixture(tmp_path, tiny_runs):
    forward, backward = tiny_runs / "forward", tiny_runs / "backward"
    student = tmp_path / "student"
    assert main(["g2p", *TINY, "--teacher", str(forward), str(backward),
                 "--out", str(student)]) == 0
    metrics = json.loads((student / "metrics.json").read_text())
    assert [record["run"] for record in metrics["teacher"]] == [str(forward), str(backward)]
    assert metrics["args"]["teacher"] == [str(forward), str(backward)]
    assert isinstance(keras.saving.load_model(student / "model.keras"), seq2seq.Seq2Seq)


@pytest.mark.slow
def test_mixed_bfloat16_trains_and_the_saved_model_serves_float32(tiny_runs):
    out = tiny_runs / "backward"
    assert json.loads((out / "metrics.json").read_text())["args"]["precision"] == (
        "mixed_bfloat16")
    assert keras.config.dtype_policy().name == "float32"  # put back after the run
    model = keras.saving.load_model(out / "model.keras")
    assert {layer.dtype_policy.name for layer in [model, *model.layers]} == {"float32"}
    batch = {"source": np.full((1, 3), 5), "decoder_input": np.full((1, 2), 5)}
    assert model(batch).dtype == "float32"
    served = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"](
        texts=tf.constant(["hello"])
    )
    assert served["log_probs"].dtype == tf.float32
    with open(out / "history.csv") as history:
        epochs = list(csv.DictReader(history))
    assert len(epochs) == 1 and np.isfinite(float(epochs[0]["loss"]))


def test_the_share_within_the_best_hypotheses_ignores_stress_and_later_ones():
    references = [[["K", "AE1", "T"]], [["D", "AO1", "G"], ["D", "AA1", "G"]], [["B", "IY1"]]]
    hypotheses = [
        [["K", "AE0", "T"], ["K", "AH0", "T"]],  # the best, stress aside
        [["D", "OW1", "G"], ["D", "AA2", "G"]],  # the second, the second reference
        [["B", "AY1"], ["P", "IY1"]],  # neither
    ]
    assert g2p_ensemble.share_correct_within(hypotheses, references, 1) == pytest.approx(1 / 3)
    assert g2p_ensemble.share_correct_within(hypotheses, references, 2) == pytest.approx(2 / 3)


@pytest.mark.slow
def test_the_ensemble_table_refuses_a_run_of_one_model(tiny_runs):
    with pytest.raises(SystemExit, match="holds a Seq2Seq, not a Seq2SeqEnsemble"):
        g2p_ensemble.ensemble_rows(tiny_runs / "forward")
