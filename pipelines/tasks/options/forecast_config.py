"""The options of `kerasrnn-train forecast` (see `kerasrnn_pipelines.tasks.forecast`)."""

import dataclasses
from typing import Any, ClassVar

from kerasrnn_pipelines.options import (
    ConfigError,
    LiteRTConfig,
    RecurrentStackConfig,
    option,
    positive_int,
)

#: The classic protocol's years: train on the first, test on the second.
TRAIN_YEARS = (1700, 1920)
TEST_YEARS = (1921, 1955)

#: The longest history that leaves a training target: 1700 + window <= 1920.
MAX_WINDOW = TRAIN_YEARS[1] - TRAIN_YEARS[0]


@dataclasses.dataclass(frozen=True)
class ForecastConfig(RecurrentStackConfig, LiteRTConfig):
    """Sunspot forecasting: the lecture notes' Elman 50 → 100 stack, dropout 0.2."""

    task: ClassVar[str] = "forecast"
    DESCRIPTION: ClassVar[str] = (
        "Forecast the yearly sunspot number one year ahead (train 1700-1920, "
        "test 1921-1955) and compare with persistence."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "statsmodels.datasets.sunspots: yearly sunspot numbers "
        "1700-2008 (package statsmodels, BSD-3-Clause)",
    }
    # Beats persistence at each seed tried, in seconds of training and
    # export; a smaller model (8 units for 2 epochs) did not.
    QUICK: ClassVar[dict[str, Any]] = {"units": 16, "epochs": 10, "window": 6}

    cell: str = "elman"
    units: int = 50
    layers: int = 2
    dropout: float = 0.2
    epochs: int = 60
    batch_size: int = 16
    window: int = option(12, positive_int, "years of history each prediction reads")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.window > MAX_WINDOW:
            raise ConfigError(
                f"argument --window: must be at most {MAX_WINDOW} (the training "
                f"years {TRAIN_YEARS[0]}-{TRAIN_YEARS[1]} must leave a year to "
                f"predict); received {self.window}"
            )
