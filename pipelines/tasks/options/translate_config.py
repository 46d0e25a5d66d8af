"""The options of `kerasrnn-train translate` (see `kerasrnn_pipelines.tasks.translate`)."""

import dataclasses
from typing import Any, ClassVar

from kerasrnn_pipelines.options import allowed, number_type, option, positive_int
from kerasrnn_pipelines.tasks.options.seq2seq_config import Seq2SeqConfig

#: The (source, target) feature keys of every `ted_hrlr_translate`
#: configuration, as TFDS 4.9 lists them; the configuration's name drops
#: the underscore of a mixed source ("az_tr" -> "aztr_to_en").
LANGUAGE_PAIRS = (
    ("pt", "en"),
    ("az", "en"),
    ("az_tr", "en"),
    ("be", "en"),
    ("be_ru", "en"),
    ("es", "pt"),
    ("fr", "pt"),
    ("gl", "en"),
    ("gl_pt", "en"),
    ("he", "pt"),
    ("it", "pt"),
    ("ru", "en"),
    ("ru", "pt"),
    ("tr", "en"),
)

#: `--max-length`: the run's LiteRT file reads sources of that many words and
#: answers of that many and `<end>`, which it unrolls for a run with
#: right-to-left rescorers: `kerasrnn.allowed.MAX_LITERT_UNROLLED_LENGTH`
#: bounds both, so that the export after training cannot be refused.
sentence_length = number_type(
    f"an integer in [1, {allowed.MAX_LITERT_UNROLLED_LENGTH - 1}] (the run's LiteRT file "
    "unrolls its encoder over that many words)",
    int,
    lambda v: 0 < v < allowed.MAX_LITERT_UNROLLED_LENGTH,
)

#: `--data` value -> (source, target) feature keys.
CORPORA = {
    f"ted_hrlr_translate/{source.replace('_', '')}_to_{target}": (source, target)
    for source, target in LANGUAGE_PAIRS
}


@dataclasses.dataclass(frozen=True)
class TranslateConfig(Seq2SeqConfig):
    """Sentence translation on a TFDS ted_hrlr_translate corpus."""

    task: ClassVar[str] = "translate"
    DESCRIPTION: ClassVar[str] = (
        "Sentence translation on a TFDS ted_hrlr_translate corpus (online "
        "users): a seq2seq encoder-decoder with beam search; reports test "
        "token and sentence error rates."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        name: f"TFDS {name} (TED talks, Qi et al. 2018; {source} -> {target}); "
        "needs `tfds build ted_hrlr_translate` once online"
        for name, (source, target) in CORPORA.items()
    }
    QUICK: ClassVar[dict[str, Any]] = {
        "units": 16,
        "embedding": 16,
        "epochs": 2,
        "batch_size": 32,
        "beam_width": 2,
        "vocabulary_size": 200,
        "max_length": 8,
    }

    data: str = "ted_hrlr_translate/pt_to_en"
    units: int = 256
    epochs: int = 10
    batch_size: int = 64
    clipnorm: float = 1.0
    embedding: int = 128
    length_penalty: float = 0.6
    sampling_midpoint: int = 5000
    vocabulary_size: int = option(
        8000,
        positive_int,
        "most frequent training words kept per language; others are <unk>",
    )
    max_length: int = option(
        40, sentence_length, "words kept per sentence (longer sentences are cut)"
    )
