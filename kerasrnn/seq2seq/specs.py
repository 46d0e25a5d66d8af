"""What an exported sequence-to-sequence model decodes with and how it reads
and writes text, each said once: `DecodingSpec` and `TextSpec`.

Both exporters (`export_serving`, `export_litert`) take the two specs, with
the same defaults, and record them as they are: the LiteRT export under the
keys `"decoding"` and `"text"` of its `vocabulary.json`, the SavedModel in
`assets.extra/specs.json` under the same keys (`SPECS_FILE`). A spec's
fields are checked once, when it is made; the beam's bound by the target
vocabulary (`check_beam_width_fits`) is checked by the exporters, which know
the vocabulary.

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
from typing import Any, TypeVar

from kerasrnn.seq2seq.decoding import check_length_penalty, check_max_length
from kerasrnn.validation import check_bool, check_choice, check_positive_int

#: How text becomes source tokens (`TextSpec.split`).
SPLITS = ("characters", "whitespace")

#: Where a SavedModel written by `export_serving` records its specs, relative
#: to its directory: `assets.extra/` is the SavedModel's place for files that
#: go with the model and that no graph reads.
SPECS_FILE = "assets.extra/specs.json"


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
        checked = {
            "beam_width": check_positive_int("beam_width", self.beam_width),
            "length_penalty": check_length_penalty(self.length_penalty),
            "max_source_length": check_positive_int(
                "max_source_length", self.max_source_length
            ),
            "max_target_length": check_max_length(
                self.max_target_length, "max_target_length"
            ),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

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
        check_choice("split", self.split, SPLITS)
        object.__setattr__(self, "lowercase", check_bool("lowercase", self.lowercase))
        if not isinstance(self.separator, str):
            raise ValueError(
                "Argument `separator` must be a string. "
                f"Received: separator={self.separator!r}"
            )

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


def spec_with_shortcuts(
    kind: type[_Spec], name: str, spec: _Spec | None, shortcuts: dict[str, Any]
) -> _Spec:
    """The spec an exporter uses: `spec`, or one made of the shortcut
    arguments that were passed (the others at the spec's defaults).

    Args:
        kind: `DecodingSpec` or `TextSpec`.
        name: The spec's argument name (`"decoding"`, `"text"`).
        spec: The spec passed, or None.
        shortcuts: Field name -> the value passed by the shortcut argument
            of that name, or `UNSET`.

    Raises:
        ValueError: `spec` is not a `kind`, a shortcut is passed with a spec
            (which of the two would hold is not for the exporter to
            guess), or a field is out of range.
    """
    passed = {field: value for field, value in shortcuts.items() if value is not UNSET}
    if spec is None:
        return kind(**passed)
    if not isinstance(spec, kind):
        raise ValueError(
            f"Argument `{name}` must be a kerasrnn.seq2seq.{kind.__name__} or "
            f"None. Received: {name}={spec!r}"
        )
    if passed:
        field, value = next(iter(passed.items()))
        raise ValueError(
            f"Argument `{field}` sets a field of `{name}`, which was passed "
            f"too: pass one of them (`dataclasses.replace({name}, "
            f"{field}=...)` changes one field of a spec). Received: "
            f"{field}={value!r} and {name}={spec!r}"
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
