"""What an exported sequence-to-sequence model decodes with and how it reads
and writes text, each said once: `DecodingSpec` and `TextSpec`.

Both exporters (`export_serving`, `export_litert`) take the two specs, with
the same defaults, and record them as they are: the LiteRT export under the
keys `"decoding"` and `"text"` of its `vocabulary.json`, the SavedModel in
`assets.extra/specs.json` under the same keys (`SPECS_FILE`). The decoders
`greedy_decode` and `beam_search_decode` take a `DecodingSpec` too. A
spec's fields are checked once, when it is made; the beam's bound by the
target vocabulary (`check_beam_width_fits`) is checked by its users, which
know the vocabulary.

A field passed to an exporter or a decoder as a keyword of its own (a
shortcut, or a deprecated keyword) is checked under the name the caller
typed, so that an error names that keyword (`spec_with_shortcuts`).

Example:

>>> decoding = DecodingSpec(beam_width=3, max_source_length=8, max_target_length=8)
>>> decoding.length_penalty
0.0
>>> TextSpec(separator="").to_json()
{'split': 'characters', 'lowercase': True, 'separator': ''}
>>> DecodingSpec(beam_width=0)
Traceback (most recent call last):
    ...
ValueError: Argument `beam_width` must be a positive integer. Received: beam_width=0
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from kerasrnn.allowed import MAX_DECODE_LENGTH, MAX_LENGTH_PENALTY
from kerasrnn.validation import check_bool, check_choice, check_number, check_positive_int

#: How text becomes source tokens (`TextSpec.split`).
SPLITS = ("characters", "whitespace")

#: Where a SavedModel written by `export_serving` records its specs, relative
#: to its directory: `assets.extra/` is the SavedModel's place for files that
#: go with the model and that no graph reads.
SPECS_FILE = "assets.extra/specs.json"


def check_int_in(name: str, value: object, low: int, high: int) -> int:
    """Return `value` as an `int` if it is an integer in [low, high], else
    raise a ValueError naming `name`, the value and the interval."""
    if (
        not isinstance(value, (int, np.integer))
        or isinstance(value, (bool, np.bool_))
        or not low <= value <= high
    ):
        raise ValueError(
            f"Argument `{name}` must be an integer in [{low}, {high}]. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_max_length(max_length: object, name: str = "max_target_length") -> int:
    """`max_length` as an int in [1, `MAX_DECODE_LENGTH`], else a ValueError
    naming the argument `name`."""
    return check_int_in(name, max_length, 1, MAX_DECODE_LENGTH)


def check_length_penalty(length_penalty: object, name: str = "length_penalty") -> float:
    """α as a float in [0, `MAX_LENGTH_PENALTY`], else a ValueError naming
    the argument `name`."""
    return check_number(name, length_penalty, low=0, high=MAX_LENGTH_PENALTY)


def check_separator(name: str, separator: object) -> str:
    """`separator` if it is a string, else a ValueError naming `name`."""
    if not isinstance(separator, str):
        raise ValueError(
            f"Argument `{name}` must be a string. Received: {name}={separator!r}"
        )
    return separator


#: Each `DecodingSpec` field's check: `(name typed, value) -> the value as
#: the spec stores it`, raising a ValueError that names the name typed.
DECODING_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "beam_width": check_positive_int,
    "length_penalty": lambda name, value: check_length_penalty(value, name),
    "max_source_length": check_positive_int,
    "max_target_length": lambda name, value: check_max_length(value, name),
}

#: Each `TextSpec` field's check, as `DECODING_CHECKS`.
TEXT_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "split": lambda name, value: check_choice(name, value, SPLITS),
    "lowercase": check_bool,
    "separator": check_separator,
}


@dataclasses.dataclass(frozen=True)
class DecodingSpec:
    """How an exported model decodes: its beam search and the lengths it
    reads and writes.

    Args:
        beam_width: B, a positive int: the hypotheses kept per step (1 is
            greedy decoding). The exporters also refuse a B above the
            target vocabulary size.
        length_penalty: α in [0, 8] (`decoding.MAX_LENGTH_PENALTY`), GNMT's
            length penalty ((5 + L) / 6)^α; larger favours longer answers.
        max_source_length: Positive int S, the source tokens read per
            input: the SavedModel reads the first S of a longer one; the
            LiteRT file's input is S wide (a longer source is its client's
            to refuse).
        max_target_length: Int T in [1, 65536] (`MAX_DECODE_LENGTH`), the
            most target tokens per answer, as for the decoders' argument of
            that name. The LiteRT file unrolls its loops over S and T: its
            size and conversion time grow with both.

    Raises:
        ValueError: A field is out of range, named with the value received
            and what is allowed.
    """

    beam_width: int = 2
    length_penalty: float = 0.0
    max_source_length: int = 64
    max_target_length: int = 64

    def __post_init__(self) -> None:
        # Stored as plain Python numbers, so that the spec is JSON as it is.
        for field, check in DECODING_CHECKS.items():
            object.__setattr__(self, field, check(field, getattr(self, field)))

    def to_json(self) -> dict[str, Any]:
        """The fields by name, what `DecodingSpec(**...)` takes back."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class TextSpec:
    """How an exported model's text becomes source tokens and its target
    tokens become text.

    Text to tokens: strip surrounding whitespace, lower-case (Unicode-aware)
    if `lowercase`, split as `split` says, drop the tokens the source
    vocabulary lacks. Tokens to text: the target tokens before `<end>`,
    joined by `separator`.

    Args:
        split: `"characters"` (each Unicode character is a token, as for
            grapheme-to-phoneme; inner spaces are dropped unless the
            vocabulary holds a space) or `"whitespace"` (words).
        lowercase: Whether text is lower-cased first.
        separator: The string that joins the target tokens (`" "` for
            phonemes or words, `""` for characters).

    Raises:
        ValueError: A field is out of range, named with the value received
            and what is allowed.
    """

    split: str = "characters"
    lowercase: bool = True
    separator: str = " "

    def __post_init__(self) -> None:
        for field, check in TEXT_CHECKS.items():
            object.__setattr__(self, field, check(field, getattr(self, field)))

    def to_json(self) -> dict[str, Any]:
        """The fields by name, what `TextSpec(**...)` takes back."""
        return dataclasses.asdict(self)


class Unset(enum.Enum):
    """The type of `UNSET`."""

    UNSET = "unset"


#: The default of an exporter's shortcut arguments (`beam_width=`,
#: `split=`, ...): not passed, so that the spec's field holds.
UNSET = Unset.UNSET

_Spec = TypeVar("_Spec", DecodingSpec, TextSpec)

#: Each spec's field checks.
FIELD_CHECKS: dict[type, dict[str, Callable[[str, Any], Any]]] = {
    DecodingSpec: DECODING_CHECKS,
    TextSpec: TEXT_CHECKS,
}


def spec_with_shortcuts(
    kind: type[_Spec],
    name: str,
    spec: _Spec | None,
    shortcuts: dict[str, Any],
    typed: Mapping[str, str] | None = None,
) -> _Spec:
    """The spec an exporter or a decoder uses: `spec`, or one made of the
    shortcut arguments that were passed (the others at the spec's defaults).

    Each shortcut passed is checked under the keyword the caller typed, so
    that a refusal names it (`max_input_length=0` is refused as
    `max_input_length`, not as the field `max_source_length` it sets).

    Args:
        kind: `DecodingSpec` or `TextSpec`.
        name: The spec's argument name (`"decoding"`, `"text"`).
        spec: The spec passed, or None.
        shortcuts: Field name -> the value passed by the shortcut argument
            of that name, or `UNSET`.
        typed: Field name -> the keyword that passed it, where it is not
            the field's own name (a deprecated keyword).

    Raises:
        ValueError: `spec` is not a `kind`, a shortcut is passed with a spec
            (which of the two would hold is not for the exporter to
            guess), or a field is out of range; each names the keyword
            typed.
    """
    typed = typed or {}
    passed = {field: value for field, value in shortcuts.items() if value is not UNSET}
    if spec is None:
        checks = FIELD_CHECKS[kind]
        return kind(
            **{
                field: checks[field](typed.get(field, field), value)
                for field, value in passed.items()
            }
        )
    if not isinstance(spec, kind):
        raise ValueError(
            f"Argument `{name}` must be a kerasrnn.seq2seq.{kind.__name__} or "
            f"None. Received: {name}={spec!r}"
        )
    if passed:
        field, value = next(iter(passed.items()))
        keyword = typed.get(field, field)
        sets = f"sets a field of `{name}`" if keyword == field else (
            f"sets the field `{field}` of `{name}`"
        )
        raise ValueError(
            f"Argument `{keyword}` {sets}, which was passed too: pass one of "
            f"them (`dataclasses.replace({name}, {field}=...)` changes one "
            f"field of a spec). Received: {keyword}={value!r} and {name}={spec!r}"
        )
    return spec


def check_beam_width_fits(beam_width: int, target_vocabulary_size: int) -> None:
    """Refuse a beam wider than the target vocabulary: its hypotheses
    beyond the vocabulary's size would be placeholders in every answer.

    Args:
        beam_width: B, a `DecodingSpec`'s.
        target_vocabulary_size: The model's number of target ids.

    Raises:
        ValueError: `beam_width` > `target_vocabulary_size`.
    """
    if beam_width > target_vocabulary_size:
        raise ValueError(
            "Argument `beam_width` must be at most the target vocabulary "
            f"size, {target_vocabulary_size}. Received: beam_width={beam_width!r}"
        )
