"""The long-range benchmark: its adding-problem data checked by hand, its
table format, and a --quick run of the whole program."""

import json

import numpy as np
import pytest

from benchmarks import long_range


def test_adding_problem_marks_one_value_per_half_and_sums_them():
    rng = np.random.default_rng(0)
    x, y = long_range.adding_problem(200, 11, rng)
    assert x.shape == (200, 11, 2) and y.shape == (200, 1)
    values, markers = x[..., 0], x[..., 1]
    assert np.all((values >= 0) & (values < 1))
    assert np.all(markers.sum(axis=1) == 2)
    assert np.all(markers[:, :5].sum(axis=1) == 1)   # first half: 11 // 2
    assert np.all(markers[:, 5:].sum(axis=1) == 1)
    for row in range(200):
        marked = values[row, markers[row] == 1]
        assert y[row, 0] == pytest.approx(marked.sum(), abs=1e-6)


def test_predicting_one_scores_the_documented_baseline():
    _, y = long_range.adding_problem(200_000, 20, np.random.default_rng(1))
    assert np.mean((y - 1.0) ** 2) == pytest.approx(long_range.BASELINE_MSE,
                                                     abs=2e-3)


def test_adding_problem_rejects_a_sequence_too_short_for_two_halves():
    with pytest.raises(ValueError, match="length"):
        long_range.adding_problem(3, 1, np.random.default_rng(0))


def test_table_marks_solved_and_unsolved_lags():
    results = [
        {"cell": "lstm", "lag": 10, "test_mse": 0.0012, "solved": True,
         "stopped_at_step": 300, "steps": 300},
        {"cell": "lstm", "lag": 50, "test_mse": 0.1662, "solved": False,
         "stopped_at_step": None, "steps": 3000},
    ]
    table = long_range.format_table(results, [10, 50], ["lstm"])
    assert table.splitlines() == [
        "| cell | T = 10 | T = 50 |",
        "|---|---|---|",
        "| LSTM | 0.0012 ✓ (300) | 0.1662 ✗ (3000) |",
    ]


@pytest.mark.slow
def test_quick_run_trains_every_cell_and_writes_its_outputs(tmp_path, capsys):
    results = long_range.main(["--quick", "--output", str(tmp_path)])
    assert [r["cell"] for r in results] == [
        "elman", "leaky_fixed", "leaky", "lstm", "gru"
    ]
    assert all(np.isfinite(r["test_mse"]) and r["steps"] == 4 for r in results)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["settings"]["quick"] is True
    assert len(saved["results"]) == 5
    assert (tmp_path / "long_range.png").stat().st_size > 0
    table = (tmp_path / "table.md").read_text()
    assert "| GRU |" in table and table in capsys.readouterr().out
