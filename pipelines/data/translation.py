"""A TFDS translation dataset as `kerasrnn.seq2seq` training batches.

For users who are online (or who ran `tfds build ted_hrlr_translate`): the
default is `ted_hrlr_translate/pt_to_en` (TED talk transcripts, Portuguese
to English; Qi et al. 2018). Sentences are lower-cased and split on
whitespace; each side gets a word `Vocabulary` of its `vocabulary_size`
most frequent training words (ties by first appearance), the rest reading
as `<unk>`. Sentences longer than `max_length` words are cut. Batches are
grouped by target length and shaped by `kerasrnn.seq2seq.teacher_forcing_pair`,
ready for `Seq2Seq.fit`; each dataset states its number of batches.

Offline, `kerasrnn_pipelines.data.tfds.load_tfds` fails at once with
`DatasetNotOnDisk`, saying how to fetch the data.
"""

import bisect
import collections
import dataclasses
from collections.abc import Iterable, Sequence

import tensorflow as tf

from kerasrnn import seq2seq
from kerasrnn_pipelines.data.tfds import load_tfds

#: Target lengths that start a new group of batches (`bucket_by_sequence_length`).
BUCKET_BOUNDARIES = (8, 16, 24, 32)


@dataclasses.dataclass(frozen=True)
class TranslationConfig:
    """What `load_translation` reads and how it batches.

    Attributes:
        name: TFDS name with config, e.g. `"ted_hrlr_translate/pt_to_en"`.
        source_language, target_language: Keys of the TFDS `Translation`
            feature.
        vocabulary_size: Words kept per language (reserved ids excluded).
        max_length: Words kept per sentence.
        batch_size: Sentence pairs per batch.
        shuffle: Reshuffle the training pairs every epoch.
        seed: Shuffle seed.
        data_dir: TFDS data directory; TFDS's default when None.
    """

    name: str = "ted_hrlr_translate/pt_to_en"
    source_language: str = "pt"
    target_language: str = "en"
    vocabulary_size: int = 8000
    max_length: int = 40
    batch_size: int = 64
    shuffle: bool = True
    seed: int = 0
    data_dir: str | None = None

    def __post_init__(self) -> None:
        for field in ("vocabulary_size", "max_length", "batch_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"Argument `{field}` must be a positive integer. "
                    f"Received: {field}={value!r}"
                )


def words_of(text: bytes) -> list[str]:
    """Lower-cased whitespace tokens of a UTF-8 byte string."""
    return text.decode("utf-8").lower().split()


def most_frequent(sentences: Iterable[Sequence[str]], size: int) -> seq2seq.Vocabulary:
    """The vocabulary of the `size` words most frequent in `sentences`."""
    counts = collections.Counter(word for sentence in sentences for word in sentence)
    ranked = sorted(counts, key=lambda word: -counts[word])  # stable: first seen wins ties
    return seq2seq.Vocabulary(ranked[:size])


def load_translation(
    config: TranslationConfig = TranslationConfig(),
) -> tuple[dict[str, tf.data.Dataset], seq2seq.Vocabulary, seq2seq.Vocabulary]:
    """Read, encode and batch the train/validation/test splits.

    Returns:
        `(datasets, source_vocabulary, target_vocabulary)`: `datasets` maps
        `"train"`, `"validation"`, `"test"` to `tf.data.Dataset`s of
        `({"source", "decoder_input"}, decoder_target)` batches; train is
        shuffled (seeded) every epoch.

    Raises:
        DatasetNotOnDisk: the dataset is not prepared on disk.
    """
    splits = ("train", "validation", "test")
    datasets, _ = load_tfds(config.name, list(splits), data_dir=config.data_dir)
    pairs: dict[str, tuple[list[list[str]], list[list[str]]]] = {}
    for split, dataset in zip(splits, datasets):
        sources: list[list[str]] = []
        targets: list[list[str]] = []
        for example in dataset.as_numpy_iterator():
            source = words_of(example[config.source_language])[: config.max_length]
            target = words_of(example[config.target_language])[: config.max_length]
            if source and target:
                sources.append(source)
                targets.append(target)
        pairs[split] = (sources, targets)
    source_vocabulary = most_frequent(pairs["train"][0], config.vocabulary_size)
    target_vocabulary = most_frequent(pairs["train"][1], config.vocabulary_size)
    batched = {}
    for split, (sources, targets) in pairs.items():
        target_ids = [target_vocabulary.encode(t) for t in targets]
        dataset = tf.data.Dataset.from_tensor_slices(
            (
                tf.ragged.constant([source_vocabulary.encode(s) for s in sources], tf.int32),
                tf.ragged.constant(target_ids, tf.int32),
            )
        ).cache()
        if split == "train" and config.shuffle:
            dataset = dataset.shuffle(len(sources), seed=config.seed, reshuffle_each_iteration=True)
        # Slices of a ragged tensor arrive as rank-1 RaggedTensors, which
        # padded batching refuses; a map hands them on as plain tensors.
        dataset = dataset.map(lambda s, t: (s, t)).bucket_by_sequence_length(
            element_length_func=lambda s, t: tf.shape(t)[0],
            bucket_boundaries=list(BUCKET_BOUNDARIES),
            bucket_batch_sizes=[config.batch_size] * (len(BUCKET_BOUNDARIES) + 1),
        )
        # Grouping hides the number of batches from tf.data; stated, it gives
        # Keras's progress its total, and `fit` no longer ends its first
        # epoch with "Your input ran out of data; interrupting training".
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(
                batch_count(target_ids, config.batch_size)
            )
        )
        batched[split] = dataset.map(seq2seq.teacher_forcing_pair).prefetch(
            tf.data.AUTOTUNE
        )
    return batched, source_vocabulary, target_vocabulary


def batch_count(targets: Sequence[Sequence[int]], batch_size: int) -> int:
    """The batches `bucket_by_sequence_length` makes of `targets` by their
    lengths: each group of `BUCKET_BOUNDARIES` (the lengths from one
    boundary up to the next) in batches of `batch_size`, the last one
    short."""
    groups = collections.Counter(
        bisect.bisect_right(BUCKET_BOUNDARIES, len(target)) for target in targets
    )
    return sum(-(-size // batch_size) for size in groups.values())
