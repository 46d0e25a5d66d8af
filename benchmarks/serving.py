"""Serving speed of a G2P SavedModel, loaded where kerasrnn is not installed.

A text-to-speech front end calls G2P for every unknown word, often one word
at a time. For each SavedModel (a `kerasrnn-train g2p` run's `saved_model/`,
given as `--serving-model NAME=PATH`; without one, the default g2p
architecture exported untrained, whose beams run to the maximum output
length: an upper bound on the time), a subprocess that refuses to import
kerasrnn loads it and calls `serving_default` on batches of CMUDict test
words: words/s and the p50/p99 latency of one call, at batch 1, 32 and 256.
"""

import dataclasses
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

BATCHES = (1, 32, 256)

MEASURE = textwrap.dedent(
    """
    import json, sys, time

    class RefuseProjectImports:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("kerasrnn", "kerasrnn_pipelines"):
                raise ImportError("the served model must not need " + name)
            return None

    sys.meta_path.insert(0, RefuseProjectImports())
    import numpy as np
    import tensorflow as tf

    path, words_file, batches, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    words = json.load(open(words_file))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    rows = []
    for batch in batches:
        chunks = [words[i:i + batch] for i in range(0, batch * (calls + 3), batch)]
        chunks = [c for c in chunks if len(c) == batch] or [words[:batch]]
        for chunk in chunks[:3]:
            serve(texts=tf.constant(chunk))  # tracing and warm-up
        seconds = []
        for index in range(calls):
            chunk = tf.constant(chunks[index % len(chunks)])
            start = time.perf_counter()
            serve(texts=chunk)["outputs"].numpy()
            seconds.append(time.perf_counter() - start)
        seconds = np.array(seconds)
        rows.append({"batch": batch, "words_per_s": batch * len(seconds) / seconds.sum(),
                     "p50_ms": 1e3 * np.percentile(seconds, 50),
                     "p99_ms": 1e3 * np.percentile(seconds, 99),
                     "ms_per_word": 1e3 * seconds.sum() / (batch * len(seconds))})
    print(json.dumps(rows))
    """
)


@dataclasses.dataclass
class ServedModel:
    name: str
    path: Path
    trained: bool


def untrained_default(directory, quick):
    """The default `kerasrnn-train g2p` model (the `--quick` one with
    `quick`), exported untrained as the run would export it."""
    from kerasrnn import seq2seq
    from kerasrnn_pipelines import encoder_decoder
    from kerasrnn_pipelines.tasks import g2p
    from kerasrnn_pipelines.tasks.options.g2p import G2PConfig

    config = G2PConfig(**(G2PConfig.QUICK if quick else {}))
    splits = g2p.load_words(config)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    model = encoder_decoder.build_model(config, letters, phonemes)
    path = Path(directory) / "untrained_default"
    longest = max(len(p) for _, prons in splits["train"] for p in prons)
    seq2seq.export_serving(
        model, path, letters, phonemes, beam_width=config.beam_width,
        length_penalty=config.length_penalty,
        max_input_length=max(len(word) for word, _ in splits["train"]) * 2,
        max_output_length=longest + 4,
    )
    return ServedModel("default g2p, untrained", path, trained=False)


def test_words():
    from kerasrnn_pipelines.data import cmudict

    return [word for word, _ in cmudict.load_split("test")]


def serving_rows(models, quick, calls):
    """One row per (model, batch): words/s, p50/p99 ms per call, ms per word.

    Args:
        models: List of `(name, path)` of SavedModels; empty measures the
            untrained default architecture.
        quick: Batches 1 and 32 only, the `--quick` architecture.
        calls: Timed calls per batch size.
    """
    batches = BATCHES[:2] if quick else BATCHES
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        served = [ServedModel(name, Path(path), trained=True) for name, path in models]
        if not served:
            served = [untrained_default(directory, quick)]
        words_file = Path(directory) / "words.json"
        words_file.write_text(json.dumps(test_words()))
        for model in served:
            completed = subprocess.run(
                [sys.executable, "-c", MEASURE, str(model.path), str(words_file),
                 json.dumps(list(batches)), str(calls)],
                capture_output=True, text=True, check=False,
            )
            if completed.returncode != 0:
                raise RuntimeError(
                    f"serving {model.path} failed:\n{completed.stderr[-2000:]}"
                )
            for row in json.loads(completed.stdout.strip().splitlines()[-1]):
                rows.append({"model": model.name, **row})
    return rows
