"""The g2p task: hand-worked WER/PER, the baseline, what a run prints, and a
--quick run end to end, scored again from its files by the results table
(`benchmarks.g2p_runs`)."""

import contextlib
import io
import json

import keras
import pytest
import tensorflow as tf

from benchmarks import g2p_runs
from kerasrnn import seq2seq
from kerasrnn_pipelines import edit_distance, encoder_decoder
from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.tasks import g2p
from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig
from tests.isolated import CLIENT_WITHOUT, PROJECT, last_json, run_without


@pytest.mark.parametrize(
    "first, second, distance",
    [
        ((), (), 0),
        (("K", "AE1", "T"), ("K", "AE1", "T"), 0),
        (("K", "AE1", "T"), ("K", "AH0", "T"), 1),  # one substitution
        (("K", "AE1", "T"), ("K", "AE1", "T", "S"), 1),  # one insertion
        (("K", "AE1", "T"), ("AE1", "T"), 1),  # one deletion
        (("K", "AE1", "T"), (), 3),
        # kitten -> sitting, the textbook example: 3.
        (tuple("kitten"), tuple("sitting"), 3),
    ],
)
def test_edit_distance_hand_worked(first, second, distance):
    assert edit_distance.edit_distance(first, second) == distance
    assert edit_distance.edit_distance(second, first) == distance


def test_error_rates_hand_worked():
    predictions = [
        ["T", "AH0", "M", "EY1", "T", "OW2"],  # equals the 2nd reference
        ["K", "AE1", "T"],  # stress differs: right only without stress
        ["D", "AO1", "G", "Z"],  # one insertion against "D AO1 G"
        ["HH", "AH0", "L", "OW1"],  # 1 sub vs ref 1 (len 4), 2 vs ref 2
    ]
    references = [
        [["T", "AH0", "M", "AA1", "T", "OW2"], ["T", "AH0", "M", "EY1", "T", "OW2"]],
        [["K", "AE2", "T"]],
        [["D", "AO1", "G"]],
        [["HH", "EH0", "L", "OW1"], ["HH", "AH0", "L", "OW1", "Z", "Z"]],
    ]
    # With stress: wrong words 2, 3, 4; edits 0 + 1 + 1 + 1 over
    # closest-reference lengths 6 + 3 + 3 + 4.
    wer, per = g2p.error_rates(predictions, references, stress=True)
    assert wer == pytest.approx(3 / 4)
    assert per == pytest.approx(3 / 16)
    # Without stress word 2 is right ("K AE T"): edits 0 + 0 + 1 + 1.
    wer, per = g2p.error_rates(predictions, references, stress=False)
    assert wer == pytest.approx(2 / 4)
    assert per == pytest.approx(2 / 16)


def test_error_rates_refuse_mismatched_lists():
    with pytest.raises(ValueError, match="`predictions` and `references`"):
        g2p.error_rates([["A"]], [])


def test_nearest_spelling_baseline_takes_the_longest_shared_prefix():
    train_words = [
        ("cat", [("K", "AE1", "T")]),
        ("cats", [("K", "AE1", "T", "S")]),
        ("dog", [("D", "AO1", "G")]),
        ("doge", [("D", "OW1", "JH")]),
    ]
    # "catsup" shares 4 letters with "cats"; "doga", between "dog" and
    # "doge", 3 with both (the one before it wins); "apple" lies before
    # every word and "zebra" after every word: each gets its only neighbour.
    assert g2p.nearest_spelling(train_words, ["catsup", "doga", "apple", "zebra"]) == [
        ("K", "AE1", "T", "S"),
        ("D", "AO1", "G"),
        ("K", "AE1", "T"),
        ("D", "OW1", "JH"),
    ]


def test_wer_by_length_hand_worked():
    words = ["cat", "dog", "house", "kitchen", "elephants", "encyclopedia"]
    references = [[["K", "AE1", "T"]], [["D", "AO1", "G"]], [["HH", "AW1", "S"]],
                  [["K", "IH1", "CH", "AH0", "N"]],
                  [["EH1", "L", "AH0", "F", "AH0", "N", "T", "S"]],
                  [["IH0", "N"]]]
    predictions = [("K", "AE0", "T"),  # right once stress is removed
                   ("D", "AA1", "G"), ("HH", "AW1", "S"), ("K", "IH1", "CH", "AH0", "N"),
                   ("EH1", "L", "F", "AH0", "N", "T", "S"), ("IH0", "N")]
    assert g2p.wer_by_length(words, predictions, references) == {
        "<=4": 0.5, "5-6": 0.0, "7-8": 0.0, "9-10": 1.0, ">=11": 0.0,
    }
    # A bucket without words is left out, not reported as 0.
    assert g2p.wer_by_length(["cat"], [("K", "AE1", "T")], [[["K", "AE1", "T"]]]) == {"<=4": 0.0}


def test_closest_reference_tie_takes_the_shorter():
    # "K" is one edit from "AE" (substitution) and from "K T" (insertion);
    # the tie goes to the shorter reference, so PER is 1/1, not 1/2.
    wer, per = g2p.error_rates([["K"]], [[["AE"], ["K", "T"]]], stress=True)
    assert (wer, per) == (1.0, 1.0)


def test_no_stress_removes_the_digits_and_keeps_coinciding_variants_once():
    words = [
        ("read", (("R", "EH1", "D"), ("R", "IY1", "D"))),
        ("the", (("DH", "AH0"), ("DH", "AH1"), ("DH", "IY0"))),
    ]
    assert g2p.without_stress(words) == [
        ("read", (("R", "EH", "D"), ("R", "IY", "D"))),
        ("the", (("DH", "AH"), ("DH", "IY"))),
    ]
    with_stress = g2p.load_words(stress=True, limit=2000, seed=0)
    stripped = g2p.load_words(stress=False, limit=2000, seed=0)
    for split, words in with_stress.items():
        # The same seeded sample of words, each with its digit-free variants.
        assert [word for word, _ in stripped[split]] == [word for word, _ in words]
        for (_, pronunciations), (_, plain) in zip(words, stripped[split]):
            assert set(plain) == {
                tuple(p.rstrip("012") for p in pron) for pron in pronunciations
            } and len(plain) == len(set(plain))
    letters, phonemes = g2p.make_vocabularies(stripped["train"])
    assert "AH" in phonemes.tokens and not any(t[-1].isdigit() for t in phonemes.tokens)


@pytest.mark.slow
def test_no_stress_run_reports_the_scores_without_stress_only(tmp_path):
    out = tmp_path / "run"
    assert main(["g2p", "--quick", "--no-stress", "--epochs", "1", "--limit", "600",
                 "--label-smoothing", "0.2", "--cell-dropout", "0.3", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["args"]["stress"] is False
    # Trained with the cells' dropout, its model.tflite exports (dropout off
    # at inference) and answers the test words as the model does.
    assert metrics["args"]["cell_dropout"] == 0.3
    assert metrics["litert_test_wer"] == metrics["test_wer"]
    assert metrics["litert_test_per"] == metrics["test_per"]
    from ai_edge_litert.interpreter import Interpreter

    listed = Interpreter(str(out / "model.tflite"))._get_ops_details()
    assert metrics["litert_operators"] == {"serving_default": len(listed)}
    # The beam search's loop, its condition and body as TensorFlow's
    # analyzer lists their graphs, after the first (the signature's).
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        tf.lite.experimental.Analyzer.analyze(model_path=str(out / "model.tflite"))
    graphs = report.getvalue().split("\nSubgraph#")[1:]
    looped = sum(
        line.lstrip().startswith("Op#") for graph in graphs[1:] for line in graph.splitlines()
    )
    assert len(graphs) == 3 and metrics["litert_loop_operators"] == {"serving_default": looped}
    # The model trained (and saved) with the loss the option asked for.
    assert keras.models.load_model(out / "model.keras").loss.label_smoothing == 0.2
    assert 0 <= metrics["test_per"] and "test_wer_stress" not in metrics
    assert not any(ch.isdigit() for text in metrics["examples"].values() for ch in text)


def test_litert_buckets_are_those_shorter_than_the_longest_word():
    words = [("cat", [("K", "AE1", "T")]), ("photographs", [("F", "OW1", "T", "AH0")])]
    # 11 letters: the buckets of 6 and 8 letters, decoding 4 phonemes more.
    assert g2p.litert_buckets(words, max_target_length=20) == [(6, 10), (8, 12)]
    # 13 letters: the 12-letter one too, cut to the run's max_target_length.
    words.append(("encyclopedias", [("IH0", "N")]))
    assert g2p.litert_buckets(words, max_target_length=15) == [(6, 10), (8, 12), (12, 15)]
    # 6 letters: serving_default holds every word, no bucket is left.
    assert g2p.litert_buckets(words[:1] + [("aboard", [("AH0",)])], max_target_length=20) == []


def test_the_start_line_names_the_model_the_words_and_the_epochs():
    config = G2PConfig(units=256, epochs=14, ensemble=3, right_to_left=1, cell="gru",
                       layers=2, attention="luong", input_feeding=True)
    splits = {"train": [("a", ())] * 12000, "validation": [("b", ())] * 7,
              "test": [("c", ())] * 6216}
    assert g2p.start_lines(config, splits, "runs/g2p") == [
        "kerasrnn-train g2p: training 3 encoder-decoders of GRU cells (256 units, 2 encoder "
        "layers, bidirectional encoder, Luong attention, input feeding, 1 more reading the "
        "target right to left) for 14 epochs on 12,000 words (7 for validation, 6,216 for "
        "the test)",
        "  outputs go to runs/g2p/",
    ]
    plain = G2PConfig(cell="elman", attention="none", bidirectional=False)
    assert g2p.model_description(plain) == (
        "an encoder-decoder of Elman cells (128 units, no attention)"
    )


@pytest.mark.slow
def test_quick_run_beats_its_baseline_writes_outputs_and_serves_without_kerasrnn(
    tmp_path, capsys
):
    out = tmp_path / "run"
    assert main(["g2p", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    metrics = json.loads((out / "metrics.json").read_text())
    # The quick run, the default model on 6,000 words, clearly beats the
    # nearest-spelling baseline: 48.7% WER against its 99.5% when written.
    assert metrics["worse_than_baseline"] is False
    assert metrics["test_wer"] <= 0.6 and metrics["test_wer"] < metrics["baseline_wer"]
    # It says what it trains and where before training, and what it does
    # before each long step after it, in that order, one plain line each.
    steps = [
        "kerasrnn-train g2p: loading TensorFlow...",
        "kerasrnn-train g2p: training an encoder-decoder of LSTM cells (128 units, "
        "bidirectional encoder, Luong attention) for 8 epochs on 6,000 words (600 for "
        "validation, 600 for the test)",
        f"  outputs go to {out}/",
        "Epoch 1/8: loss ",
        "Epoch 8/8: loss ",
        "exporting SavedModel (saved_model/)...",
        "exporting model.tflite (LiteRT)...",
        "decoding 600 test words with beam 2...",
        "kerasrnn-train g2p: done in ",
    ]
    places = [
        next((i for i, line in enumerate(printed) if line.startswith(step)), None)
        for step in steps
    ]
    assert None not in places and places == sorted(places), printed
    assert printed[places[1] + 1] == steps[2]
    assert metrics["test_per"] <= metrics["test_per_stress"]
    assert metrics["test_wer"] <= metrics["test_wer_stress"]
    assert metrics["args"]["quick"] is True and metrics["wall_time_s"] > 0
    # One sitting: its training is part of it.
    assert 0 < metrics["training_time_s"] < metrics["wall_time_s"]
    for name in ("history.csv", "model.keras", "learning_curves.png", "tensorboard"):
        assert (out / name).exists(), name
    # The default model attends: its alignments are drawn and logged.
    assert metrics["args"]["attention"] == "luong"
    assert (out / "alignments.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list((out / "tensorboard" / "alignments").glob("events.out.tfevents.*"))
    by_length = metrics["test_wer_by_length"]
    assert set(by_length) <= set(g2p.LENGTH_BUCKETS) and len(by_length) >= 3
    program = f"""
        import json

        import tensorflow as tf

        serve = tf.saved_model.load({str(out / "saved_model")!r}).signatures["serving_default"]
        result = serve(texts=tf.constant(["Hello", "", "naïve-42", "x" * 300]))
        # The alignment of "hello": one row per phoneme, one column per letter.
        assert result["input_lengths"].numpy().tolist()[:2] == [5, 0]
        rows = int(result["output_lengths"][0])
        weights = result["alignments"].numpy()[0, :rows, :5]
        assert abs(weights.sum(-1) - 1).max() < 1e-4
        print(json.dumps([text.decode() for text in result["outputs"].numpy()]))
        """
    outputs = last_json(run_without(PROJECT, program, timeout=180))
    # The empty word reads as "" (documented); the others, however odd,
    # get ARPAbet phonemes (a model may end a strange input at once).
    assert outputs[1] == "" and outputs[0]
    for output in outputs:
        assert all(p.rstrip("012").isalpha() and p.isupper() for p in output.split())
    # The LiteRT file, through the example client, in a process that can
    # import neither TensorFlow nor kerasrnn: the SavedModel's answers; a
    # word longer than the file reads is refused, in the one line on stderr
    # (the interpreter's XNNPACK notice held back).
    assert metrics["litert_bytes"] == (out / "model.tflite").stat().st_size
    # A quick run's file holds serving_default alone: no word-length buckets.
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    assert [bucket["signature"] for bucket in vocabulary["buckets"]] == ["serving_default"]
    # The run's file gives no alignments, which its client does not read.
    assert vocabulary["outputs"] == ["target_ids", "scores"]
    # Both files were exported with the same specs: the SavedModel reads as
    # many letters as the LiteRT file, and decodes with the run's beam.
    specs = json.loads((out / "saved_model" / "assets.extra" / "specs.json").read_text())
    assert specs == {"decoding": vocabulary["decoding"], "text": vocabulary["text"]}
    assert specs["decoding"]["max_source_length"] == vocabulary["max_source_length"]
    assert specs["decoding"]["beam_width"] == 2
    assert specs["text"] == {"split": "characters", "lowercase": True, "separator": " "}
    assert 0 <= metrics["litert_test_per"] <= 1.5 and 0 <= metrics["litert_test_wer"] <= 1
    client = f"""
        import runpy
        import sys

        sys.argv = ["g2p_litert.py", {str(out)!r}, "Hello", "", "naïve-42", "x" * 300]
        runpy.run_path("examples/g2p_litert.py", run_name="__main__")
        """
    completed = run_without(CLIENT_WITHOUT, client, check=False)
    assert completed.returncode == 1, completed.stderr[-2000:]
    longest = json.loads((out / "vocabulary.json").read_text())["max_source_length"]
    assert completed.stderr.splitlines() == [f"{'x' * 300}: longer than {longest} letters"]
    assert completed.stdout.splitlines() == [
        f"{word}\t{output}" for word, output in zip(["Hello", "", "naïve-42"], outputs)
    ]
    # The results table scores the run from its files: the SavedModel and
    # model.tflite answer every test word as the run's own decoding did.
    capsys.readouterr()
    (row,) = g2p_runs.main([str(out), "--calls", "3"])
    for column, figure in [
        ("test_wer_%", "test_wer"),
        ("test_per_%", "test_per"),
        ("stressed_wer_%", "test_wer_stress"),
        ("stressed_per_%", "test_per_stress"),
        ("tflite_wer_%", "litert_test_wer"),
    ]:
        assert row[column] == pytest.approx(100 * metrics[figure]), column
    assert (row["models"], row["parameters"], row["beam"]) == (1, metrics["parameters"], 2)
    assert row["training_min"] == pytest.approx(metrics["training_time_s"] / 60)
    assert row["ms_per_word"] > 0
    table = capsys.readouterr().out
    assert f"| run | {' | '.join(list(row)[1:])} |" in table
    assert f"| {out.name} | 1 | {metrics['parameters']} | 2 |" in table


@pytest.mark.parametrize("name", ["linear", "exponential", "inverse_sigmoid"])
def test_every_schedule_is_one_half_at_the_midpoint(name):
    schedule = encoder_decoder.sampling_schedule(name, midpoint=300)
    # Bengio et al.'s inverse sigmoid starts just below 1: k / (k + 1).
    assert float(schedule(0)) == pytest.approx(1.0, abs=0.02 if name == "inverse_sigmoid" else 0)
    assert float(schedule(300)) == pytest.approx(0.5, rel=1e-5)
    assert float(schedule(3000)) < 0.01


def test_no_schedule_is_teacher_forcing():
    assert encoder_decoder.sampling_schedule("none", midpoint=300) is None


@pytest.mark.parametrize(
    "epochs, rates",
    [
        (2, [4e-3, 4e-3]),
        (5, [4e-3, 4e-3, 2e-3, 1e-3, 5e-4]),
        (6, [4e-3, 4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4]),
        (8, [4e-3, 4e-3, 4e-3, 4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4]),
    ],
)
def test_learning_rate_is_held_then_halved_over_the_last_four_epochs(epochs, rates):
    assert [encoder_decoder.step_decay(4e-3, e, epochs) for e in range(epochs)] == rates


@pytest.mark.parametrize(
    "attention, input_feeding, expected",
    [("luong", True, True), ("luong", False, False), ("bahdanau", False, None),
     ("none", False, None)],
)
def test_input_feeding_reaches_luong_models_only(attention, input_feeding, expected):
    config = G2PConfig(units=4, embedding=3, attention=attention, input_feeding=input_feeding)
    vocabulary = seq2seq.Vocabulary(list("abc"))
    model = encoder_decoder.build_model(config, vocabulary, vocabulary)
    assert model.input_feeding is expected
