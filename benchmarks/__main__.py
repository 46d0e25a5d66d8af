"""`python -m benchmarks [--quick]`: the performance table, measured in one run.

Rows:
  1. each kerasrnn cell in keras.layers.RNN vs the Keras built-in with the
     same math: train step and inference, default compile and jit_compile,
     ratio = built-in time / our time (> 1: ours is faster);
  2. achieved GFLOP/s against the ceiling of the step's own matmul shapes
     and the machine's large-GEMM peak, measured in the same run;
  3. time and peak memory of an LSTM gradient step as T grows;
  4. for each training task, examples/s of its input pipeline alone vs of
     its model's train step on batches held in memory, and the ratio;
  5. decoding throughput, greedy and beam search (B = 5), one compiled
     tf.function against a per-step Python loop;
  6. serving a G2P SavedModel without kerasrnn: words/s and p50/p99
     latency at batch 1, 32 and 256 (`--serving-model NAME=PATH` for
     trained runs' `saved_model/`; by default the untrained default model
     exported with and without XLA, and the speedup of XLA);
  7. LiteRT: G2P end to end (text in, text out) through the LiteRT export
     (`kerasrnn.seq2seq.export_litert`, read by examples/g2p_litert.py),
     its variants and interpreter settings, the SavedModel and g2p-en's
     neural model, at batch 1, 32 and 256 (`--litert-run DIR` for a trained
     g2p run; by default the untrained default model);
  8. LiteRT: each cell's bidirectional model at batch 1 through
     `kerasrnn.export_litert` against `model(x)` and its SavedModel.
`--quick` runs tiny shapes and the tasks' `--quick` configurations (a smoke
test; its numbers mean nothing).
"""

import argparse
import os
import platform

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from benchmarks import (  # noqa: E402
    cells,
    decoder_speed,
    input_pipeline,
    litert,
    scaling,
    serving,
)
from benchmarks.tables import print_table  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny shapes, for a smoke test")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per contender (default 15; 2 with --quick)")
    parser.add_argument("--serving-model", action="append", default=[], metavar="NAME=PATH",
                        type=lambda text: tuple(text.split("=", 1)) if "=" in text
                        else parser.error(f"--serving-model needs NAME=PATH; received {text!r}"),
                        help="a G2P SavedModel to serve (repeatable); default: the "
                        "default architecture, untrained")
    parser.add_argument("--litert-run", default=None, metavar="DIR",
                        help="a kerasrnn-train g2p run directory whose model the LiteRT "
                        "rows export and time; default: the default architecture, untrained")
    args = parser.parse_args(argv)
    shapes = cells.QUICK if args.quick else cells.FULL
    repeats = args.repeats or (2 if args.quick else 15)

    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} logical CPUs; TensorFlow {tf.__version__}; "
          f"devices: {[d.device_type for d in tf.config.list_physical_devices()]}")
    print(f"shapes: B={shapes.batch}, T={shapes.steps}, d={shapes.features}, n={shapes.units}; "
          f"median of {repeats} interleaved repeats")

    rows = []
    for name in cells.PAIRS:
        rows += cells.compare(name, shapes, repeats)
    print_table("kerasrnn cell vs Keras built-in (ratio = Keras time / ours)", rows,
                 ["cell", "mode", "ours_ms", "keras_ms", "ratio", "ours_gflops"])

    ceiling_rows = []
    for name, (_, _, gates) in cells.PAIRS.items():
        ceiling = cells.matmul_ceiling(shapes, gates, repeats)
        best = max(
            r["ours_gflops"]
            for r in rows
            if r["cell"] == name and r["mode"].startswith("train")
        )
        matmul = f"{shapes.batch}x{shapes.features + shapes.units}x{gates * shapes.units}"
        ceiling_rows.append({"cell": name,
                             "matmul": matmul,
                             "ceiling_gflops": ceiling, "best_train_gflops": best,
                             "fraction_of_ceiling": best / ceiling})
    size = 256 if args.quick else 2048
    peak = cells.large_matmul_ceiling(size, repeats)
    print_table(f"matmul ceiling (large GEMM {size}³: {peak:,.1f} GFLOP/s)", ceiling_rows,
                 ["cell", "matmul", "ceiling_gflops", "best_train_gflops", "fraction_of_ceiling"])

    lengths = (10, 100, 1000) if args.quick else (100, 1000, 10000)
    scaling_rows = scaling.scaling_rows(lengths, shapes.batch, shapes.features, shapes.units,
                                        repeats=2 if args.quick else 3)
    print_table("LSTM gradient step as T grows (per-step cost relative to the first T)",
                 scaling_rows, ["steps", "seconds", "growth_mib", "time_per_step_vs_first",
                                "mib_per_extra_step"])

    pipeline_rows = input_pipeline.input_pipeline_rows(
        quick=args.quick, repeats=repeats, model_batches=3 if args.quick else 20)
    print_table("input pipeline vs model train step, examples/s "
                 "(ratio = input / model; > 1: the model is the bottleneck)",
                 pipeline_rows, ["task", "cell", "units", "batch", "epoch_batches",
                                 "input_examples_per_s", "model_examples_per_s", "ratio"])

    decoding_rows = decoder_speed.decoding_rows(quick=args.quick, repeats=repeats)
    print_table("decoding throughput, sequences/s: one tf.function vs a per-step Python loop",
                 decoding_rows, ["method", "batch", "max_length", "graph_seq_per_s",
                                 "xla_seq_per_s", "python_loop_seq_per_s", "graph_speedup",
                                 "xla_speedup"])

    serving_rows = serving.serving_rows(args.serving_model, quick=args.quick,
                                        calls=5 if args.quick else 200)
    print_table("serving a G2P SavedModel without kerasrnn (words/s, latency per call; "
                 "speedup = the jit_compile=False export's time / this one's)",
                 serving_rows, ["model", "batch", "beam", "words_per_s", "p50_ms", "p99_ms",
                                "ms_per_word", "first_call_s", "speedup"])

    litert.print_tables(args.litert_run, args.quick, repeats)


if __name__ == "__main__":
    main()
