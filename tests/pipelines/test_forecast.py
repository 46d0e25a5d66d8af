"""`forecast`: windows, persistence, and everything a run writes."""

import csv
import json

import keras
import numpy as np
import pytest
import statsmodels.api as sm

from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.data.sunspots import one_step_windows
from kerasrnn_pipelines.tasks.options.forecast_config import ForecastConfig
from tests.pipelines.conftest import read_metrics


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("forecast")
    code = main(["forecast", "--quick", "--seed", "3", "--out", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def int8_run(tmp_path_factory):
    """A quick run whose model.tflite is `dynamic_int8`; 32 units, since
    the converter leaves weight matrices under 1024 elements in float32
    (the quick run's 8 units have none that large)."""
    out = tmp_path_factory.mktemp("forecast-int8")
    code = main(
        ["forecast", "--quick", "--seed", "3", "--units", "32",
         "--litert-quantize", "dynamic_int8", "--out", str(out)]
    )
    assert code == 0
    return out


def test_windows_are_the_years_before_each_target():
    years = np.arange(2000, 2010)
    values = np.arange(10, dtype="float32") * 10
    inputs, targets, target_years = one_step_windows(
        years, values, 3, 2005, 2006
    )
    np.testing.assert_array_equal(inputs[..., 0], [[20, 30, 40], [30, 40, 50]])
    np.testing.assert_array_equal(targets[:, 0], [50, 60])
    np.testing.assert_array_equal(target_years, [2005, 2006])
    with pytest.raises(ValueError, match="Received: window=6"):
        one_step_windows(years, values, 6, 2005, 2006)
    with pytest.raises(ValueError, match="Received: window=0"):
        one_step_windows(years, values, 0, 2005, 2006)


def sunspot_table():
    frame = sm.datasets.sunspots.load_pandas().data
    return dict(
        zip(frame["YEAR"].astype(int), frame["SUNACTIVITY"].astype(float))
    )


@pytest.mark.slow
def test_persistence_and_test_rmse_match_an_independent_computation(quick_run):
    metrics = read_metrics(quick_run)
    table = sunspot_table()
    errors = [table[year - 1] - table[year] for year in range(1921, 1956)]
    assert metrics["persistence_rmse"] == pytest.approx(
        np.sqrt(np.mean(np.square(errors))), rel=1e-5
    )

    # Recompute the model's test RMSE from model.keras with the protocol
    # written out here: standardise by the 1700-1920 mean and deviation,
    # predict each year 1921-1955 from the `window` true years before it.
    window = metrics["args"]["window"]
    train = np.array([table[y] for y in range(1700, 1921)])
    mean, std = train.mean(), train.std()
    model = keras.saving.load_model(quick_run / "model.keras")
    histories = np.array(
        [
            [table[y - k] for k in range(window, 0, -1)]
            for y in range(1921, 1956)
        ]
    )
    scaled = ((histories - mean) / std)[..., None].astype("float32")
    predictions = model.predict(scaled, verbose=0)[:, 0] * std + mean
    truth = np.array([table[y] for y in range(1921, 1956)])
    assert metrics["test_rmse"] == pytest.approx(
        np.sqrt(np.mean((predictions - truth) ** 2)), rel=1e-4
    )


@pytest.mark.slow
def test_run_writes_every_output(quick_run):
    metrics = read_metrics(quick_run)
    assert metrics["task"] == "forecast"
    assert {
        "test_rmse",
        "persistence_rmse",
        "wall_time_s",
        "data",
        "args",
    } <= set(metrics)
    assert "statsmodels" in metrics["data"]
    assert metrics["args"]["units"] == ForecastConfig.QUICK["units"]
    assert metrics["args"]["quick"] is True
    with open(quick_run / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["epoch"] for row in rows] == [
        str(epoch) for epoch in range(1, ForecastConfig.QUICK["epochs"] + 1)
    ]
    assert all(np.isfinite(float(row["loss"])) for row in rows)
    assert (quick_run / "learning_curves.png").read_bytes()[
        :8
    ] == b"\x89PNG\r\n\x1a\n"
    assert list((quick_run / "tensorboard").rglob("events.out.tfevents.*"))
    assert (quick_run / "last_good.weights.h5").exists()
    # A finished run leaves no backup, so the next run starts afresh.
    assert not (quick_run / "backup").exists()
    json.dumps(metrics)
    # model.tflite's RMSE, through the LiteRT interpreter, is the model's.
    assert (quick_run / "model.tflite").stat().st_size == metrics["litert_bytes"]
    # Its operators, as the interpreter lists those of its one signature.
    from ai_edge_litert.interpreter import Interpreter

    listed = Interpreter(str(quick_run / "model.tflite"))._get_ops_details()
    assert metrics["litert_operators"] == {"serving_default": len(listed)}
    assert metrics["litert_loop_operators"] == {"serving_default": 0}  # unrolled: no loop
    assert metrics["litert_test_rmse"] == pytest.approx(metrics["test_rmse"], rel=1e-5)


@pytest.mark.slow
def test_saved_model_serves_without_kerasrnn(
    quick_run, serve_without_kerasrnn, rng
):
    inputs = rng.normal(size=(5, 6, 1)).astype("float32")
    expected = keras.saving.load_model(quick_run / "model.keras").predict(
        inputs, verbose=0
    )
    served = serve_without_kerasrnn(quick_run / "saved_model", inputs)
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_litert_quantize_reaches_the_file_and_metrics_json(int8_run, tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    import kerasrnn

    metrics = read_metrics(int8_run)
    assert metrics["litert_quantize"] == "dynamic_int8"
    assert metrics["args"]["litert_quantize"] == "dynamic_int8"
    litert_file = int8_run / "model.tflite"
    # The file holds int8 weights, and is smaller than the float32 export
    # of the same trained model.
    dtypes = {detail["dtype"] for detail in Interpreter(str(litert_file)).get_tensor_details()}
    assert np.int8 in dtypes
    float32_file = tmp_path / "float32.tflite"
    kerasrnn.export_litert(
        keras.saving.load_model(int8_run / "model.keras"),
        float32_file,
        sequence_length=metrics["args"]["window"],
    )
    assert litert_file.stat().st_size < 0.7 * float32_file.stat().st_size
    # What the quantization costs, through the interpreter: its RMSE is
    # close to the Keras model's (measured 19.72 against 19.75).
    assert metrics["litert_test_rmse"] == pytest.approx(metrics["test_rmse"], rel=0.05)


@pytest.mark.slow
def test_a_finished_run_is_refused_another_litert_quantize(int8_run, capsys):
    """The option changes only model.tflite, yet a finished run asked for
    another precision is refused, naming it, rather than reported complete
    with its old file."""
    capsys.readouterr()
    common = ["forecast", "--quick", "--seed", "3", "--units", "32", "--out", str(int8_run)]
    before = read_metrics(int8_run)
    code = main([*common, "--litert-quantize", "float16"])
    assert code == 2
    assert (
        '--litert-quantize "dynamic_int8" there, "float16" now' in capsys.readouterr().err
    )
    # Without the option (float32), too; the same command finds it complete.
    assert main(common) == 2
    assert '--litert-quantize "dynamic_int8" there, "float32" now' in capsys.readouterr().err
    assert main([*common, "--litert-quantize", "dynamic_int8"]) == 0
    assert "is already complete" in capsys.readouterr().out
    assert read_metrics(int8_run) == before
