"""LiteRT at batch 1: what a pause before a call costs, and the serving goals'
ratios by the length of the contenders' turns.

A LiteRT file's first call after a pause is slower than the calls that
follow it: the processor's caches have lost the file's weights. The goals
(`benchmarks.litert`, `goal_rows`) have the file and g2p-en take turns of
ten words, so the file's first call of each turn comes after g2p-en's turn;
these tables say how much of the goals' figures that is. Both run the
default g2p model exported as its run exports it (float32) and in
`dynamic_int8` (`--litert-run DIR`: a trained run's model; by default the
architecture untrained, whose beam search rarely stops early), through the
example client's `pronounce` (`examples/g2p_litert.py`), text in and text
out, one word per call.

Pauses (`pause_rows`): each file answers test words of up to 8 letters in
turns of `TURN` calls, and before each turn the process pauses one way for a
set time: a loop that only reads the clock, a sleep, or Python arithmetic.
If the pause's length slows the first call whatever the process does in it,
it is not the paused work's memory that evicts the file's weights.

Turns (`turn_rows`): g2p-en's `G2p.predict` and each file answer the first
test words one at a time, taking turns of 1, 10 (the goals' way) and 100
words, and each alone; g2p-en's time per word over the file's. Needs g2p-en
2.1.0 (`pip install g2p-en==2.1.0`); without it the table is left out,
saying why.

`python -m benchmarks.pauses [--quick] [--litert-run DIR]` prints both.
"""

import argparse
import json
import statistics
import tempfile
import time

from benchmarks.litert import (
    example_client,
    export_variants,
    g2p_en_predict,
    g2p_model,
    per_call_seconds,
)
from benchmarks.tables import print_table
from kerasrnn_pipelines.data import cmudict

#: Calls in a turn of `pause_rows`: the first after the pause, then the rest.
TURN = 4

#: `(way, milliseconds)` of the pauses before a turn.
PAUSES = (
    ("reading the clock", 0.1),
    ("reading the clock", 1.0),
    ("reading the clock", 3.0),
    ("reading the clock", 10.0),
    ("reading the clock", 30.0),
    ("sleeping", 0.1),
    ("sleeping", 1.0),
    ("sleeping", 10.0),
    ("Python arithmetic", 1.0),
    ("Python arithmetic", 10.0),
)

#: Turn lengths of `turn_rows`, in words; None: each contender alone.
TURN_LENGTHS = (1, 10, 100, None)

#: Multiplications and additions of Python arithmetic between two looks at
#: the clock (a few µs).
ARITHMETIC_CHUNK = 200


def pause(way, seconds):
    """Spend `seconds` in `way`: only reading the clock, sleeping, or Python
    arithmetic (reading the clock every `ARITHMETIC_CHUNK` steps)."""
    end = time.perf_counter() + seconds
    if way == "sleeping":
        time.sleep(seconds)
    elif way == "reading the clock":
        while time.perf_counter() < end:
            pass
    else:
        total = 0
        while time.perf_counter() < end:
            for step in range(ARITHMETIC_CHUNK):
                total += step * step


def pause_rows(files, words, turns):
    """One row per (file, pause): the median µs of a turn's first call and
    of its other `TURN - 1` calls, over `turns` turns, and their ratio."""
    rows = []
    for label, pronounce in files.items():
        for word in words[:TURN]:
            pronounce([word])
        for way, milliseconds in PAUSES:
            first, later = [], []
            position = 0
            for _ in range(turns):
                pause(way, milliseconds / 1e3)
                for call in range(TURN):
                    word = words[position % len(words)]
                    position += 1
                    began = time.perf_counter()
                    pronounce([word])
                    (later if call else first).append(time.perf_counter() - began)
            first_us, later_us = 1e6 * statistics.median(first), 1e6 * statistics.median(later)
            rows.append(
                {
                    "file": label,
                    "pause": way,
                    "ms": milliseconds,
                    "first_call_us": first_us,
                    "later_calls_us": later_us,
                    "first_over_later": first_us / later_us,
                }
            )
    return rows


def turns_of(length):
    """How `turn_rows` names a turn length: "alone", "1 word", "10 words"."""
    if length is None:
        return "alone"
    return f"{length} word" + ("s" if length > 1 else "")


def turn_rows(files, predict, words, repeats):
    """One row per (file, turn length, repeat): µs per word of the file and
    of g2p-en taking turns of that many words (`per_call_seconds`; None:
    each alone, one after the other), and g2p-en's time over the file's."""
    chunks = [[word] for word in words]

    def g2p_en(chunk):
        return [predict(word) for word in chunk]

    rows = []
    for repeat in range(1, repeats + 1):
        for label, pronounce in files.items():
            for length in TURN_LENGTHS:
                if length is None:
                    # A contender measured on its own answers every word in a row.
                    seconds = {
                        **per_call_seconds({"file": pronounce}, chunks, len(chunks)),
                        **per_call_seconds({"g2p-en": g2p_en}, chunks, len(chunks)),
                    }
                else:
                    contenders = {"file": pronounce, "g2p-en": g2p_en}
                    seconds = per_call_seconds(contenders, chunks, len(chunks), length)
                file_us = 1e6 * statistics.fmean(seconds["file"])
                g2p_en_us = 1e6 * statistics.fmean(seconds["g2p-en"])
                rows.append(
                    {
                        "file": label,
                        "turns_of": turns_of(length),
                        "repeat": repeat,
                        "file_us_per_word": file_us,
                        "g2p_en_us_per_word": g2p_en_us,
                        "g2p_en_over_file": g2p_en_us / file_us,
                    }
                )
    return rows


def print_tables(run, quick, repeats):
    """Export the files and print the two tables."""
    name, model, letters, phonemes, config, train_words, _ = g2p_model(run, quick)
    test_words = [word for word, _ in cmudict.load_split("test")]
    short_words = [word for word in test_words if len(word) <= 8]
    client = example_client()
    labels = ("float32",) if quick else ("float32", "dynamic_int8")
    with tempfile.TemporaryDirectory() as directory:
        exported = export_variants(
            directory, model, letters, phonemes, config, train_words, quick, labels
        )
        files = {}
        for label, path in exported.items():
            vocabulary = json.loads((path / "vocabulary.json").read_text())
            signatures = client.Signatures(path / "model.tflite")
            files[label] = lambda words, signatures=signatures, vocabulary=vocabulary: (
                client.pronounce(signatures, vocabulary, words)
            )
        print_table(
            f"LiteRT at batch 1 ({name}): a turn's first call after a pause against the turn's "
            f"other {TURN - 1} calls, µs (medians of {5 if quick else 60} turns)",
            pause_rows(files, short_words, 5 if quick else 60),
            ["file", "pause", "ms", "first_call_us", "later_calls_us", "first_over_later"],
        )
        predict, reason = g2p_en_predict()
        if predict is None:
            print(f"\nThe table of turns with g2p-en is left out: {reason}.")
            return
        print_table(
            f"LiteRT at batch 1 ({name}) and g2p-en taking turns of a number of words, µs per "
            "word (the goals take turns of 10)",
            turn_rows(files, predict, test_words[: 20 if quick else 200], repeats),
            ["file", "turns_of", "repeat", "file_us_per_word", "g2p_en_us_per_word",
             "g2p_en_over_file"],
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pauses", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="the --quick g2p model untrained, few calls: a smoke test")
    parser.add_argument("--litert-run", default=None, metavar="DIR",
                        help="a kerasrnn-train g2p run directory whose model is exported")
    parser.add_argument("--repeats", type=int, default=2,
                        help="measurements of the turns table per file and turn length")
    arguments = parser.parse_args()
    if arguments.repeats < 1:
        parser.error(f"--repeats must be a positive integer; received {arguments.repeats}")
    print_tables(arguments.litert_run, arguments.quick, arguments.repeats)
