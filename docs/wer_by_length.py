"""The Results page's plot of G2P word error rate by word length, from g2p runs.

    python docs/wer_by_length.py "without attention=RUN_A" "Luong attention=RUN_B"

reads `test_wer_by_length` from each run directory's `metrics.json` (see
`kerasrnn_pipelines.tasks.g2p`) and writes `docs/wer_by_length.png`: one group
of bars per length bucket, one bar per run.
"""

import json
import pathlib
import sys

OUTPUT = pathlib.Path(__file__).with_name("wer_by_length.png")


def read_runs(arguments):
    """`[(label, {bucket: wer})]` from `LABEL=RUN_DIRECTORY` arguments."""
    runs = []
    for argument in arguments:
        label, separator, directory = argument.partition("=")
        if not separator or not label or not directory:
            raise SystemExit(f"expected LABEL=RUN_DIRECTORY; received {argument!r}")
        metrics = json.loads((pathlib.Path(directory) / "metrics.json").read_text())
        runs.append((label, metrics["test_wer_by_length"]))
    return runs


def draw(runs):
    """A bar chart of WER (%) per length bucket, one bar per run.

    Args:
        runs: `[(label, {bucket: wer})]`, wer a fraction; the buckets of the
            first run set the order.

    Returns:
        The `matplotlib.figure.Figure`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = list(runs[0][1])
    width = 0.8 / len(runs)
    figure, axis = plt.subplots(figsize=(6.4, 3.6))
    for index, (label, by_length) in enumerate(runs):
        axis.bar(
            [b + (index - (len(runs) - 1) / 2) * width for b in range(len(buckets))],
            [100 * by_length[bucket] for bucket in buckets],
            width,
            label=label,
        )
    axis.set_xticks(range(len(buckets)), [f"{b} letters" for b in buckets])
    axis.set_ylabel("test WER (%)")
    axis.set_title("G2P word error rate by word length")
    axis.legend()
    figure.tight_layout()
    return figure


if __name__ == "__main__":
    draw(read_runs(sys.argv[1:])).savefig(OUTPUT, dpi=90)
    print(OUTPUT)
