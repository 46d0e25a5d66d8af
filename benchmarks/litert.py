"""LiteRT: the G2P export's speed against its SavedModel and g2p-en, and the
cells' models at batch 1 against Keras and their SavedModel.

G2P (`g2p_rows`). A model, either a `kerasrnn-train g2p` run's (`--litert-run
DIR`: its `model.keras` and `saved_model/`) or the default architecture
untrained (the `--quick` one with `quick`), is exported here to LiteRT as
the run exports it (`kerasrnn.seq2seq.export_litert`: a signature per
word-length bucket) and in the variants worth comparing: `dynamic_int8`
and `float16` weights, one signature only (no buckets), greedy (beam 1).
Every contender answers the same words end to end, text in and text out,
one call per batch: the LiteRT files through the example client's
`pronounce` (`examples/g2p_litert.py`: NumPy and `ai_edge_litert`; words
grouped by bucket, one call per bucket), through the client's
`Signatures` (LiteRT's `CompiledModel` with XNNPACK's weight cache) on 1
or 2 threads, and through the `Interpreter` with or without XNNPACK; the
SavedModel through `serving_default`; g2p-en 2.1.0's neural model
(`G2p.predict`, one word at a time: it has no batch), when installed. They
run in one process and take turns, ten calls each (`BURST`), so that they
see the same load while each runs as a client calling it again and again
would; each batch is answered once before timing. Both the SavedModel's
and the LiteRT files' beam search stop once every hypothesis has ended,
which an untrained model's rarely do: its times are upper bounds, and a
trained run (`--litert-run`) gives the served ones.

Before any time, the operators of each file's signatures (`operator_rows`).
After the table, the serving goals (`goal_rows`), each measured on its own
so that no third contender's turn sits between the two compared: at batch 1
the file and g2p-en alone take turns, at batch 256 the file on two threads
runs alone.

Cells (`cell_rows`): `keras.Sequential([Bidirectional(RNN(cell)), Dense])`
over 12 steps, batch 1, for each kerasrnn cell: `kerasrnn.export_litert`
with the time loop unrolled, against the model's own call (`model(x)`) and
its SavedModel (`model.export`), microseconds per call.

Fused LSTM (`fused_rows`): `RNN(LSTMCell(32))` then `Dense` at batch 1
over 10, 100 and 200 steps, exported with LiteRT's fused
`UNIDIRECTIONAL_SEQUENCE_LSTM` (`fused=True`) and with the unrolled loop
(`fused=False`, the default).

`python -m benchmarks.litert [--quick] [--litert-run DIR]` prints these
tables alone.

Rewrites (`rewrite_rows`, `--rewrites` prints this table alone): for each
rewrite of `kerasrnn.export.rewrites.REWRITES` that buys time, the file it
speeds up exported with every rewrite and without that one
(`rewrites_off`), at batch 1 through the client each file is made for:
the default g2p architecture (untrained, one signature of 8 letters and 12
phonemes, float32 and dynamic_int8) through the example client's
`Signatures`. The two files alternate call by call (`interleaved_medians`),
in `ROUNDS` rounds, the first to run swapped from one round to the next,
each round's ratio printed: a rewrite is kept only where the median of its
rounds on a file measures it more than 5% faster.
"""

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import itertools
import json
import pathlib
import tempfile
import time
import types

import keras
import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter, OpResolverType

import kerasrnn
from benchmarks.tables import print_table
from benchmarks.timing import interleaved_medians

BATCHES = (1, 32, 256)

#: Consecutive calls each contender makes before the next takes its turn.
BURST = 10

#: The units of the small twin of the default g2p model in `time_share_rows`.
DISPATCH_UNITS = 8

CLIENT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "g2p_litert.py"


def example_client():
    """The example client, `examples/g2p_litert.py`, as a module."""
    spec = importlib.util.spec_from_file_location("g2p_litert", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def g2p_en_predict():
    """g2p-en's `G2p.predict` (its neural model), or the reason it cannot run.

    g2p-en loads NLTK's CMUDict when it builds `G2p`, and tries to download
    NLTK data when it is imported; offline neither is there. `predict`
    never reads the dictionary, so it is replaced by an empty one.
    """
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            from g2p_en import g2p as g2p_en
    except ImportError as error:
        return None, f"g2p-en is not installed ({error})"
    g2p_en.cmudict = types.SimpleNamespace(dict=dict)
    try:
        model = g2p_en.G2p()
    except Exception as error:  # its data files, whatever is missing
        return None, f"g2p-en could not be built: {error}"
    return model.predict, None


def g2p_model(run, quick):
    """`(name, model, letters, phonemes, config, train_words, saved_model)`:
    the run's trained model and SavedModel, or the default architecture
    untrained (its SavedModel then None: exported by the caller)."""
    from kerasrnn_pipelines import encoder_decoder
    from kerasrnn_pipelines.tasks import g2p
    from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig

    if run is None:
        config = G2PConfig(**(G2PConfig.QUICK if quick else {}))
    else:
        run = pathlib.Path(run)
        arguments = json.loads((run / "metrics.json").read_text())["args"]
        fields = {"stress", "limit", "seed", "beam_width", "length_penalty"}
        config = G2PConfig(**{key: arguments[key] for key in fields})
    splits = g2p.load_words(stress=config.stress, limit=config.limit, seed=config.seed)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    if run is None:
        model = encoder_decoder.build_model(config, letters, phonemes)
        name, saved_model = "default g2p, untrained", None
    else:
        model = keras.saving.load_model(run / "model.keras")
        name, saved_model = run.name, run / "saved_model"
    return name, model, letters, phonemes, config, splits["train"], saved_model


def export_variants(directory, model, letters, phonemes, config, train_words, quick, labels=None):
    """The LiteRT files compared: `{label: directory}`, each holding
    `model.tflite` and `vocabulary.json`; only those of `labels` when given."""
    from kerasrnn import seq2seq
    from kerasrnn_pipelines.tasks import g2p

    longest = max(len(p) for _, prons in train_words for p in prons)
    max_length = longest + 4
    lengths = {
        "max_source_length": max(len(word) for word, _ in train_words),
        "max_target_length": max_length,
    }
    # A bucket is one more signature to convert: --quick exports one.
    buckets = () if quick else g2p.litert_buckets(train_words, max_length)
    variants = {"float32": {}}
    if not quick:
        variants.update(
            {
                "dynamic_int8": {"quantize": "dynamic_int8"},
                "float16": {"quantize": "float16"},
                "float32, no buckets": {"buckets": ()},
                "float32, beam 1": {"beam_width": 1},
            }
        )
    if labels is not None:
        variants = {label: variants[label] for label in labels}
    exported = {}
    for label, change in variants.items():
        options = {
            "beam_width": config.beam_width,
            "length_penalty": config.length_penalty,
            "buckets": buckets,
            # As the runs export (`kerasrnn_pipelines.encoder_decoder`).
            "alignments": False,
            **lengths,
            **change,
        }
        path = pathlib.Path(directory) / label.replace(", ", "_").replace(" ", "_")
        path.mkdir()
        seq2seq.export_litert(model, path / "model.tflite", letters, phonemes, **options)
        exported[label] = path
    return exported


class InterpreterSignatures:
    """The example client's `Signatures` (`target_ids_of(calls)`)
    through `ai_edge_litert`'s `Interpreter`, which gives XNNPACK no weight
    cache: each operator packs its own copy of its weights."""

    def __init__(self, path, **options):
        self.interpreter = Interpreter(str(path), **options)

    def target_ids_of(self, calls):
        return [
            self.interpreter.get_signature_runner(signature)(source_ids=ids)["target_ids"]
            for signature, ids in calls
        ]


def litert_contenders(exported, client, quick):
    """`({name: pronounce(words)}, {name: file bytes})` for each LiteRT file
    and runtime setting: the example client's `Signatures` (`CompiledModel`
    with XNNPACK's weight cache) on 1 thread and on 2 (which splits a
    bucket's call of at least 16 rows per thread between two interpreters on
    two threads), and the `Interpreter` with and without XNNPACK."""
    settings = {"1 thread": lambda path: client.Signatures(path, num_threads=1)}
    if not quick:
        settings["2 threads"] = lambda path: client.Signatures(path, num_threads=2)
        settings["Interpreter, 1 thread"] = lambda path: InterpreterSignatures(path, num_threads=1)
        settings["Interpreter, 1 thread, no XNNPACK"] = lambda path: InterpreterSignatures(
            path,
            num_threads=1,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
    contenders, sizes = {}, {}
    for label, directory in exported.items():
        vocabulary = json.loads((directory / "vocabulary.json").read_text())
        for setting, opened in settings.items():
            if label != "float32" and setting != "1 thread":
                continue
            signatures = opened(directory / "model.tflite")
            name = f"LiteRT {label}, {setting}"
            contenders[name] = lambda words, signatures=signatures, vocabulary=vocabulary: (
                client.pronounce(signatures, vocabulary, words)
            )
            sizes[name] = (directory / "model.tflite").stat().st_size
    return contenders, sizes


def operator_rows(name, exported):
    """One row per (LiteRT file, signature): its interpreter operators in
    all, the five most frequent kinds (`kerasrnn.count_litert_operators`),
    and the operators of its `WHILE` loop, run once per decoded token
    (`kerasrnn.count_litert_loop_operators`). The counts are read before
    any time: each operator run costs a fixed time besides its arithmetic."""
    rows = []
    for label, directory in exported.items():
        path = directory / "model.tflite"
        loops = kerasrnn.count_litert_loop_operators(path)
        for signature, kinds in kerasrnn.count_litert_operators(path).items():
            rows.append(
                {
                    "model": name,
                    "file": label,
                    "signature": signature,
                    "operators": sum(kinds.values()),
                    "per_loop_step": sum(loops[signature].values()),
                    "most_frequent": ", ".join(
                        f"{kind} {count}" for kind, count in list(kinds.items())[:5]
                    ),
                }
            )
    return rows


def g2p_rows(run, quick, calls):
    """One row per (contender, batch): words/s, p50/p99 ms per call, ms per
    word, and the file size for LiteRT; the operators of each file's
    signatures (`operator_rows`); the serving goals, each measured on its
    own after the table (`goal_rows`); and `notes`, the rows left out and why.

    Args:
        run: A g2p run directory, or None for the untrained default model.
        quick: The `--quick` architecture, batches 1 and 32, fewer variants.
        calls: Timed calls per batch size and contender.
    """
    from kerasrnn import seq2seq
    from kerasrnn_pipelines.data import cmudict

    name, model, letters, phonemes, config, train_words, saved_model = g2p_model(run, quick)
    words = [word for word, _ in cmudict.load_split("test")]
    client = example_client()
    notes = []
    with tempfile.TemporaryDirectory() as directory:
        exported = export_variants(directory, model, letters, phonemes, config, train_words, quick)
        operators = operator_rows(name, exported)
        contenders, sizes = litert_contenders(exported, client, quick)
        if saved_model is None:
            saved_model = pathlib.Path(directory) / "saved_model"
            seq2seq.export_serving(
                model,
                saved_model,
                letters,
                phonemes,
                beam_width=config.beam_width,
                length_penalty=config.length_penalty,
                max_source_length=max(len(word) for word, _ in train_words) * 2,
                max_target_length=max(len(p) for _, prons in train_words for p in prons) + 4,
            )
        serve = tf.saved_model.load(str(saved_model)).signatures["serving_default"]
        contenders["SavedModel (XLA)"] = lambda words: serve(texts=tf.constant(words))[
            "outputs"
        ].numpy()
        predict, reason = g2p_en_predict()
        if predict is None:
            notes.append(f"g2p-en row left out: {reason}")
        else:
            contenders["g2p-en 2.1.0 G2p.predict"] = lambda words: [predict(w) for w in words]
        rows = []
        batches = BATCHES[:2] if quick else BATCHES
        for batch in batches:
            times = per_call_seconds(contenders, batches_of(words, batch, calls), calls)
            for contender, seconds in times.items():
                seconds = np.array(seconds)
                rows.append(
                    {
                        "model": name,
                        "contender": contender,
                        "batch": batch,
                        "words_per_s": batch * len(seconds) / seconds.sum(),
                        "p50_ms": 1e3 * np.percentile(seconds, 50),
                        "p99_ms": 1e3 * np.percentile(seconds, 99),
                        "ms_per_word": 1e3 * seconds.sum() / (batch * len(seconds)),
                        "file_mb": sizes[contender] / 1e6 if contender in sizes else "",
                    }
                )
        goals = goal_rows(contenders, words, calls, batches)
    return rows, operators, goals, notes


#: The serving goals: (what, contender, batch, the measure, the goal).
#: "vs g2p-en" is g2p-en's ms per word over the contender's at that batch,
#: the two taking turns alone; "words/s" is the contender's alone. The
#: batch-256 goal is on two cores: the client on two threads.
GOALS = (
    ("batch 1, float32 file vs g2p-en", "LiteRT float32, 1 thread", 1, "vs g2p-en", 2.5),
    ("batch 1, dynamic_int8 file vs g2p-en", "LiteRT dynamic_int8, 1 thread", 1, "vs g2p-en", 5.0),
    (
        "batch 256, float32 file on two threads, words/s",
        "LiteRT float32, 2 threads",
        256,
        "words/s",
        10_000,
    ),
)

G2P_EN = "g2p-en 2.1.0 G2p.predict"


def time_share_rows(quick, repeats):
    """Where a call's time goes: the default g2p architecture (untrained)
    against the same graph at 8 units (`DISPATCH_UNITS`), both exported as
    one signature of 8 letters and 12 phonemes. The two files hold the same
    operators, so the small one's time is about what running those operators
    costs the interpreter, and the rest of the default file's time is its
    arithmetic. Ids in, ids out, through the example client's `Signatures`,
    the two interleaved in one process."""
    from kerasrnn import seq2seq
    from kerasrnn_pipelines import encoder_decoder
    from kerasrnn_pipelines.tasks import g2p
    from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig

    base = G2PConfig(**(G2PConfig.QUICK if quick else {}))
    splits = g2p.load_words(stress=base.stress, limit=base.limit, seed=base.seed)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    sizes = {
        f"{base.units} units (the default)": base,
        f"{DISPATCH_UNITS} units": dataclasses.replace(
            base, units=DISPATCH_UNITS, embedding=DISPATCH_UNITS
        ),
    }
    client = example_client()
    runners, operators = {}, {}
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for label, config in sizes.items():
            path = pathlib.Path(directory) / label.split()[0]
            path.mkdir()
            keras.utils.set_random_seed(0)
            model = encoder_decoder.build_model(config, letters, phonemes)
            seq2seq.export_litert(
                model, path / "model.tflite", letters, phonemes,
                beam_width=config.beam_width, max_source_length=8, max_target_length=12,
                alignments=False,
            )
            counted = kerasrnn.count_litert_operators(path / "model.tflite")["serving_default"]
            operators[label] = sum(counted.values())
            runners[label] = client.Signatures(path / "model.tflite", num_threads=1)
        rng = np.random.default_rng(0)
        for batch in (1, 256):
            ids = np.zeros((batch, 8), np.int32)
            ids[:, :6] = rng.integers(4, len(letters.id_to_token()), (batch, 6))
            contenders = {
                label: lambda runner=runner, ids=ids: runner.target_ids("serving_default", ids)
                for label, runner in runners.items()
            }
            medians = interleaved_medians(contenders, repeats)
            default = next(iter(medians.values()))
            for label, median in medians.items():
                rows.append(
                    {
                        "model": label,
                        "operators": operators[label],
                        "batch": batch,
                        "us_per_call": 1e6 * median,
                        "share_of_the_default": median / default,
                    }
                )
    return rows


def goal_rows(contenders, words, calls, batches):
    """The serving goals, each measured on its own: a batch-1 goal's
    contender and g2p-en alone take turns (`per_call_seconds`) on the same
    words, and a words/s goal's contender runs alone, so that no other
    contender's turn evicts its weights from the processor's caches. One
    row per goal whose contenders exist and whose batch is in `batches`:
    its measure, the goal and their ratio."""
    goals = []
    for what, contender, batch, measure, goal in GOALS:
        pair = [contender] + ([G2P_EN] if measure == "vs g2p-en" else [])
        if batch not in batches or not all(name in contenders for name in pair):
            continue
        chunks = batches_of(words, batch, calls)
        seconds = per_call_seconds({name: contenders[name] for name in pair}, chunks, calls)
        per_word = {name: np.sum(times) / (batch * len(times)) for name, times in seconds.items()}
        if measure == "words/s":
            value = 1 / per_word[contender]
        else:
            value = per_word[G2P_EN] / per_word[contender]
        goals.append(
            {
                "goal": what,
                "ms_per_word": 1e3 * per_word[contender],
                "g2p_en_ms_per_word": 1e3 * per_word[G2P_EN] if G2P_EN in per_word else "",
                "measured": value,
                "wanted": goal,
                "measured_over_wanted": value / goal,
            }
        )
    return goals


def batches_of(words, batch, calls):
    """Up to `calls` consecutive, full batches of `batch` words (at least one)."""
    chunks = [words[i : i + batch] for i in range(0, batch * calls, batch)]
    return [chunk for chunk in chunks if len(chunk) == batch] or [words[:batch]]


def per_call_seconds(contenders, chunks, calls, burst=BURST):
    """Seconds of each call. The contenders take turns, `burst` calls each
    on consecutive chunks, so that each runs as a client calling it again
    and again would, without the others' memory traffic between every two
    of its calls; every chunk is answered once by each before timing."""
    for run in contenders.values():
        for chunk in chunks:
            run(chunk)
    seconds = {name: [] for name in contenders}
    for start in range(0, calls, burst):
        for name, run in contenders.items():
            for index in range(start, min(start + burst, calls)):
                chunk = chunks[index % len(chunks)]
                began = time.perf_counter()
                run(chunk)
                seconds[name].append(time.perf_counter() - began)
    return seconds


def cell_rows(quick, repeats):
    """One row per kerasrnn cell: µs per batch-1 call of its bidirectional
    model through LiteRT (unrolled), `model(x)` and its SavedModel."""
    cells = {
        "ElmanCell": kerasrnn.ElmanCell,
        "LSTMCell": kerasrnn.LSTMCell,
        "GRUCell": kerasrnn.GRUCell,
        "LeakyCell": kerasrnn.LeakyCell,
    }
    if quick:
        cells = {"LSTMCell": kerasrnn.LSTMCell}
    steps, features, units = 12, 8, 16
    x = np.random.default_rng(0).normal(size=(1, steps, features)).astype(np.float32)
    tensor = tf.constant(x)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for name, cell in cells.items():
            model = keras.Sequential(
                [
                    keras.Input((steps, features), name="x"),
                    keras.layers.Bidirectional(keras.layers.RNN(cell(units))),
                    keras.layers.Dense(1, name="y"),
                ]
            )
            path = pathlib.Path(directory) / f"{name}.tflite"
            kerasrnn.export_litert(model, path, sequence_length=steps)
            runner = Interpreter(str(path), num_threads=1).get_signature_runner()
            saved = pathlib.Path(directory) / name
            model.export(str(saved), verbose=False)
            # The loaded object owns the variables `serve` reads: kept alive.
            loaded = tf.saved_model.load(str(saved))
            # A burst of calls per turn, as for G2P; the median burst / BURST.
            medians = interleaved_medians(
                {
                    "litert": lambda runner=runner: [runner(x=x) for _ in range(BURST)],
                    "keras": lambda model=model: [model(tensor).numpy() for _ in range(BURST)],
                    "saved_model": lambda loaded=loaded: [
                        loaded.serve(tensor).numpy() for _ in range(BURST)
                    ],
                },
                repeats,
                warmup=1,
            )
            medians = {key: value / BURST for key, value in medians.items()}
            rows.append(
                {
                    "cell": name,
                    "litert_us": 1e6 * medians["litert"],
                    "keras_call_us": 1e6 * medians["keras"],
                    "saved_model_us": 1e6 * medians["saved_model"],
                    "keras_over_litert": medians["keras"] / medians["litert"],
                    "saved_model_over_litert": medians["saved_model"] / medians["litert"],
                }
            )
    return rows


def fused_rows(quick, repeats):
    """One row per cell and sequence length: µs per batch-1 call of a model
    exported with LiteRT's fused sequence operator (`LSTMCell`:
    UNIDIRECTIONAL_SEQUENCE_LSTM, `ElmanCell`: UNIDIRECTIONAL_SEQUENCE_RNN)
    and with the unrolled loop."""
    features, units = 8, 32
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for cell, steps in itertools.product(
            (kerasrnn.LSTMCell, kerasrnn.ElmanCell), (10,) if quick else (10, 100, 200)
        ):
            model = keras.Sequential(
                [
                    keras.Input((steps, features), batch_size=1, name="x"),
                    keras.layers.RNN(cell(units)),
                    keras.layers.Dense(1, name="y"),
                ]
            )
            x = np.random.default_rng(steps).normal(size=(1, steps, features)).astype(np.float32)
            runners, operators = {}, {}
            for variant, fused in (("fused", True), ("unrolled", False)):
                path = pathlib.Path(directory) / f"{cell.__name__}_{variant}_{steps}.tflite"
                kerasrnn.export_litert(model, path, sequence_length=steps, fused=fused)
                counted = kerasrnn.count_litert_operators(path)["serving_default"]
                operators[variant] = sum(counted.values())
                runner = Interpreter(str(path), num_threads=1).get_signature_runner()
                runners[variant] = lambda runner=runner, x=x: [runner(x=x) for _ in range(BURST)]
            medians = interleaved_medians(runners, repeats, warmup=1)
            rows.append(
                {
                    "cell": cell.__name__,
                    "steps": steps,
                    "fused_operators": operators["fused"],
                    "unrolled_operators": operators["unrolled"],
                    "fused_us": 1e6 * medians["fused"] / BURST,
                    "unrolled_us": 1e6 * medians["unrolled"] / BURST,
                    "unrolled_over_fused": medians["unrolled"] / medians["fused"],
                }
            )
    return rows


#: Rounds of `rewrite_rows`: each measures both files anew, interleaved.
ROUNDS = 4

#: The rewrites that buy time, each with the quantizations its file is
#: measured in (`projected_lookup` leaves quantized files alone).
TIMED_REWRITES = {
    "projected_lookup": (None,),
    "static_loops": (None, "dynamic_int8"),
    "identity_slices": (None, "dynamic_int8"),
}


def rewrite_rows(quick, repeats):
    """One row per (rewrite, quantization, round): µs per batch-1 call of
    the default g2p file with every rewrite and without that one, and the
    ratio (without over with: above 1, the rewrite saves time)."""
    from kerasrnn import seq2seq
    from kerasrnn.export.rewrites import rewrites_off
    from kerasrnn_pipelines import encoder_decoder
    from kerasrnn_pipelines.tasks import g2p
    from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig

    config = G2PConfig(**(G2PConfig.QUICK if quick else {}))
    splits = g2p.load_words(stress=config.stress, limit=config.limit, seed=config.seed)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    keras.utils.set_random_seed(0)
    model = encoder_decoder.build_model(config, letters, phonemes)
    client = example_client()
    rng = np.random.default_rng(0)
    ids = np.zeros((1, 8), np.int32)
    ids[:, :6] = rng.integers(4, len(letters.id_to_token()), (1, 6))
    rows = []
    with tempfile.TemporaryDirectory() as directory:

        def exported(label, quantize, off):
            path = pathlib.Path(directory) / f"{label}.tflite"
            with rewrites_off(*off):
                seq2seq.export_litert(
                    model, path, letters, phonemes, beam_width=config.beam_width,
                    max_source_length=8, max_target_length=12, alignments=False,
                    quantize=quantize,
                )
            return client.Signatures(path, num_threads=1)

        for quantize in (None, "dynamic_int8"):
            every = exported(f"every_{quantize}", quantize, ())
            for name, quantizations in TIMED_REWRITES.items():
                if quantize not in quantizations:
                    continue
                without = exported(f"without_{name}_{quantize}", quantize, (name,))
                contenders = {
                    "with": lambda runner=every: runner.target_ids("serving_default", ids),
                    "without": lambda runner=without: runner.target_ids("serving_default", ids),
                }
                for round_ in range(ROUNDS):
                    # Every other round the file without the rewrite goes first.
                    order = list(contenders)[:: -1 if round_ % 2 else 1]
                    medians = interleaved_medians({key: contenders[key] for key in order}, repeats)
                    rows.append(
                        {
                            "rewrite": name,
                            "file": quantize or "float32",
                            "round": round_ + 1,
                            "with_us": 1e6 * medians["with"],
                            "without_us": 1e6 * medians["without"],
                            "without_over_with": medians["without"] / medians["with"],
                        }
                    )
    return rows


def print_rewrite_table(quick, repeats):
    """Measure and print the rewrites' table."""
    print_table(
        "LiteRT: each rewrite that buys time, the default g2p file (untrained, batch 1) with "
        "every rewrite and without that one, interleaved call by call, µs per call",
        rewrite_rows(quick, repeats),
        ["rewrite", "file", "round", "with_us", "without_us", "without_over_with"],
    )


def print_tables(run, quick, repeats):
    """Measure and print the G2P and cell tables."""
    rows, operators, goals, notes = g2p_rows(run, quick=quick, calls=5 if quick else 200)
    print_table(
        "LiteRT: G2P files, interpreter operators per signature",
        operators,
        ["model", "file", "signature", "operators", "per_loop_step", "most_frequent"],
    )
    print_table(
        "LiteRT: G2P end to end, text in and out, one process (words/s, latency per "
        "call, file size)",
        rows,
        [
            "model",
            "contender",
            "batch",
            "words_per_s",
            "p50_ms",
            "p99_ms",
            "ms_per_word",
            "file_mb",
        ],
    )
    for note in notes:
        print(note)
    print_table(
        "LiteRT: where a call's time goes, the default g2p model against the same operators "
        f"at {DISPATCH_UNITS} units (ids in and out, one signature of 8 letters; the small "
        "file's share is about the cost of running the operators, the rest is arithmetic)",
        time_share_rows(quick, 20 if quick else 200),
        ["model", "operators", "batch", "us_per_call", "share_of_the_default"],
    )
    print_table(
        "LiteRT: the serving goals, each measured on its own: at batch 1 the file and g2p-en "
        "alone take turns (measured: g2p-en's ms per word over the file's), at 256 the file "
        "runs alone (words/s); a goal is met where measured_over_wanted >= 1",
        goals,
        [
            "goal",
            "ms_per_word",
            "g2p_en_ms_per_word",
            "measured",
            "wanted",
            "measured_over_wanted",
        ],
    )
    print_table(
        "LiteRT: cell models at batch 1, µs per call (ratio = the other's time / LiteRT's)",
        cell_rows(quick, repeats),
        [
            "cell",
            "litert_us",
            "keras_call_us",
            "saved_model_us",
            "keras_over_litert",
            "saved_model_over_litert",
        ],
    )
    print_table(
        "LiteRT: a recurrent layer (32 units) at batch 1, fused sequence operator against the "
        "unrolled loop, µs per call",
        fused_rows(quick, repeats),
        [
            "cell",
            "steps",
            "fused_operators",
            "unrolled_operators",
            "fused_us",
            "unrolled_us",
            "unrolled_over_fused",
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.litert", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--litert-run", default=None, metavar="DIR")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--rewrites", action="store_true")
    arguments = parser.parse_args()
    if arguments.rewrites:
        print_rewrite_table(arguments.quick, arguments.repeats or (20 if arguments.quick else 300))
        raise SystemExit(0)
    print_tables(
        arguments.litert_run,
        arguments.quick,
        arguments.repeats or (2 if arguments.quick else 15),
    )
