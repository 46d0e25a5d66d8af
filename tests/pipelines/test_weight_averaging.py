"""`--ema-momentum`: training ends with the moving average of the weights,
also when the run was killed and resumed in between."""

from argparse import Namespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.training import RunContext
from tests.pipelines.interruptions import KillAtEpochBegin, Killed


class RecordSteps(keras.callbacks.Callback):
    """The raw weights after every optimizer step."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append([w.copy() for w in self.model.get_weights()])


def averaging_run(tmp_path, epochs=3, momentum=0.8):
    """Data, and a function that builds the same model and its context."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(24, 5, 2)).astype("float32")
    y = rng.normal(size=(24, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    config = Namespace(
        epochs=epochs, learning_rate=0.05, clipnorm=None, ema_momentum=momentum
    )
    run_directory = claim_run_directory(
        tmp_path, "test", {}, restart=False, overwrite=False
    )

    def model_and_context():
        keras.utils.set_random_seed(3)
        model = keras.Sequential(
            [keras.Input((5, 2)), keras.layers.SimpleRNN(4), keras.layers.Dense(1)]
        )
        context = RunContext(config, tf.distribute.get_strategy(), run_directory)
        context.compile(model, "mse")
        return model, context

    return dataset, model_and_context


def test_training_ends_with_the_moving_average_of_every_steps_weights(tmp_path):
    dataset, model_and_context = averaging_run(tmp_path, momentum=0.8)
    model, context = model_and_context()
    recorder = RecordSteps()
    context.fit(model, dataset, callbacks=[recorder])
    assert len(recorder.steps) == 9  # 3 epochs of 3 batches
    # w̄_1 = w_1, w̄_k = m·w̄_{k−1} + (1 − m)·w_k.
    average = recorder.steps[0]
    for weights in recorder.steps[1:]:
        average = [0.8 * a + 0.2 * w for a, w in zip(average, weights)]
    for kept, expected, last in zip(model.get_weights(), average, recorder.steps[-1]):
        np.testing.assert_allclose(kept, expected, rtol=1e-5, atol=1e-7)
        assert not np.allclose(kept, last)  # the average, not the last step


@pytest.mark.slow
def test_a_killed_and_resumed_run_ends_with_the_same_average(tmp_path):
    dataset, model_and_context = averaging_run(tmp_path / "whole")
    model, context = model_and_context()
    context.fit(model, dataset)
    uninterrupted = model.get_weights()

    dataset, model_and_context = averaging_run(tmp_path / "killed")
    model, context = model_and_context()
    with pytest.raises(Killed):
        context.fit(model, dataset, callbacks=[KillAtEpochBegin(2)])
    model, context = model_and_context()  # a new process: fresh model, same config
    context.fit(model, dataset)
    for resumed, expected in zip(model.get_weights(), uninterrupted):
        np.testing.assert_allclose(resumed, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.1", "x"])
def test_a_momentum_outside_zero_one_is_one_line_and_exit_2(value, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["forecast", "--quick", "--ema-momentum", value])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--ema-momentum" in error[0] and value in error[0]
    assert "(0, 1)" in error[0]
