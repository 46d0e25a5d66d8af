"""`python -m benchmarks.cells --backends` runs end to end (no timing asserted)."""

import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_backend_table_has_a_row_per_cell_and_kind_with_consistent_ratios():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.cells", "--backends", "--quick",
         "--repeats", "1"],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^\| (lstm|gru) \| (train|infer) \| (.*) \|$", line)
        if match:
            rows[match.group(1), match.group(2)] = [
                float(value.replace(",", "")) for value in match.group(3).split(" | ")
            ]
    assert set(rows) == {(c, k) for c in ("lstm", "gru") for k in ("train", "infer")}
    for ours_jax, keras_jax, jax_ratio, ours_tf, keras_tf, tf_ratio, across in rows.values():
        assert min(ours_jax, keras_jax, ours_tf, keras_tf) > 0
        # Each ratio is the quotient of the times printed beside it. Every
        # printed number is rounded to two decimals, so the quotient of the
        # printed times only brackets the printed ratio.
        assert _within_rounding(jax_ratio, keras_jax, ours_jax)
        assert _within_rounding(tf_ratio, keras_tf, ours_tf)
        assert _within_rounding(across, ours_tf, ours_jax)


def _within_rounding(ratio, numerator, denominator, half_step=0.005):
    """Whether `ratio` can be numerator / denominator before each was rounded."""
    low = (numerator - half_step) / (denominator + half_step)
    high = (numerator + half_step) / max(denominator - half_step, 1e-12)
    return low - half_step <= ratio <= high + half_step


def test_rounding_bracket_accepts_rounded_quotients_and_rejects_others():
    # 0.1849 / 0.4300 = 0.43 printed beside 0.18 and 0.43 (0.18 / 0.43 = 0.419).
    assert _within_rounding(0.43, 0.18, 0.43)
    assert _within_rounding(2.00, 4.00, 2.00)
    assert not _within_rounding(0.50, 0.18, 0.43)
    assert not _within_rounding(1.90, 4.00, 2.00)
