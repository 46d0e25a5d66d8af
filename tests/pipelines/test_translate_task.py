"""The translate task: a --quick run on mock TFDS data, and offline failure."""

import json
import math

import pytest
import tensorflow_datasets as tfds

from kerasrnn_pipelines import edit_distance
from kerasrnn_pipelines.cli import main, parse_config
from kerasrnn_pipelines.tasks import load_task, translate
from kerasrnn_pipelines.tasks.options.translate_config import CORPORA, TranslateConfig
from tests.isolated import PROJECT, last_json, run_without


def test_task_follows_the_contract_with_tfds_sources_only():
    assert load_task("translate") is translate
    # No embedded corpus: the default is the first TFDS source.
    assert "embedded" not in TranslateConfig.DATA_SOURCES
    assert next(iter(TranslateConfig.DATA_SOURCES)) == TranslateConfig().data
    config = parse_config(["translate"])
    assert config.data == "ted_hrlr_translate/pt_to_en"


def test_mixed_source_configs_read_their_tfds_feature_keys():
    # TFDS names the config of the pair ("az_tr", "en") "aztr_to_en".
    assert CORPORA["ted_hrlr_translate/aztr_to_en"] == ("az_tr", "en")
    assert CORPORA["ted_hrlr_translate/ru_to_pt"] == ("ru", "pt")
    config = parse_config(["translate", "--data", "ted_hrlr_translate/es_to_pt"])
    assert config.data == "ted_hrlr_translate/es_to_pt"


def test_bad_options_are_refused_at_the_command_line(capsys):
    with pytest.raises(SystemExit):
        parse_config(["translate", "--data", "embedded"])
    assert "argument --data: must be one of ted_hrlr_translate/pt_to_en" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        parse_config(["translate", "--length-penalty", "-1"])
    assert "must be a number in [0, 8]; received '-1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_config(["translate", "--vocabulary-size", "0"])
    assert "must be a positive integer; received '0'" in capsys.readouterr().err
    # A translation is up to --max-length words and <end>: 128 tokens, the
    # most the LiteRT export unrolls, at most.
    with pytest.raises(SystemExit):
        parse_config(["translate", "--max-length", "128"])
    assert (
        "argument --max-length: must be an integer in [1, 127] (the run's LiteRT file unrolls "
        "its encoder over that many words); received '128'"
    ) in capsys.readouterr().err
    assert parse_config(["translate", "--max-length", "127"]).max_length == 127


def test_error_rates_hand_worked_on_words():
    predictions = [["the", "cat"], [], ["a", "b", "c"], ["top10"]]
    references = [[["the", "cat"]], [["hello"]], [["a", "c"]], [["top1"]]]
    # Wrong sentences: 2, 3, 4. Edits 0 + 1 (deletion) + 1 (insertion)
    # + 1 (substitution; digits are part of a word, not stress marks) over
    # reference lengths 2 + 1 + 2 + 1.
    wer, per = edit_distance.error_rates(predictions, references)
    assert wer == pytest.approx(3 / 4)
    assert per == pytest.approx(3 / 6)


def test_offline_without_data_fails_at_once_naming_the_dataset(tmp_path, capsys):
    status = main(["translate", "--quick", "--out", str(tmp_path / "run")])
    assert status == 1
    error = capsys.readouterr().err
    assert "ted_hrlr_translate/pt_to_en" in error
    assert "tfds build ted_hrlr_translate/pt_to_en" in error
    assert not (tmp_path / "run" / "model.keras").exists()


# A plain ensemble of two is g2p's case (tests/pipelines/test_ensemble_runs.py);
# here the right-to-left one trains two members, one rescoring the other.
@pytest.mark.slow
# One model with each attention; Luong's with a right-to-left rescorer.
@pytest.mark.parametrize(
    "attention, ensemble, right_to_left",
    [("bahdanau", 1, 0), ("luong", 1, 1)],
)
def test_quick_run_on_mock_data_writes_outputs_and_serves(
    tmp_path, attention, ensemble, right_to_left
):
    out = tmp_path / "run"
    with tfds.testing.mock_data(num_examples=40):
        status = main(["translate", "--quick", "--attention", attention,
                       "--ensemble", str(ensemble), "--right-to-left", str(right_to_left),
                       "--out", str(out)])
    assert status == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["args"]["attention"] == attention
    assert metrics["args"]["ensemble"] == ensemble
    # Random mock text: after two tiny epochs the loss is still near that of
    # a uniform guess over the target vocabulary, ln(V), in each member.
    uniform = math.log(metrics["target_vocabulary_size"])
    members = ensemble + right_to_left
    assert 0.0 < metrics["test_loss"] < 1.2 * members * uniform
    # Mock text is random, so no prediction is exact: every sentence wrong;
    # nor is any copied source sentence its translation.
    assert metrics["test_sentence_error_rate"] == 1.0
    assert metrics["baseline_token_error_rate"] > 0
    assert metrics["test_sentences"] == 40
    assert metrics["data"] == TranslateConfig.DATA_SOURCES["ted_hrlr_translate/pt_to_en"]
    assert metrics["args"]["quick"] is True and metrics["wall_time_s"] > 0
    for name in ("history.csv", "model.keras", "learning_curves.png", "tensorboard"):
        assert (out / name).exists(), name
    rows = (out / "history.csv").read_text().splitlines()
    assert rows[0].startswith("epoch") and len(rows) == 1 + TranslateConfig.QUICK["epochs"]
    # The LiteRT file reads word ids; through the LiteRT interpreter it
    # scores the test sentences as the in-process beam search does (ties
    # between near-equal hypotheses of these barely trained models aside).
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    assert vocabulary["source_text"]["split"] == "whitespace"
    assert metrics["litert_bytes"] == (out / "model.tflite").stat().st_size
    assert metrics["litert_test_token_error_rate"] == pytest.approx(
        metrics["test_token_error_rate"], abs=0.05
    )

    program = f"""
        import json

        import tensorflow as tf

        serve = tf.saved_model.load({str(out / "saved_model")!r}).signatures["serving_default"]
        result = serve(texts=tf.constant(["Olá mundo", "", " ".join(["palavra"] * 50)]))
        # The best answer's alignment comes with it, padding exactly zero.
        weights = result["alignments"].numpy()
        assert result["input_lengths"].numpy().tolist()[1] == 0
        assert (weights[1] == 0).all()
        print(json.dumps([text.decode() for text in result["outputs"].numpy()]))
        """
    outputs = last_json(run_without(PROJECT, program, timeout=180))
    # The empty sentence reads as "" (documented in kerasrnn.export.seq2seq_savedmodel);
    # every output is at most --max-length words, none of them reserved.
    assert outputs[1] == ""
    for output in outputs:
        words = output.split()
        assert len(words) <= TranslateConfig.QUICK["max_length"]
        assert not {"<pad>", "<start>", "<end>"} & set(words)
