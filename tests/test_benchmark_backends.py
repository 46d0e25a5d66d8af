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
        # Each ratio is the quotient of the times printed beside it, to the
        # two decimals shown.
        assert jax_ratio == pytest.approx(keras_jax / ours_jax, rel=0.02, abs=0.01)
        assert tf_ratio == pytest.approx(keras_tf / ours_tf, rel=0.02, abs=0.01)
        assert across == pytest.approx(ours_tf / ours_jax, rel=0.02, abs=0.01)
