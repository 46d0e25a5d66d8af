"""The benchmark program runs end to end on tiny shapes (no timing asserted)."""

import re
import subprocess
import sys

import pytest

from benchmarks import input_pipeline

PIPELINE_TASKS = ("forecast", "classify", "charlm", "tag")


def run_benchmark(module, *arguments, timeout):
    """`python -m module arguments...` run to its end: its CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", module, *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.slow
def test_quick_benchmark_prints_every_table():
    result = run_benchmark("benchmarks", "--quick", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "kerasrnn cell vs Keras built-in" in out
    for cell in ("elman", "lstm", "gru", "leaky"):
        for mode in ("train/default", "infer/default", "train/jit", "infer/jit"):
            assert f"| {cell} | {mode} |" in out
    assert "matmul ceiling" in out
    assert "| 1000 |" in out

    assert "input pipeline vs model train step" in out
    assert "| greedy |" in out and "| beam B=5 |" in out
    for task in PIPELINE_TASKS:
        # | task | cell | units | batch | epoch_batches | input | model | ratio |
        row = re.search(rf"^\| {task} \| (.*) \|$", out, re.MULTILINE)
        assert row is not None, f"no row for {task}:\n{out[-3000:]}"
        cells = row.group(1).split(" | ")
        assert len(cells) == 7
        input_rate, model_rate, ratio = (
            float(value.replace(",", "")) for value in cells[-3:]
        )
        assert input_rate > 0 and model_rate > 0
        # The printed ratio is input over model, to the two decimals shown.
        assert ratio == pytest.approx(input_rate / model_rate, rel=0.01, abs=0.01)
    # g2p is measured when its module imports; either way it has a row.
    assert re.search(r"^\| g2p \| ", out, re.MULTILINE)

    # | model | batch | beam | words/s | p50 | p99 | ms per word | first call s | speedup |,
    # served without kerasrnn, the default export (XLA) and the jit_compile=False one.
    assert "serving a G2P SavedModel without kerasrnn" in out
    for batch in (1, 32):
        per_word, speedups = {}, {}
        for model in ("default g2p, untrained", "default g2p, untrained, jit_compile=False"):
            row = re.search(rf"^\| {model} \| {batch} \| (.*) \|$", out, re.MULTILINE)
            assert row is not None, out[-2000:]
            beam, words_per_s, p50, p99, per_word[model], first_call, speedups[model] = (
                value.strip().replace(",", "") for value in row.group(1).split(" | ")
            )
            assert beam == "2"  # the --quick configuration's beam width
            words_per_s, p50, p99, first_call = map(float, (words_per_s, p50, p99, first_call))
            per_word[model] = float(per_word[model])
            assert 0 < p50 <= p99 and first_call > 0
            # words/s and ms per word are one measurement read two ways; the
            # ms are printed to 0.01.
            assert words_per_s * per_word[model] == pytest.approx(
                1000.0, rel=0.005 / per_word[model] + 0.01
            )
        compiled, plain = per_word.values()
        assert speedups["default g2p, untrained, jit_compile=False"] == ""
        # The speedup is the uncompiled export's time per word over the compiled one's.
        assert float(speedups["default g2p, untrained"]) == pytest.approx(
            plain / compiled, rel=0.005 / plain + 0.005 / compiled + 0.01
        )

    # LiteRT: G2P text in and out through the example client, beside the
    # SavedModel (and g2p-en, or a note saying why not), and one cell model.
    assert "LiteRT: G2P end to end" in out
    # The quick file's one signature, its operators counted before any time.
    operators = re.search(
        r"^\| default g2p, untrained \| float32 \| serving_default \| (\d+) \| (.*) \|$",
        out,
        re.MULTILINE,
    )
    assert operators is not None, out[-3000:]
    # The five most frequent kinds, each with its count, within the total.
    kinds = re.findall(r"([A-Z_0-9]+) (\d+)", operators.group(2))
    assert len(kinds) == 5, operators.group(2)
    counts = [int(count) for _, count in kinds]
    assert counts == sorted(counts, reverse=True)
    assert 0 < sum(counts) <= int(operators.group(1))
    for contender in ("LiteRT float32, 1 thread", "SavedModel (XLA)"):
        for batch in (1, 32):
            row = re.search(
                rf"^\| default g2p, untrained \| {re.escape(contender)} \| {batch} \| (.*) \|$",
                out,
                re.MULTILINE,
            )
            assert row is not None, out[-3000:]
            words_per_s = float(row.group(1).split(" | ")[0].replace(",", ""))
            assert words_per_s > 0
    assert "g2p-en 2.1.0 G2p.predict" in out or "g2p-en row left out" in out
    # The default model beside its 8-unit twin: the same operators, and
    # each time printed as a share of the default's.
    for batch in (1, 256):
        twins = re.findall(
            rf"^\| (\d+) units[^|]* \| (\d+) \| {batch} \| ([\d.,]+) \| ([\d.]+) \|$",
            out,
            re.MULTILINE,
        )
        assert [units for units, *_ in twins] == ["128", "8"], out[-3000:]
        (_, default_operators, default_us, default_share), (_, operators, us, share) = twins
        assert operators == default_operators and float(default_share) == 1.0
        default_us, us = (float(value.replace(",", "")) for value in (default_us, us))
        assert float(share) == pytest.approx(us / default_us, abs=0.006)
    # The batch-1 goal against g2p-en: g2p-en's ms per word over the file's,
    # measured with the two alone, and that ratio over the goal.
    assert "LiteRT: the serving goals" in out
    goal = re.search(
        r"^\| batch 1, float32 file vs g2p-en \| ([\d.,]+) \| ([\d.,]+) \| ([\d.,]+) \| 2.50 "
        r"\| ([\d.,]+) \|$",
        out,
        re.MULTILINE,
    )
    assert (goal is not None) == ("g2p-en 2.1.0 G2p.predict" in out), out[-3000:]
    if goal is not None:
        file_ms, g2p_en_ms, measured, over = (
            float(value.replace(",", "")) for value in goal.groups()
        )
        assert measured == pytest.approx(g2p_en_ms / file_ms, rel=0.05)
        assert over == pytest.approx(measured / 2.5, abs=0.01)
    assert re.search(r"^\| LSTMCell \| ", out, re.MULTILINE)
    # An LSTM and an Elman layer of 10 steps, fused and unrolled: the
    # fused file's operators fewer than the loop's.
    for cell in ("LSTMCell", "ElmanCell"):
        row = re.search(rf"^\| {cell} \| 10 \| (\d+) \| (\d+) \| ", out, re.MULTILINE)
        assert row is not None, out[-2000:]
        assert int(row.group(1)) < int(row.group(2))


@pytest.mark.slow
def test_quick_pauses_benchmark_prints_its_tables():
    from benchmarks import pauses

    result = run_benchmark("benchmarks.pauses", "--quick", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    # One row per pause, in order; the last column is the first call's
    # median over the others', each printed to 0.01.
    ways = "|".join(sorted({way for way, _ in pauses.PAUSES}))
    rows = re.findall(
        rf"^\| float32 \| ({ways}) \| ([\d.]+) \| ([\d.,]+) \| ([\d.,]+) \| ([\d.]+) \|$",
        out,
        re.MULTILINE,
    )
    assert [(way, float(ms)) for way, ms, *_ in rows] == list(pauses.PAUSES), out[-3000:]
    for *_, first, later, ratio in rows:
        first, later = (float(value.replace(",", "")) for value in (first, later))
        assert 0 < later and float(ratio) == pytest.approx(first / later, abs=0.006)
    # The turns with g2p-en, or the reason they are left out.
    turns = re.findall(r"^\| float32 \| (alone|\d+ words?) \| (\d) \| ", out, re.MULTILINE)
    if "The table of turns with g2p-en is left out: g2p-en" in out:
        assert turns == []
    else:
        assert turns == [
            (pauses.turns_of(length), repeat)
            for repeat in ("1", "2")
            for length in pauses.TURN_LENGTHS
        ]


def test_pauses_refuses_repeats_below_one():
    result = run_benchmark("benchmarks.pauses", "--repeats", "0", timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith(
        "--repeats must be a positive integer; received 0"
    )


def test_evenly_spaced_batches_cover_the_epoch():
    assert input_pipeline.evenly_spaced(list(range(10)), 3) == [0, 3, 6]
    assert input_pipeline.evenly_spaced(list(range(9)), 3) == [0, 3, 6]
    assert input_pipeline.evenly_spaced(list(range(2)), 5) == [0, 1]


def test_measure_refuses_unknown_tasks_and_empty_runs():
    with pytest.raises(ValueError, match="Received: task_name='translate'"):
        input_pipeline.measure("translate", quick=True, repeats=1, model_batches=1)
    with pytest.raises(ValueError, match="Received: model_batches=0"):
        input_pipeline.measure("forecast", quick=True, repeats=1, model_batches=0)


@pytest.mark.parametrize(
    "files, arguments, said",
    [
        (("metrics.json", "model.tflite", "vocabulary.json"), [],
         "is not a finished g2p run: it has no saved_model"),
        ((), [], "it has no metrics.json, saved_model, model.tflite, vocabulary.json"),
        (("metrics.json", "saved_model", "model.tflite", "vocabulary.json"), ["--calls", "0"],
         "argument --calls: a positive integer; received 0"),
    ],
)
def test_the_results_table_refuses_what_it_cannot_score(
    tmp_path, capsys, files, arguments, said
):
    from benchmarks import g2p_runs

    for name in files:
        (tmp_path / name).touch()
    with pytest.raises(SystemExit) as stop:
        g2p_runs.main([str(tmp_path), *arguments])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert said in error[-1] and error[0].startswith("usage: python -m benchmarks.g2p_runs")


def test_the_results_table_scores_g2p_en_on_the_runs_split():
    pytest.importorskip("g2p_en")
    from benchmarks import g2p_runs
    from benchmarks.litert import g2p_en_predict
    from kerasrnn_pipelines.data import cmudict

    predict, reason = g2p_en_predict()
    assert reason is None
    arguments = {"stress": True, "limit": 600, "seed": 0}
    row = g2p_runs.g2p_en_row(predict, arguments)
    # A GRU encoder and decoder of 256 units (three gates, each with an
    # input and a recurrent bias), embeddings of its 29 letters and 74
    # phonemes, and the output layer over the phonemes.
    n = 256
    gru = 3 * n * (n + n) + 2 * 3 * n
    assert row["parameters"] == 29 * n + gru + 74 * n + gru + (n + 1) * 74
    # WER: a word is right when its answer is one of its references.
    words, references = g2p_runs.test_split(arguments)
    answers = [predict(word) for word in words]
    for column, spelt in [("stressed_wer_%", tuple), ("test_wer_%", cmudict.strip_stress)]:
        wrong = sum(
            tuple(spelt(answer)) not in {tuple(spelt(r)) for r in prons}
            for answer, prons in zip(answers, references)
        )
        assert row[column] == pytest.approx(100 * wrong / len(words)), column
    assert row["test_wer_%"] < row["stressed_wer_%"]


@pytest.mark.slow
def test_python_loop_decoders_compute_what_the_compiled_ones_do():
    """The decoding benchmark's baseline is the same algorithm, step by step.

    The model's weights are seeded (they follow the global seed, which the
    tests before this one move) and its logits spread (`scaled_outputs`): its
    adjacent candidates among each step's best are then at least 2.8e-4 apart
    in the beam search and 9.6e-4 in greedy decoding, where untrained they
    came within 5e-7 or tied.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    from benchmarks import decoder_speed
    from kerasrnn import seq2seq
    from tests.kerasrnn.seq2seq.sharpened import scaled_outputs

    keras.utils.set_random_seed(29)
    model = decoder_speed.build_model(16, 30, 72, 6)
    scaled_outputs(model, 30.0)
    source = tf.constant(
        np.random.default_rng(3).integers(seq2seq.END_ID + 1, 30, size=(8, 6)), tf.int32
    )
    greedy = seq2seq.greedy_decode(model, source, 8).sequences.numpy()
    np.testing.assert_array_equal(decoder_speed.python_greedy(model, source, 8), greedy)
    beams = seq2seq.beam_search_decode(model, source, 5, 8).sequences.numpy()
    np.testing.assert_array_equal(decoder_speed.python_beam_search(model, source, 5, 8), beams)
