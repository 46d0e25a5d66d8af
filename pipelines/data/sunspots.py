"""The yearly sunspot numbers, 1700–2008, shipped by `statsmodels`.

`statsmodels.api.datasets.sunspots` (BSD-3-Clause; the data are the public
yearly means of the Royal Observatory of Belgium's SIDC, as in Wolf/Wolfer
tables) — read from the installed package, never downloaded.
"""

import numpy as np


def load_sunspots() -> tuple[np.ndarray, np.ndarray]:
    """The yearly series.

    Returns:
        `(years, values)`: int array `(309,)` from 1700 to 2008 and float32
        array `(309,)` of yearly mean sunspot numbers.

    Raises:
        ModuleNotFoundError: `statsmodels` is missing; says how to install it.
    """
    try:
        from statsmodels.datasets import sunspots
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "The sunspot series is read from the PyPI package `statsmodels`: "
            "pip install 'kerasrnn[data]' (or pip install statsmodels)."
        ) from error
    frame = sunspots.load_pandas().data
    return (
        frame["YEAR"].to_numpy().astype("int64"),
        frame["SUNACTIVITY"].to_numpy().astype("float32"),
    )


def one_step_windows(
    years: np.ndarray,
    values: np.ndarray,
    window: int,
    first_target: int,
    last_target: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs of `window` past values and the next value, for a year range.

    Every target year t in [first_target, last_target] gives the input
    `values[t-window .. t-1]` and the target `values[t]`; inputs may reach
    back before `first_target` (one-step-ahead forecasting with the true
    history, the classic protocol).

    Returns:
        `(inputs, targets, target_years)`: `(m, window, 1)`, `(m, 1)`,
        `(m,)`.

    Raises:
        ValueError: `window` is not a positive integer or leaves no history
            for `first_target`.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"Argument `window` must be a positive integer. Received: window={window!r}"
        )
    index = {int(year): position for position, year in enumerate(years)}
    start, stop = index[first_target], index[last_target]
    if start < window:
        raise ValueError(
            f"Argument `window` must leave {window} years of history before "
            f"{first_target}; the series starts in {int(years[0])}. "
            f"Received: window={window}"
        )
    targets = np.arange(start, stop + 1)
    inputs = np.stack([values[t - window : t] for t in targets])[..., None]
    return inputs, values[targets][:, None], years[targets]
