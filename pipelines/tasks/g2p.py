"""`g2p`: grapheme-to-phoneme conversion on CMUDict with `kerasrnn.seq2seq`.

A word's letters in, its ARPAbet phonemes (with stress digits) out. Data:
the `cmudict` package (BSD), read by `pipelines.data.cmudict`, split by
`zlib.crc32(word.encode()) % 20` (0 test, 1 validation, else train). Every
pronunciation of a training word is one training pair.

Model (`kerasrnn.seq2seq.Seq2Seq`): letter embeddings (`--embedding`) →
`--layers` encoder layers of `--cell` with `--units` (bidirectional by
default) → a decoder of the same cell, given the context as `--context`
says → softmax over phonemes (`pipelines.encoder_decoder`);
`--cell-dropout` is every cell's input dropout.
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
convention) and with stress (`test_wer_stress`, `test_per_stress`). The
baseline (`baseline_wer`, `baseline_per`, without stress) gives each test
word the pronunciation of the training word that shares its longest prefix.

Outputs are the shared ones (`pipelines.training`), except that
`saved_model/` is the string-in, string-out export of `kerasrnn.seq2seq.export_serving` — its
`serving_default` maps words to space-separated phonemes with beam search
in the graph (see that module for what odd inputs give).
"""

import bisect
import os

import numpy as np
import tensorflow as tf

from kerasrnn import seq2seq
from pipelines import edit_distance, encoder_decoder
from pipelines.data import cmudict as cmudict_data
from pipelines.tasks.options.g2p import G2PConfig

HEADLINE_METRIC = ("test_per", "baseline_per", "lower")

#: What `metrics.json` says of `--data`.
DATA_SOURCES = G2PConfig.DATA_SOURCES

#: Test words decoded per beam-search call.
DECODE_BATCH = 512

#: Words printed with their predictions at the end of a run.
SHOWN_WORDS = ("hello", "kerasrnn", "tensorflow", "pronunciation", "xylophone",
               "though", "through", "rough")


# ------------------------------------------------------------------ metrics
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
    if not stress:
        predictions = [cmudict_data.strip_stress(p) for p in predictions]
        references = [
            [cmudict_data.strip_stress(p) for p in pronunciations]
            for pronunciations in references
        ]
    return edit_distance.error_rates(predictions, references)


def nearest_spelling(train_words, words):
    """The baseline: each word gets the first pronunciation of the training
    word that shares its longest prefix (the alphabetically earlier one on
    a tie).

    Args:
        train_words: `(word, pronunciations)` pairs sorted by word.
        words: The words to pronounce.
    """
    spellings = [word for word, _ in train_words]
    predictions = []
    for word in words:
        index = bisect.bisect_left(spellings, word)
        neighbours = [i for i in (index - 1, index) if 0 <= i < len(spellings)]
        best = max(
            neighbours,
            key=lambda i: (len(os.path.commonprefix([spellings[i], word])), -i),
        )
        predictions.append(train_words[best][1][0])
    return predictions


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


# ----------------------------------------------------------------- decoding
def predict(model, words, letters, phonemes, config, max_length):
    """Beam-search pronunciations (phoneme lists) of `words`."""
    predictions = []
    for start in range(0, len(words), DECODE_BATCH):
        chunk = [letters.encode(word) for word in words[start : start + DECODE_BATCH]]
        source = tf.ragged.constant(chunk, tf.int32).to_tensor(0)
        predictions.extend(
            encoder_decoder.beam_search(model, source, phonemes, config, max_length)
        )
    return predictions


def run(config, context):
    """Train, evaluate WER/PER on the test split, save and export."""
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
    model = encoder_decoder.train(config, context, letters, phonemes, train, validation)
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
    baseline_wer, baseline_per = error_rates(
        nearest_spelling(splits["train"], test_words), references, stress=False
    )
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
        "baseline_wer": baseline_wer,
        "baseline_per": baseline_per,
        "test_words": len(test_words),
        "train_words": len(splits["train"]),
        "parameters": model.count_params(),
        "examples": examples,
    }
