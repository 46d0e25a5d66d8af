"""Input-pipeline throughput against model-step throughput, per training task.

For each task of `kerasrnn_pipelines.tasks`, its configuration is resolved as
`kerasrnn-train TASK [--quick]` resolves it, and the task's own functions
build its training `tf.data.Dataset` and its compiled model, as the task's
`run` does. Two contenders are timed alternately in one process
(`benchmarks.timing.interleaved_medians`):

- input: one epoch of the dataset, iterated alone, after a warm-up epoch
  has filled its `cache`;
- model: `model.train_on_batch` on batches taken from that warm-up epoch
  and held in memory (an evenly spaced sample of at most `model_batches`,
  so that bucketed tasks are timed on every length).

Throughput is examples per second, an example being one row of a batch (a
window, a sequence, or one stream's chunk for `charlm`). The ratio, input
throughput / model throughput, must be far above 1: the pipeline then
never keeps the model waiting.

`g2p` is measured when its module imports; otherwise its row says why not.
"""

import tempfile

import keras
import tensorflow as tf

from benchmarks.timing import interleaved_medians
from kerasrnn_pipelines.cli import parse_config
from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.tasks import load_task
from kerasrnn_pipelines.training import RunContext, make_strategy


def forecast_training(task, config, context):
    """Standardised sunspot windows; the Elman stack, MSE."""
    splits, mean, scale = task.load_windows(config.window)
    train = task.train_batches(
        splits, mean, scale,
        batch_size=config.batch_size, shuffle=config.shuffle, seed=config.seed,
    )
    with context.scope():
        model = task.build_model(config)
        task.compile_model(model, context)
    return train, model


def classify_training(task, config, context):
    """Digits row by row; the Bidirectional encoder, cross-entropy."""
    # The embedded digits: the TFDS source needs data that is not on disk.
    datasets, classes, vocabulary = task.digit_data(
        batch_size=config.batch_size, shuffle=config.shuffle, seed=config.seed
    )
    with context.scope():
        model = task.build_model(config, classes, vocabulary)
        task.compile_model(model, context)
    return datasets["train"], model


def charlm_training(task, config, context):
    """Truncated-BPTT stream batches; the stateful character model."""
    train_text, validation_text = task.load_texts(
        config.data, train_chars=config.train_chars, val_chars=config.val_chars
    )
    vocabulary, train_ids, _ = task.encode_texts(train_text, validation_text)
    train = task.stream_batches(train_ids, config.batch_size, config.bptt)
    model = task.build_model(
        config, vocabulary.size, config.batch_size, stateful=True
    )
    task.compile_model(model, context)
    return train, model


def tag_training(task, config, context):
    """Length-bucketed CMUDict stress batches; the Bidirectional tagger."""
    splits, label_names = task.load_examples(config.data, config.limit)
    vocabulary, datasets = task.make_datasets(
        splits, batch_size=config.batch_size, shuffle=config.shuffle, seed=config.seed
    )
    with context.scope():
        model = task.build_model(config, vocabulary.size, len(label_names))
        task.compile_model(model, context)
    return datasets["train"], model


def g2p_training(task, config, context):
    """Length-bucketed teacher-forcing pairs; the seq2seq model, as `g2p.run` compiles it."""
    from kerasrnn import seq2seq
    from kerasrnn_pipelines import encoder_decoder

    splits = task.load_words(stress=config.stress, limit=config.limit, seed=config.seed)
    letters, phonemes = task.make_vocabularies(splits["train"])
    train = task.pair_dataset(
        splits["train"], letters, phonemes, config.batch_size, True, config.seed
    )
    with context.scope():
        model = encoder_decoder.build_model(config, letters, phonemes)
        context.compile(model, seq2seq.SequenceCrossEntropy())
    return train, model


#: Task name -> `(task module, config, context) -> (train dataset, compiled model)`.
TRAINING = {
    "forecast": forecast_training,
    "classify": classify_training,
    "charlm": charlm_training,
    "tag": tag_training,
    "g2p": g2p_training,
}

#: Tasks measured only when their module imports (work in progress).
OPTIONAL = ("g2p",)


def batch_rows(batch):
    """Examples in one batch: the leading dimension of its first tensor."""
    return int(tf.shape(tf.nest.flatten(batch)[0])[0])


def evenly_spaced(batches, count):
    """At most `count` batches spread over the whole list, first included."""
    stride = max(1, len(batches) // count)
    return batches[::stride][:count]


def measure(task_name, quick, repeats, model_batches):
    """Input and model throughput of one task, side by side.

    Args:
        task_name: A key of `TRAINING`.
        quick: Use the task's `QUICK` configuration.
        repeats: Timed calls per contender.
        model_batches: Most batches one model contender call trains on.

    Returns:
        A table row (dict): task, cell, units, batch, epoch_batches,
        input_examples_per_s, model_examples_per_s and ratio.

    Raises:
        ValueError: `task_name` is not a key of `TRAINING`, or
            `model_batches` / `repeats` is not positive.
    """
    if task_name not in TRAINING:
        raise ValueError(
            f"Argument `task_name` must be one of {sorted(TRAINING)}. "
            f"Received: task_name={task_name!r}"
        )
    for name, value in (("repeats", repeats), ("model_batches", model_batches)):
        if value <= 0:
            raise ValueError(
                f"Argument `{name}` must be a positive integer. "
                f"Received: {name}={value!r}"
            )
    config = parse_config([task_name, "--quick"] if quick else [task_name])
    task = load_task(task_name)
    keras.utils.set_random_seed(config.seed)
    with tempfile.TemporaryDirectory() as out, claim_run_directory(
        out, task_name, config.fingerprint(), restart=False, overwrite=False
    ) as run_directory:
        context = RunContext(config, make_strategy(config.strategy), run_directory)
        train, model = TRAINING[task_name](task, config, context)

    batches = list(train)  # the warm-up epoch: fills the dataset's cache
    epoch_examples = sum(batch_rows(batch) for batch in batches)
    held = evenly_spaced(batches, model_batches)
    held_examples = sum(batch_rows(batch) for batch in held)

    def one_epoch():
        for _ in train:
            pass

    def train_steps():
        for batch in held:
            model.train_on_batch(*batch)

    # One warm-up call each: the model traces its train step for every
    # batch shape it is given, and the input's iterator is built once.
    seconds = interleaved_medians(
        {"input": one_epoch, "model": train_steps}, repeats, warmup=1
    )
    input_rate = epoch_examples / seconds["input"]
    model_rate = held_examples / seconds["model"]
    return {
        "task": task_name,
        "cell": config.cell,
        "units": config.units,
        "batch": config.batch_size,
        "epoch_batches": len(batches),
        "input_examples_per_s": input_rate,
        "model_examples_per_s": model_rate,
        "ratio": input_rate / model_rate,
    }


def input_pipeline_rows(quick, repeats, model_batches):
    """One `measure` row per task of `TRAINING`.

    An `OPTIONAL` task whose module fails to import gets a row that says so
    instead of numbers. Arguments are those of `measure`.

    Returns:
        List of table rows (dicts), in the order of `TRAINING`.
    """
    rows = []
    for task_name in TRAINING:
        if task_name in OPTIONAL:
            # A module still being written can fail at import in any way.
            try:
                load_task(task_name)
            except Exception as error:  # noqa: BLE001
                rows.append(
                    {
                        "task": task_name,
                        "cell": "-",
                        "units": "-",
                        "batch": "-",
                        "epoch_batches": "-",
                        "input_examples_per_s": "-",
                        "model_examples_per_s": "-",
                        "ratio": f"not measured: module does not import "
                        f"({type(error).__name__})",
                    }
                )
                continue
        rows.append(measure(task_name, quick, repeats, model_batches))
    return rows
