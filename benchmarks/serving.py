"""Serving speed of a G2P SavedModel, loaded where kerasrnn is not installed.

A text-to-speech front end calls G2P for every unknown word, often one word
at a time. For each SavedModel (a `kerasrnn-train g2p` run's `saved_model/`,
given as `--serving-model NAME=PATH`; without one, the default g2p
architecture exported untrained, whose beams run to the maximum output
length: an upper bound on the time), a subprocess that refuses to import
kerasrnn loads it and calls `serving_default` on batches of CMUDict test
words: words/s and the p50/p99 latency of one call, at batch 1, 32 and 256,
with the beam width the export was written with.

The untrained default is exported twice, with the numeric core XLA-compiled
(`jit_compile=True`, the default) and without; `speedup` is the uncompiled
export's time per word over the compiled one's. All models are loaded in one
process and called in turn, call by call, so that they see the same load.
Before timing, every batch that will be timed is served once: tracing and the
XLA compiles (one per padded shape) happen there, not in the timed calls;
`first_call_s` is the first call at that batch size, trace and compile
included.
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

    paths, words_file, batches, calls = (json.loads(sys.argv[1]), sys.argv[2],
                                         json.loads(sys.argv[3]), int(sys.argv[4]))
    words = json.load(open(words_file))
    serves = [tf.saved_model.load(path).signatures["serving_default"] for path in paths]
    rows = [[] for _ in paths]
    for batch in batches:
        chunks = [words[i:i + batch] for i in range(0, batch * calls, batch)]
        chunks = [tf.constant(c) for c in chunks if len(c) == batch] or [tf.constant(words[:batch])]
        first, beams = [], []
        for serve in serves:
            start = time.perf_counter()
            beams.append(int(serve(texts=chunks[0])["beam_outputs"].shape[1]))
            first.append(time.perf_counter() - start)
            for chunk in chunks[1:]:
                serve(texts=chunk)
        seconds = [[] for _ in serves]
        for index in range(calls):
            chunk = chunks[index % len(chunks)]
            for model, serve in enumerate(serves):
                start = time.perf_counter()
                serve(texts=chunk)["outputs"].numpy()
                seconds[model].append(time.perf_counter() - start)
        for model, times in enumerate(seconds):
            times = np.array(times)
            rows[model].append({
                "batch": batch, "beam": beams[model],
                "words_per_s": batch * len(times) / times.sum(),
                "p50_ms": 1e3 * np.percentile(times, 50),
                "p99_ms": 1e3 * np.percentile(times, 99),
                "ms_per_word": 1e3 * times.sum() / (batch * len(times)),
                "first_call_s": first[model]})
    print(json.dumps(rows))
    """
)


@dataclasses.dataclass
class ServedModel:
    """A SavedModel to serve; `baseline` names the model its `speedup` is
    measured against (None: no speedup column)."""

    name: str
    path: Path
    trained: bool
    baseline: str | None = None


def untrained_default(directory, quick):
    """The default `kerasrnn-train g2p` model (the `--quick` one with
    `quick`), exported untrained as the run would export it, and the same
    model exported with `jit_compile=False`."""
    from kerasrnn import seq2seq
    from kerasrnn_pipelines import encoder_decoder
    from kerasrnn_pipelines.tasks import g2p
    from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig

    config = G2PConfig(**(G2PConfig.QUICK if quick else {}))
    splits = g2p.load_words(stress=config.stress, limit=config.limit, seed=config.seed)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    model = encoder_decoder.build_model(config, letters, phonemes)
    longest = max(len(p) for _, prons in splits["train"] for p in prons)
    name = "default g2p, untrained"
    served = []
    for jit_compile, label, baseline in (
        (True, name, f"{name}, jit_compile=False"),
        (False, f"{name}, jit_compile=False", None),
    ):
        path = Path(directory) / f"untrained_default_{'xla' if jit_compile else 'graph'}"
        seq2seq.export_serving(
            model, path, letters, phonemes, beam_width=config.beam_width,
            length_penalty=config.length_penalty,
            max_source_length=max(len(word) for word, _ in splits["train"]) * 2,
            max_target_length=longest + 4, jit_compile=jit_compile,
        )
        served.append(ServedModel(label, path, trained=False, baseline=baseline))
    return served


def test_words():
    from kerasrnn_pipelines.data import cmudict

    return [word for word, _ in cmudict.load_split("test")]


def serving_rows(models, quick, calls):
    """One row per (model, batch): beam width, words/s, p50/p99 ms per call,
    ms per word, the first call's seconds and the speedup over the baseline.

    Args:
        models: List of `(name, path)` of SavedModels; empty measures the
            untrained default architecture, compiled and not.
        quick: Batches 1 and 32 only, the `--quick` architecture.
        calls: Timed calls per batch size and model.
    """
    batches = BATCHES[:2] if quick else BATCHES
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        served = [ServedModel(name, Path(path), trained=True) for name, path in models]
        if not served:
            served = untrained_default(directory, quick)
        words_file = Path(directory) / "words.json"
        words_file.write_text(json.dumps(test_words()))
        completed = subprocess.run(
            [sys.executable, "-c", MEASURE, json.dumps([str(m.path) for m in served]),
             str(words_file), json.dumps(list(batches)), str(calls)],
            capture_output=True, text=True, check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"serving {[str(m.path) for m in served]} failed:\n"
                f"{completed.stderr[-2000:]}"
            )
        measured = json.loads(completed.stdout.strip().splitlines()[-1])
    by_name = {model.name: model_rows for model, model_rows in zip(served, measured)}
    for model, model_rows in zip(served, measured):
        for index, row in enumerate(model_rows):
            speedup = ""
            if model.baseline is not None:
                speedup = by_name[model.baseline][index]["ms_per_word"] / row["ms_per_word"]
            rows.append({"model": model.name, **row, "speedup": speedup})
    return rows
