"""Distribution: the strategy `--strategy` names, and the multi-worker
training loop, which runs the task's callbacks as `fit` would.

`default` is one device; `mirrored` is `tf.distribute.MirroredStrategy`
over the local GPUs, or over the logical CPU devices when there are several;
`multiworker` is `tf.distribute.MultiWorkerMirroredStrategy`, configured by
`TF_CONFIG`. Keras 3's `model.fit` does not run under the multi-worker
strategy (keras-team/keras#20585), so for it `fit_multiworker` drives the
same compiled model through its own loop: `experimental_distribute_dataset`
and `strategy.run(model.train_step)` in one `tf.function` per step, the
logs averaged over the replicas as `fit` averages them, and every callback
(the task's, the backup, the history) called through a
`keras.callbacks.CallbackList` at the points `fit` calls it. The global
batch is split across replicas; only the chief (worker 0) writes outputs.

Running on a real cluster: start the same command on every machine, each
with a `TF_CONFIG` naming all workers and its own index, e.g. on worker 1 of 2:
`TF_CONFIG='{"cluster": {"worker": ["host0:12345", "host1:12345"]},
"task": {"type": "worker", "index": 1}}' kerasrnn-train forecast
--strategy multiworker --out /shared/run`. `--out` should be storage every
worker can read (the backup is restored from it); worker 0 locks and writes
it.
"""

import os
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import keras
import tensorflow as tf

from kerasrnn.types import TensorLike
from kerasrnn_pipelines.options import TF_CONFIG, read_tf_config


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The `tf.distribute.Strategy` that `--strategy name` asks for.

    Args:
        name: `"default"`, `"mirrored"` or `"multiworker"`.

    Raises:
        ValueError: an unknown name, or `"multiworker"` without a readable
            `TF_CONFIG` (`kerasrnn_pipelines.options.ConfigError`).
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if tf.config.list_logical_devices("GPU"):
            return tf.distribute.MirroredStrategy()
        cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=cpus)
    if name == "multiworker":
        read_tf_config(os.environ.get(TF_CONFIG))
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(
        "Argument `strategy` must be one of 'default', 'mirrored', "
        f"'multiworker'. Received: strategy={name!r}"
    )


def is_multiworker(strategy: tf.distribute.Strategy) -> bool:
    """Whether `strategy` is `MultiWorkerMirroredStrategy`, which `fit`
    does not run under (`fit_multiworker` trains instead)."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


#: A step as `replicated_step` makes it: a batch in, its logs (name ->
#: scalar tensor) out.
Step: TypeAlias = Callable[[Any], dict[str, TensorLike]]


def replicated_step(
    strategy: tf.distribute.Strategy, step: Callable[[Any], dict[str, TensorLike]]
) -> Step:
    """`step(batch)` on every replica, its logs averaged over all of them
    (the reduction `fit` applies), as one `tf.function`."""

    # Bucketed batches differ in length; without reduce_retracing every
    # new length would compile another graph.
    @tf.function(reduce_retracing=True)
    def run(batch: Any) -> dict[str, TensorLike]:
        logs = strategy.run(step, args=(batch,))
        return {
            name: strategy.reduce("MEAN", value, axis=None)
            for name, value in logs.items()
        }

    return run


def run_epoch_steps(
    step: Step,
    dataset: Iterable[Any],
    model: keras.Model,
    on_begin: Callable[[int], object],
    on_end: Callable[[int, dict[str, float]], object],
) -> dict[str, float]:
    """Run `step` over `dataset`; return the logs of the last batch."""
    logs: dict[str, float] = {}
    model.reset_metrics()
    for index, batch in enumerate(dataset):
        on_begin(index)
        logs = {name: float(value) for name, value in step(batch).items()}
        on_end(index, logs)
        if model.stop_training:
            break
    return logs


def fit_multiworker(
    model: keras.Model,
    strategy: tf.distribute.Strategy,
    train: tf.data.Dataset,
    validation: tf.data.Dataset | None,
    initial_epoch: int,
    epochs: int,
    callbacks: list[keras.callbacks.Callback],
    verbose: int,
) -> None:
    """`model.fit` for `MultiWorkerMirroredStrategy`.

    Args:
        model: Compiled inside `strategy.scope()`.
        strategy: The multi-worker strategy.
        train: `tf.data.Dataset` of global batches.
        validation: Optional dataset, evaluated after each epoch.
        initial_epoch: Epochs already trained (a resumed run).
        epochs: The epoch to stop after.
        callbacks: Keras callbacks, called where `fit` calls them.
        verbose: 1 for a progress bar, 0 for none.
    """
    with strategy.scope():
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
    train_step = replicated_step(strategy, model.train_step)
    test_step = replicated_step(strategy, model.test_step)
    callback_list = keras.callbacks.CallbackList(
        callbacks,
        add_history=True,
        add_progbar=verbose > 0,
        model=model,
        verbose=verbose,
        epochs=epochs,
        steps=None,
    )
    distributed_train = strategy.experimental_distribute_dataset(train)
    distributed_validation = (
        strategy.experimental_distribute_dataset(validation)
        if validation is not None
        else None
    )
    model.stop_training = False
    callback_list.on_train_begin()
    logs: dict[str, float] = {}
    for epoch in range(initial_epoch, epochs):
        callback_list.on_epoch_begin(epoch)
        logs = run_epoch_steps(
            train_step,
            distributed_train,
            model,
            callback_list.on_train_batch_begin,
            callback_list.on_train_batch_end,
        )
        if distributed_validation is not None:
            callback_list.on_test_begin()
            val_logs = run_epoch_steps(
                test_step,
                distributed_validation,
                model,
                callback_list.on_test_batch_begin,
                callback_list.on_test_batch_end,
            )
            callback_list.on_test_end(val_logs)
            logs.update({f"val_{k}": v for k, v in val_logs.items()})
        callback_list.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    # As `model.fit` does: an optimizer that averages the weights
    # (`--ema-momentum`) now puts the average into the model.
    with strategy.scope():
        model.optimizer.finalize_variable_values(model.trainable_variables)
    callback_list.on_train_end(logs)
