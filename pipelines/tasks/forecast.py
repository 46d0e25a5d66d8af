"""`forecast`: one-step-ahead regression on the yearly sunspot numbers.

The lecture notes' model (slides 27–28): Elman 50 with return sequences →
Dropout 0.2 → Elman 100 → Dropout 0.2 → Dense 1 (eq:rnn-hidden,
eq:rnn-output), here with any kerasrnn cell. The classic protocol: train on
the years 1700–1920, test on 1921–1955, each year predicted from the
`--window` years before it (true values, one step ahead). Values are
standardised with the training years' mean and deviation; errors are in
sunspot numbers.

Metrics: `test_rmse`, and from the same run `persistence_rmse` (predict
last year's value) — the bar the model must beat — and `train_rmse`;
`litert_test_rmse` and `litert_bytes` of `model.tflite`, which reads
exactly `--window` years (its time loop unrolled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import keras
import numpy as np

from kerasrnn_pipelines.data.batching import dense_batches
from kerasrnn_pipelines.data.sunspots import load_sunspots, one_step_windows
from kerasrnn_pipelines.litert_outputs import Predict, litert_metrics, write_litert
from kerasrnn_pipelines.recurrent import recurrent_layer
from kerasrnn_pipelines.tasks.options.forecast_config import TEST_YEARS, TRAIN_YEARS

if TYPE_CHECKING:
    import tensorflow as tf

    from kerasrnn_pipelines.tasks.options.forecast_config import ForecastConfig
    from kerasrnn_pipelines.training import RunContext

HEADLINE_METRIC = ("test_rmse", "persistence_rmse", "lower")


def build_model(config: ForecastConfig) -> keras.Model:
    """The lecture notes' stack: n, 2n, ... units, dropout after each.

    Layer k of `config.layers` has `config.units` · 2^(k-1) units (50 then
    100 by default), the last returns only its final state, and a Dense(1)
    reads it.

    Returns:
        A model mapping `(batch, window, 1)` to `(batch, 1)`.
    """
    inputs = keras.Input(shape=(None, 1), name="history")
    outputs = inputs
    for index in range(config.layers):
        last = index == config.layers - 1
        outputs = recurrent_layer(
            config,
            config.units * 2**index,
            return_sequences=not last,
            name=f"recurrent_{index + 1}",
        )(outputs)
        outputs = keras.layers.Dropout(
            config.dropout, seed=config.seed, name=f"dropout_{index + 1}"
        )(outputs)
    outputs = keras.layers.Dense(1, name="next_year")(outputs)
    return keras.Model(inputs, outputs, name="sunspot_forecaster")


def rmse(predictions: np.ndarray, targets: np.ndarray) -> float:
    """Root mean squared difference of `predictions` from `targets`, any
    shapes of as many elements."""
    return float(
        np.sqrt(np.mean((np.ravel(predictions) - np.ravel(targets)) ** 2))
    )


def load_windows(
    window: int,
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float, float]:
    """The protocol's windows and the training years' standardisation.

    Args:
        window: `--window`, the years of history each input holds.

    Returns:
        `(splits, mean, scale)`: `splits` maps `"train"` (targets
        1700 + window … 1920) and `"test"` (1921–1955) to `(x, y)`, x
        `(examples, window, 1)` and y `(examples, 1)` in sunspot numbers;
        `mean` and `scale` are those of the years 1700–1920.

    """
    years, values = load_sunspots()
    first_train = TRAIN_YEARS[0] + window
    train_x, train_y, _ = one_step_windows(
        years, values, window, first_train, TRAIN_YEARS[1]
    )
    test_x, test_y, _ = one_step_windows(
        years, values, window, *TEST_YEARS
    )
    train_values = values[(years >= TRAIN_YEARS[0]) & (years <= TRAIN_YEARS[1])]
    splits = {"train": (train_x, train_y), "test": (test_x, test_y)}
    return splits, float(train_values.mean()), float(train_values.std())


def standardise(array: np.ndarray, mean: float, scale: float) -> np.ndarray:
    """Sunspot numbers -> float32 in units of the training deviation."""
    return ((array - mean) / scale).astype("float32")


def train_batches(
    splits: dict[str, tuple[np.ndarray, np.ndarray]],
    mean: float,
    scale: float,
    *,
    batch_size: int,
    shuffle: bool,
    seed: int,
) -> tf.data.Dataset:
    """The training windows, standardised, in batches.

    Reshuffled every epoch (seeded by `seed`) when `shuffle` is set.
    """
    train_x, train_y = splits["train"]
    return dense_batches(
        standardise(train_x, mean, scale),
        standardise(train_y, mean, scale),
        batch_size,
        shuffle=shuffle,
        seed=seed,
    )


def compile_model(model: keras.Model, context: RunContext) -> None:
    """Mean squared error on standardised values, the shared optimizer."""
    context.compile(model, loss="mse")


def run(config: ForecastConfig, context: RunContext) -> dict[str, Any]:
    """Train on 1700–1920, report RMSE on 1921–1955 beside persistence."""
    splits, mean, scale = load_windows(config.window)
    train = train_batches(
        splits,
        mean,
        scale,
        batch_size=config.batch_size,
        shuffle=config.shuffle,
        seed=config.seed,
    )
    with context.scope():
        model = build_model(config)
        compile_model(model, context)
    context.fit(model, train)
    context.save(model)
    litert = write_litert(
        context, model, sequence_length=config.window, litert_quantize=config.litert_quantize
    )

    def forecast(
        inputs: np.ndarray, predict: Predict = lambda x: model.predict(x, verbose=0)
    ) -> np.ndarray:
        """Sunspot numbers predicted from `inputs` `(examples, window, 1)`
        in sunspot numbers, by `predict` (the Keras model by default)."""
        return predict(standardise(inputs, mean, scale)) * scale + mean

    (train_x, train_y), (test_x, test_y) = splits["train"], splits["test"]
    return {
        "test_rmse": rmse(forecast(test_x), test_y),
        "persistence_rmse": rmse(test_x[:, -1, 0], test_y),
        "train_rmse": rmse(forecast(train_x), train_y),
        "test_years": list(TEST_YEARS),
        **litert_metrics(
            litert,
            config.litert_quantize,
            lambda predict: {"litert_test_rmse": rmse(forecast(test_x, predict), test_y)},
        ),
    }
