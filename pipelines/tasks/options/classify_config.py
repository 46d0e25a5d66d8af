"""The options of `kerasrnn-train classify` (see `kerasrnn_pipelines.tasks.classify`)."""

import dataclasses
from typing import Any, ClassVar

from kerasrnn_pipelines.options import LiteRTConfig, RecurrentStackConfig, option, positive_int


@dataclasses.dataclass(frozen=True)
class ClassifyConfig(RecurrentStackConfig, LiteRTConfig):
    """Sequence classification with a Bidirectional encoder."""

    task: ClassVar[str] = "classify"
    DESCRIPTION: ClassVar[str] = (
        "Classify whole sequences with a Bidirectional recurrent encoder "
        "(digits row by row; TFDS imdb_reviews online) against an order-free "
        "baseline."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "sklearn.datasets.load_digits: 1,797 8x8 digits read row "
        "by row (package scikit-learn, BSD-3-Clause)",
        "imdb_reviews": "TFDS imdb_reviews (needs `tfds build imdb_reviews` first)",
    }
    QUICK: ClassVar[dict[str, Any]] = {
        "units": 8,
        "epochs": 1,
        "vocabulary": 500,
        "max_length": 32,
        "embedding": 8,
    }

    units: int = 32
    bidirectional: bool = True
    epochs: int = 30
    learning_rate: float = 3e-3
    vocabulary: int = option(
        20000,
        positive_int,
        "imdb_reviews: the most frequent words kept (the rest read as unknown)",
    )
    max_length: int = option(256, positive_int, "imdb_reviews: words kept per review")
    embedding: int = option(64, positive_int, "imdb_reviews: word embedding size")
