"""Keyword arguments renamed so that each knob of decoding has one name.

An old keyword keeps working for one release: it does what the new one does
and emits a `DeprecationWarning` naming the new keyword; passing both is a
`ValueError` naming both. The old keywords go in the next release.

| old keyword | new keyword | of |
|---|---|---|
| `max_length` | `max_target_length` | the decoders, `teacher_targets` |
| `max_output_length` | `max_target_length` | `export_serving`, `StringSeq2Seq` |
| `max_input_length` | `max_source_length` | `export_serving`, `StringSeq2Seq` |

The decoders `greedy_decode` and `beam_search_decode` take their knobs as
one `DecodingSpec` (`decoding=`), as the exporters do: their loose keywords
(`beam_width`, `max_target_length`, `length_penalty`, and `max_length`
before them) work for one release too, with a `DeprecationWarning` that
names the spec to pass instead (`deprecated_keywords`).
"""

from __future__ import annotations

import warnings
from typing import TypeVar

_Value = TypeVar("_Value")


def renamed_keyword(
    function: str,
    old: str,
    old_value: _Value | None,
    new: str,
    new_value: _Value | None,
    stacklevel: int = 3,
) -> _Value | None:
    """The value of the keyword renamed from `old` to `new`, whichever name
    it was passed by (None: by neither).

    Args:
        function: The function's name, for the messages.
        old: The keyword's old name.
        old_value: What was passed by the old name; None when it was not.
        new: The keyword's new name.
        new_value: What was passed by the new name; None when it was not.
        stacklevel: The frame the warning points at, counted as for
            `warnings.warn` from the caller of this function's caller (3:
            the user's call of the function that calls this one).

    Returns:
        `new_value`, or `old_value` if only the old name was passed.

    Raises:
        ValueError: Both names were passed.
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(
            f"Arguments `{old}` and `{new}` of {function} are one argument: "
            f"`{old}` is its deprecated name. Pass `{new}` only. "
            f"Received: {old}={old_value!r} and {new}={new_value!r}"
        )
    warnings.warn(
        f"{function}: the keyword `{old}` is deprecated and will be removed "
        f"in the next release; pass `{new}` instead (it means the same).",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return old_value


def deprecated_keywords(
    function: str, keywords: list[str], replacement: str, stacklevel: int = 3
) -> None:
    """Warn that `function` was called with the deprecated `keywords`.

    Args:
        function: The function's name, for the message.
        keywords: The deprecated keywords passed, as the caller typed them.
        replacement: What to pass instead, as the caller would type it.
        stacklevel: As for `renamed_keyword`.
    """
    names = ", ".join(f"`{keyword}`" for keyword in keywords)
    plural = "s" if len(keywords) > 1 else ""
    warnings.warn(
        f"{function}: the keyword{plural} {names} {'are' if plural else 'is'} "
        "deprecated and will be removed in the next release; pass "
        f"`{replacement}` instead (it means the same).",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def required(function: str, name: str, value: _Value | None) -> _Value:
    """`value`, or Python's own TypeError for a missing argument when it is
    None: a required argument that has a default only so that its old
    keyword can stand in for it."""
    if value is None:
        raise TypeError(f"{function}() missing required argument: '{name}'")
    return value
