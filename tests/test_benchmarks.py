"""The benchmark program runs end to end on tiny shapes (no timing asserted)."""

import subprocess
import sys


def test_quick_benchmark_prints_every_table():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "kerasrnn cell vs Keras built-in" in out
    for cell in ("elman", "lstm", "gru", "leaky"):
        for mode in ("train/default", "infer/default", "train/jit", "infer/jit"):
            assert f"| {cell} | {mode} |" in out
    assert "matmul ceiling" in out
    assert "| 1000 |" in out
