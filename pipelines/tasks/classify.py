"""`classify`: many-to-one sequence classification with a Bidirectional encoder.

A `Bidirectional` recurrent encoder (eq:rnn-bidir) reads the whole sequence;
its final forward and backward states, concatenated, feed a softmax over the
classes. Embedded data: scikit-learn's 8×8 digits read row by row (8 steps
of 8 pixels). Online: TFDS `imdb_reviews` (movie-review sentiment), words
found by a `TextVectorization` layer fitted on the training text, read as
the ids of a `kerasrnn.seq2seq.Vocabulary`, embedded with masking, batched
by length.

The baseline, trained in the same run on the same batches, is the same
model without recurrence: the average of the steps' inputs (pixels, or
word embeddings: a bag of words) into the same softmax. It sees every value
of the sequence but not their order, which is what the recurrent encoder
adds.

Metrics: `test_accuracy`, `baseline_test_accuracy`, `test_loss`;
`litert_test_accuracy` and `litert_bytes` of `model.tflite` (the digits'
8 rows unrolled; reviews of any length in a `WHILE` loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import keras
import numpy as np

from kerasrnn.seq2seq import UNKNOWN_ID, Vocabulary
from kerasrnn.types import TensorLike
from kerasrnn_pipelines.data.batching import (
    bucketed_batches,
    check_sequences,
    dense_batches,
)
from kerasrnn_pipelines.data.digits import load_digit_sequences
from kerasrnn_pipelines.data.tfds import load_tfds
from kerasrnn_pipelines.litert_outputs import Predict, litert_metrics, write_litert
from kerasrnn_pipelines.recurrent import recurrent_stack

if TYPE_CHECKING:
    import tensorflow as tf

    from kerasrnn_pipelines.tasks.options.classify_config import ClassifyConfig
    from kerasrnn_pipelines.training import RunContext

HEADLINE_METRIC = ("test_accuracy", "baseline_test_accuracy", "higher")


def digit_data(
    *, batch_size: int, shuffle: bool, seed: int
) -> tuple[dict[str, tf.data.Dataset], int, int | None]:
    """Fixed-shape digit batches: x `(batch, 8, 8)`, y `(batch,)`.

    Returns:
        `(datasets, classes, vocabulary size)`: split name -> batches,
        10 classes, and None (the steps are pixel rows, not tokens).
    """
    splits = load_digit_sequences()
    datasets = {
        name: dense_batches(
            x,
            y,
            batch_size,
            shuffle=shuffle and name == "train",
            seed=seed,
        )
        for name, (x, y) in splits.items()
    }
    return datasets, 10, None


def imdb_data(
    config: ClassifyConfig,
) -> tuple[dict[str, tf.data.Dataset], int, int | None]:
    """Length-bucketed review batches: ids `(batch, time)`, y, weights.

    `TextVectorization` lower-cases, strips punctuation, splits and finds
    the `config.vocabulary` most frequent training words (its first two
    entries are its own padding and unknown); the ids are those of a
    `Vocabulary` of its words.
    """
    (train, test), _ = load_tfds("imdb_reviews", ["train", "test"])
    vectorize = keras.layers.TextVectorization(
        max_tokens=config.vocabulary, ragged=True
    )
    vectorize.adapt(train.map(lambda example: example["text"]).batch(256))
    words = vectorize.get_vocabulary()
    vocabulary = Vocabulary(words[2:])

    def to_lists(
        dataset: tf.data.Dataset, name: str
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """A split's reviews as checked id arrays and their labels."""
        ids: list[list[int]] = []
        labels: list[int] = []
        for batch in dataset.batch(512):
            for row in vectorize(batch["text"]).to_list():
                tokens = [words[index] for index in row[: config.max_length]]
                # An empty review keeps one unknown id so that it still is
                # a sequence of one step.
                ids.append(vocabulary.encode(tokens) or [UNKNOWN_ID])
            labels.extend(batch["label"].numpy().tolist())
        return check_sequences(ids, name), np.asarray(labels, "int32")

    train_ids, train_y = to_lists(train, "imdb_reviews train")
    test_ids, test_y = to_lists(test, "imdb_reviews test")
    # The validation set is a fixed tenth of the training reviews.
    order = np.random.default_rng(0).permutation(len(train_ids))
    cut = max(1, len(order) // 10)
    val_index, fit_index = order[:cut], order[cut:]
    datasets = {
        "train": bucketed_batches(
            [train_ids[i] for i in fit_index],
            train_y[fit_index],
            config.batch_size,
            shuffle=config.shuffle,
            seed=config.seed,
        ),
        "validation": bucketed_batches(
            [train_ids[i] for i in val_index],
            train_y[val_index],
            config.batch_size,
            shuffle=False,
            seed=config.seed,
        ),
        "test": bucketed_batches(
            test_ids, test_y, config.batch_size, shuffle=False, seed=config.seed
        ),
    }
    return datasets, 2, vocabulary.size


def step_inputs(
    embedding: int, vocabulary: int | None
) -> tuple[TensorLike, TensorLike, TensorLike | None]:
    """Model input, per-step features and their padding mask: raw rows
    (no mask), or masked embeddings.

    Args:
        embedding: `--embedding`, the size of a word's embedding.
        vocabulary: Word ids the embedding takes, or None for the digits'
            rows of 8 pixels.

    Returns:
        `(inputs, steps, mask)`: `steps` `(batch, time, d)`, `mask`
        `(batch, time)` bool, True at the words, or None.
    """
    if vocabulary is None:
        inputs = keras.Input(shape=(8, 8), name="rows")
        return inputs, inputs, None
    inputs = keras.Input(shape=(None,), dtype="int32", name="word_ids")
    table = keras.layers.Embedding(vocabulary, embedding, mask_zero=True, name="embedding")
    return inputs, table(inputs), table.compute_mask(inputs)


def build_model(
    config: ClassifyConfig, classes: int, vocabulary: int | None
) -> keras.Model:
    """Bidirectional recurrent encoder → softmax over `classes`."""
    inputs, steps, mask = step_inputs(config.embedding, vocabulary)
    encoded = recurrent_stack(steps, config, return_sequences=False, mask=mask)
    outputs = keras.layers.Dense(classes, activation="softmax", name="classes")(
        encoded
    )
    return keras.Model(inputs, outputs, name="sequence_classifier")


def build_baseline(embedding: int, classes: int, vocabulary: int | None) -> keras.Model:
    """The order-free baseline: mean of the step features → softmax."""
    inputs, steps, mask = step_inputs(embedding, vocabulary)
    pooled = keras.layers.GlobalAveragePooling1D(name="mean_over_time")(steps, mask=mask)
    outputs = keras.layers.Dense(classes, activation="softmax", name="classes")(
        pooled
    )
    return keras.Model(inputs, outputs, name="order_free_baseline")


def accuracy(predict: Predict, dataset: tf.data.Dataset) -> float:
    """Fraction of a dataset's `(inputs, labels, ...)` batches whose class,
    the argmax of `predict(inputs)`, is the label."""
    right = total = 0
    for batch in dataset:
        labels = batch[1].numpy()
        right += int(np.sum(np.argmax(predict(batch[0].numpy()), axis=-1) == labels))
        total += len(labels)
    return right / total


def compile_model(model: keras.Model, context: RunContext) -> None:
    """Cross-entropy over the classes, accuracy, the shared optimizer."""
    context.compile(
        model, loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )


def run(config: ClassifyConfig, context: RunContext) -> dict[str, Any]:
    """Train the encoder and the baseline; report test accuracy of both."""
    if config.data == "embedded":
        datasets, classes, vocabulary = digit_data(
            batch_size=config.batch_size, shuffle=config.shuffle, seed=config.seed
        )
    else:
        datasets, classes, vocabulary = imdb_data(config)
    with context.scope():
        model = build_model(config, classes, vocabulary)
        compile_model(model, context)
    context.fit(model, datasets["train"], datasets["validation"])
    context.save(model)
    # The digits' fixed 8 rows unroll; reviews keep a loop for any length.
    litert = write_litert(
        context,
        model,
        sequence_length=model.inputs[0].shape[1],
        litert_quantize=config.litert_quantize,
    )
    test_loss, test_accuracy = model.evaluate(datasets["test"], verbose=0)

    # The baseline is a yardstick, not the product: it trains on one
    # device, with the same optimizer settings, whatever the strategy.
    baseline = build_baseline(config.embedding, classes, vocabulary)
    baseline.compile(
        optimizer=context.optimizer(),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    baseline.fit(
        datasets["train"], epochs=config.epochs, verbose=0, shuffle=False
    )
    _, baseline_accuracy = baseline.evaluate(datasets["test"], verbose=0)
    return {
        "test_accuracy": float(test_accuracy),
        "test_loss": float(test_loss),
        "baseline_test_accuracy": float(baseline_accuracy),
        **litert_metrics(
            litert,
            config.litert_quantize,
            lambda predict: {"litert_test_accuracy": accuracy(predict, datasets["test"])},
        ),
    }
