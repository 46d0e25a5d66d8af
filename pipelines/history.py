"""The epoch log: the raw rows training appends, `history.csv` and the
learning curves drawn from it."""

import csv
import os
import pathlib

from kerasrnn_pipelines import durable


def keep_history_before(path: str | os.PathLike[str], epoch: int) -> None:
    """Keep in a raw epoch log only the complete rows of epochs < `epoch`.

    Rows of later epochs (trained after the restored backup) are trained
    again; a row cut short by a kill has no line end.
    """
    path = pathlib.Path(path)
    if not path.exists():
        return
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.endswith("\n")]
    kept = lines[:1] + [
        line
        for line in lines[1:]
        if int(next(csv.reader([line]))[0]) < epoch
    ]
    scratch = durable.scratch_name(path)
    with open(scratch, "w", newline="") as handle:
        handle.writelines(kept)
    durable.move_into_place(scratch, path)


def read_history(path: str | os.PathLike[str]) -> dict[str, list[float]]:
    """Read a raw epoch log into a dict name -> list, epochs from 1.

    A resume may repeat an epoch: its last row wins. `CSVLogger` writes
    `NA` for a quantity an epoch did not log; columns with nothing else
    are dropped.
    """
    rows = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            rows[int(row["epoch"])] = row
    epochs = sorted(rows)
    history: dict[str, list[float]] = {"epoch": [epoch + 1 for epoch in epochs]}
    names = sorted({name for row in rows.values() for name in row} - {"epoch"})
    for name in names:
        values = [rows[epoch].get(name) or "NA" for epoch in epochs]
        if any(value != "NA" for value in values):
            history[name] = [
                float("nan") if value == "NA" else float(value)
                for value in values
            ]
    return history


def write_history(path: str | os.PathLike[str], history: dict[str, list[float]]) -> None:
    """`history.csv`: column `epoch` then one column per logged quantity."""
    names = list(history)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for values in zip(*(history[name] for name in names)):
            writer.writerow(values)


def plot_learning_curves(
    history: dict[str, list[float]], path: str | os.PathLike[str]
) -> None:
    """One panel per quantity (training and `val_` together) vs epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    names = [
        name
        for name in history
        if name != "epoch"
        and not name.startswith("val_")
        and name != "learning_rate"
    ]
    if not names or not history["epoch"]:
        return
    figure, axes = plt.subplots(
        1, len(names), figsize=(4 * len(names), 3), squeeze=False
    )
    for axis, name in zip(axes[0], names):
        axis.plot(history["epoch"], history[name], marker="o", label="train")
        if f"val_{name}" in history:
            axis.plot(
                history["epoch"],
                history[f"val_{name}"],
                marker="o",
                label="validation",
            )
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_xlabel("epoch")
        axis.set_title(name)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def finish_history(
    raw: str | os.PathLike[str], write_dir: pathlib.Path | None = None
) -> dict[str, list[float]]:
    """The history of the raw epoch log `raw` as a dict name -> list; with
    `write_dir`, also written there as `history.csv` and
    `learning_curves.png`."""
    raw = pathlib.Path(raw)
    history = read_history(raw) if raw.exists() else {"epoch": []}
    if write_dir is not None:
        write_history(write_dir / "history.csv", history)
        plot_learning_curves(history, write_dir / "learning_curves.png")
    return history
