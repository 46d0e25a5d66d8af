"""The G2P results table: finished `kerasrnn-train g2p` runs scored from
their own exported files, and served at batch 1 beside g2p-en.

`python -m benchmarks.g2p_runs [--calls N] RUN_DIR [RUN_DIR ...]` prints one
row per run directory (trained, taught with `--teacher`, or assembled with
`--members`):

- `models`, `parameters`, `beam`: from its `metrics.json` (`args`);
- `test_wer_%`, `test_per_%` (stress removed) and `stressed_` (with it): its
  `saved_model/`, loaded by TensorFlow alone, pronounces every test word of
  the run's split in batches of 256, scored as the runs score
  (`kerasrnn_pipelines.tasks.g2p.error_rates`); these are the files'
  figures, not `metrics.json`'s;
- `tflite_wer_%`: its `model.tflite` pronounces the same words through the
  example client (`examples/g2p_litert.py`, LiteRT, no TensorFlow);
- `training_min`: its `training_time_s` (summed over the sittings); an
  assembly's is the sum of its members', blank where a member's is unknown;
- `ms_per_word`: `model.tflite` at batch 1, one thread, through the client's
  `Signatures`, on the first `--calls` test words; `g2p_en_ms_per_word`:
  g2p-en 2.1.0's `G2p.predict` on the same words, the two taking turns in
  this process (`benchmarks.litert.per_call_seconds`); `vs_g2p_en` is
  g2p-en's time over the file's. g2p-en is not a dependency
  (`pip install g2p-en==2.1.0`); without it those columns are blank.

With g2p-en installed, a last row scores it as an anchor: `G2p.predict`
(a greedy GRU encoder-decoder without attention, trained on CMUDict by its
authors, perhaps on these test words too) pronounces the first run's test
words; `parameters` counts the arrays it holds.
"""

import argparse
import json
import pathlib

import numpy as np
import tensorflow as tf

from benchmarks.litert import G2P_EN, batches_of, example_client, g2p_en_predict, per_call_seconds
from benchmarks.tables import print_table

#: The batch the SavedModel scores the test words in.
SCORING_BATCH = 256

#: The table's columns (see the module doc).
ROW_COLUMNS = [
    "run", "models", "parameters", "beam", "test_wer_%", "test_per_%", "stressed_wer_%",
    "stressed_per_%", "tflite_wer_%", "training_min", "ms_per_word", "g2p_en_ms_per_word",
    "vs_g2p_en",
]


def test_split(arguments):
    """`(words, references)` of the run's test split: its `--stress`,
    `--limit` and `--seed` (`metrics.json`'s `args`), with stress."""
    from kerasrnn_pipelines.tasks import g2p

    splits = g2p.load_words(
        stress=arguments["stress"], limit=arguments["limit"], seed=arguments["seed"]
    )
    return [word for word, _ in splits["test"]], [prons for _, prons in splits["test"]]


def saved_model_answers(run, words):
    """The best pronunciation of each word by `run/saved_model`'s
    `serving_default`, as a phoneme list."""
    serve = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    answers = []
    for start in range(0, len(words), SCORING_BATCH):
        outputs = serve(texts=tf.constant(words[start : start + SCORING_BATCH]))["outputs"]
        answers += [text.decode().split() for text in outputs.numpy()]
    return answers


def training_minutes(metrics):
    """The run's training time in minutes: its own `training_time_s`, or an
    assembly's members' summed; None where one is unknown."""
    if "members" in metrics:
        seconds = [member.get("training_time_s") for member in metrics["members"]]
        return None if None in seconds else sum(seconds) / 60
    seconds = metrics.get("training_time_s")
    return None if seconds is None else seconds / 60


def model_count(arguments, metrics):
    """The encoder-decoders the run's model holds."""
    if "members" in metrics:
        return sum(member.get("members", 1) for member in metrics["members"])
    return arguments["ensemble"] + arguments["right_to_left"]


def in_percent(rates):
    """`error_rates`' fractions as percentages."""
    return tuple(100 * rate for rate in rates)


def g2p_en_row(predict, arguments):
    """The table's row of g2p-en's `predict` on the test split of the run
    whose `metrics.json` `args` are `arguments`: its error rates only."""
    from kerasrnn_pipelines.tasks import g2p

    words, references = test_split(arguments)
    answers = [predict(word) for word in words]
    model = predict.__self__
    row = dict.fromkeys(ROW_COLUMNS, "")
    row.update({
        "run": G2P_EN,
        "models": 1,
        "parameters": sum(array.size for array in vars(model).values()
                          if isinstance(array, np.ndarray)),
        "beam": 1,
    })
    row["test_wer_%"], row["test_per_%"] = in_percent(
        g2p.error_rates(answers, references, stress=False)
    )
    row["stressed_wer_%"], row["stressed_per_%"] = in_percent(
        g2p.error_rates(answers, references, stress=True)
    )
    return row


def run_row(run, calls, client, predict):
    """The table's row of the run directory `run` (see the module doc)."""
    from kerasrnn_pipelines.tasks import g2p

    metrics = json.loads((run / "metrics.json").read_text())
    arguments = metrics["args"]
    words, references = test_split(arguments)
    answers = saved_model_answers(run, words)
    vocabulary = json.loads((run / "vocabulary.json").read_text())
    signatures = client.Signatures(run / "model.tflite", num_threads=1)
    try:
        served = client.pronounce(signatures, vocabulary, words)
        file_answers = [(answer or "").split() for answer in served]
        contenders = {"model.tflite": lambda chunk: client.pronounce(signatures, vocabulary, chunk)}
        if predict is not None:
            contenders[G2P_EN] = lambda chunk: [predict(word) for word in chunk]
        seconds = per_call_seconds(contenders, batches_of(words, 1, calls), calls)
    finally:
        signatures.close()
    per_word = {name: 1e3 * np.mean(times) for name, times in seconds.items()}
    wer, per = in_percent(g2p.error_rates(answers, references, stress=False))
    row = {
        "run": run.name,
        "models": model_count(arguments, metrics),
        "parameters": metrics["parameters"],
        "beam": arguments["beam_width"],
        "test_wer_%": wer,
        "test_per_%": per,
        "stressed_wer_%": "",
        "stressed_per_%": "",
        "tflite_wer_%": in_percent(g2p.error_rates(file_answers, references, stress=False))[0],
    }
    if arguments["stress"]:
        row["stressed_wer_%"], row["stressed_per_%"] = in_percent(
            g2p.error_rates(answers, references, stress=True)
        )
    minutes = training_minutes(metrics)
    row["training_min"] = "" if minutes is None else minutes
    row["ms_per_word"] = per_word["model.tflite"]
    row["g2p_en_ms_per_word"] = per_word.get(G2P_EN, "")
    row["vs_g2p_en"] = per_word[G2P_EN] / per_word["model.tflite"] if G2P_EN in per_word else ""
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.g2p_runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", type=pathlib.Path, metavar="RUN_DIR",
                        help="finished kerasrnn-train g2p run directories")
    parser.add_argument("--calls", type=int, default=1000,
                        help="timed batch-1 calls per contender (default 1000)")
    arguments = parser.parse_args(argv)
    if arguments.calls < 1:
        parser.error(f"argument --calls: a positive integer; received {arguments.calls}")
    for run in arguments.runs:
        missing = [
            name for name in ("metrics.json", "saved_model", "model.tflite", "vocabulary.json")
            if not (run / name).exists()
        ]
        if missing:
            parser.error(f"{run} is not a finished g2p run: it has no {', '.join(missing)}")
    predict, reason = g2p_en_predict()
    rows = [run_row(run, arguments.calls, example_client(), predict) for run in arguments.runs]
    anchor = []
    if predict is not None:
        first = json.loads((arguments.runs[0] / "metrics.json").read_text())["args"]
        anchor = [g2p_en_row(predict, first)]
    print_table(
        "G2P runs: scored from their SavedModel and model.tflite, served at batch 1",
        rows + anchor,
        ROW_COLUMNS,
    )
    if reason is not None:
        print(f"g2p-en columns left blank: {reason}")
    return rows


if __name__ == "__main__":
    main()
