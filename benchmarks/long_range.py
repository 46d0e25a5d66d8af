"""Which cells learn long-range dependencies: the adding problem at lags 10 … 200.

The adding problem (Hochreiter & Schmidhuber, 1997): every step carries a
value u_t ~ U[0, 1] and a marker m_t ∈ {0, 1}; exactly two steps are
marked, one in the first half of the sequence and one in the second, and
the target is the sum of the two marked values. The first marked value must
be held for at least T/2 steps, so the sequence length T is the lag. A model
that ignores the inputs and predicts 1 scores MSE 1/6 ≈ 0.167; a cell
*solves* a lag when its test MSE falls below 0.01 (6 % of that). Training
stops early once the validation MSE is under 0.005.

Every cell (Elman, leaky with a fixed and with a learned rate, LSTM, GRU;
all of the same width) reads the sequence with `keras.layers.RNN` and a
`Dense(1)` head, and is trained with Adam and gradient clipping
(`eq:rnn-clip`) on fresh random batches until it solves the lag or its
step budget runs out. The run prints one table (test MSE and
the step at which the lag was solved) and writes, to `--output`,
`results.json`, `table.md` and `long_range.png`.

    python -m benchmarks.long_range            # the full run, CPU, minutes
    python -m benchmarks.long_range --quick    # seconds: a smoke run
"""

import argparse
import json
import pathlib
import time

import keras
import numpy as np

import kerasrnn

SOLVED_MSE = 0.01
# Training stops at half the solved MSE on validation data, so that a model
# that stops is solved on the test set too, not just on the edge.
STOP_MSE = SOLVED_MSE / 2
BASELINE_MSE = 1.0 / 6.0  # Var(u_a + u_b) for two independent U[0, 1] values

# A fixed small leak slows the decay of the gradient but also of every
# input's effect; a learned per-unit leak lets each unit pick its own time
# scale, so both are measured.
CELLS = {
    "elman": lambda units: kerasrnn.ElmanCell(units),
    "leaky_fixed": lambda units: kerasrnn.LeakyCell(units, alpha=0.1),
    "leaky": lambda units: kerasrnn.LeakyCell(
        units, alpha=0.5, learn_alpha=True
    ),
    "lstm": lambda units: kerasrnn.LSTMCell(units),
    "gru": lambda units: kerasrnn.GRUCell(units),
}
CELL_LABELS = {
    "elman": "Elman",
    "leaky_fixed": "leaky (α = 0.1)",
    "leaky": "leaky (learned α)",
    "lstm": "LSTM",
    "gru": "GRU",
}


def adding_problem(count, length, rng):
    """`count` adding-problem sequences of `length` steps.

    Args:
        count: Number of sequences.
        length: T ≥ 2, the number of steps.
        rng: `numpy.random.Generator`.

    Returns:
        `(x, y)`: x (count, T, 2) float32 holding (u_t, m_t) per step, y
        (count, 1) float32, the sum of the two marked values.
    """
    if length < 2:
        raise ValueError(
            f"Argument `length` must be at least 2 (one marker per half). "
            f"Received: length={length}"
        )
    values = rng.uniform(size=(count, length))
    markers = np.zeros((count, length))
    half = length // 2
    rows = np.arange(count)
    first = rng.integers(0, half, size=count)
    second = rng.integers(half, length, size=count)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = np.stack([values, markers], axis=-1).astype(np.float32)
    y = (values[rows, first] + values[rows, second])[:, None]
    return x, y.astype(np.float32)


def build_model(cell_name, length, units, learning_rate, jit_compile):
    """`RNN(cell) → Dense(1)`, compiled with Adam, clipnorm 1 and MSE.

    XLA (`jit_compile`) makes each training step several times faster on
    CPU once compiled; the compile costs seconds, worth it only for the
    full run.
    """
    model = keras.Sequential(
        [
            keras.Input((length, 2)),
            keras.layers.RNN(CELLS[cell_name](units)),
            keras.layers.Dense(1),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate, clipnorm=1.0),
        loss="mse",
        jit_compile=jit_compile,
    )
    return model


def train_one(cell_name, length, config, seed):
    """Train one cell on one lag until the validation MSE is under
    `STOP_MSE` or the step budget is spent.

    Returns:
        Dict with the test MSE, whether it is solved (under `SOLVED_MSE`),
        the step training stopped early at (or None), the steps taken, the
        validation curve and the wall time.
    """
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    model = build_model(cell_name, length, config.units,
                        config.learning_rate, jit_compile=not config.quick)
    x_val, y_val = adding_problem(config.validation_size, length, rng)
    x_test, y_test = adding_problem(config.test_size, length, rng)
    curve, stopped_at, steps = [], None, 0
    start = time.perf_counter()
    while steps < config.max_steps:
        chunk = min(config.eval_every, config.max_steps - steps)
        x, y = adding_problem(chunk * config.batch_size, length, rng)
        model.fit(x, y, batch_size=config.batch_size, epochs=1, verbose=0,
                  shuffle=False)
        steps += chunk
        val_mse = float(model.evaluate(x_val, y_val, verbose=0,
                                       batch_size=config.validation_size))
        curve.append((steps, val_mse))
        if val_mse < STOP_MSE:
            stopped_at = steps
            break
    test_mse = float(model.evaluate(x_test, y_test, verbose=0,
                                    batch_size=config.validation_size))
    return {
        "cell": cell_name,
        "lag": length,
        "test_mse": test_mse,
        "solved": test_mse < SOLVED_MSE,
        "stopped_at_step": stopped_at,
        "steps": steps,
        "validation_curve": curve,
        "seconds": time.perf_counter() - start,
    }


def format_table(results, lags, cells):
    """Markdown table: one row per cell, one column per lag.

    Each entry is the test MSE, ✓ when it is below `SOLVED_MSE`, and the
    number of training steps taken (fewer than the budget when the
    validation MSE reached `STOP_MSE`).
    """
    by_key = {(r["cell"], r["lag"]): r for r in results}
    header = "| cell | " + " | ".join(f"T = {lag}" for lag in lags) + " |"
    rule = "|---|" + "---|" * len(lags)
    rows = [header, rule]
    for cell in cells:
        entries = []
        for lag in lags:
            r = by_key[(cell, lag)]
            mark = "✓" if r["solved"] else "✗"
            entries.append(f"{r['test_mse']:.4f} {mark} ({r['steps']})")
        rows.append(f"| {CELL_LABELS[cell]} | " + " | ".join(entries) + " |")
    return "\n".join(rows)


def plot_results(results, lags, cells, path):
    """Test MSE against lag, one line per cell, with baseline and threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_key = {(r["cell"], r["lag"]): r for r in results}
    fig, ax = plt.subplots(figsize=(6, 4))
    for cell in cells:
        ax.semilogy(lags, [by_key[(cell, lag)]["test_mse"] for lag in lags],
                    marker="o", label=CELL_LABELS[cell])
    ax.axhline(BASELINE_MSE, color="grey", linestyle="--",
               label="predict 1 (MSE 1/6)")
    ax.axhline(SOLVED_MSE, color="black", linestyle=":",
               label=f"solved (MSE {SOLVED_MSE})")
    ax.set_xlabel("sequence length T (lag)")
    ax.set_ylabel("test MSE")
    ax.set_title("Adding problem")
    ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.long_range",
        description="The adding problem at several lags for each cell.",
    )
    parser.add_argument("--lags", type=int, nargs="+",
                        default=[10, 50, 100, 200])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS),
                        default=list(CELLS))
    parser.add_argument("--units", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-steps", type=int, default=3000,
                        help="training steps per cell and lag at most")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--validation-size", type=int, default=500)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=pathlib.Path,
                        default=pathlib.Path("runs/long_range"))
    parser.add_argument("--quick", action="store_true",
                        help="a few steps on short lags: checks the program "
                        "runs, measures nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.lags, args.units, args.batch_size = [6], 4, 16
        args.max_steps, args.eval_every = 4, 2
        args.validation_size, args.test_size = 32, 32
    for name in ("units", "batch_size", "max_steps", "eval_every",
                 "validation_size", "test_size"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if min(args.lags) < 2:
        parser.error("--lags must be at least 2")
    return args


def main(argv=None):
    args = parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    results = []
    for cell in args.cells:
        for index, lag in enumerate(args.lags):
            result = train_one(cell, lag, args, seed=args.seed + index)
            results.append(result)
            print(f"{CELL_LABELS[cell]:>16}  T={lag:<4} "
                  f"test MSE {result['test_mse']:.4f}  "
                  f"{'solved' if result['solved'] else 'not solved'}  "
                  f"{result['steps']} steps  {result['seconds']:.0f} s",
                  flush=True)
    table = format_table(results, args.lags, args.cells)
    print()
    print(table)
    settings = {k: (str(v) if isinstance(v, pathlib.Path) else v)
                for k, v in vars(args).items()}
    (args.output / "results.json").write_text(
        json.dumps({"settings": settings, "results": results}, indent=2)
    )
    (args.output / "table.md").write_text(table + "\n")
    plot_results(results, args.lags, args.cells,
                 args.output / "long_range.png")
    print(f"\nwrote {args.output}/results.json, table.md, long_range.png")
    return results


if __name__ == "__main__":
    main()
