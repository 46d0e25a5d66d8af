"""Side-by-side timing: warm-up, interleaved repeats, medians.

The machine is shared and noisy, so absolute times drift; only times taken
in the same run, alternating between the contenders, are compared.
"""

import statistics
import time


def interleaved_medians(contenders, repeats, warmup=2):
    """Median seconds per call for each contender, measured alternately.

    Args:
        contenders: dict name -> zero-argument callable that runs to
            completion (it must block until its result is ready).
        repeats: Timed calls per contender.
        warmup: Untimed calls per contender first (tracing, XLA compiles).

    Returns:
        dict name -> median seconds.
    """
    for run in contenders.values():
        for _ in range(warmup):
            run()
    samples = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, run in contenders.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}
