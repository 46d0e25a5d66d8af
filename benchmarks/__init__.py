"""Side-by-side measurements of kerasrnn; run one with `python -m benchmarks.NAME`."""
