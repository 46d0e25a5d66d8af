"""Griffe extension: the API reference reads the docstrings' Keras forms.

The docstrings follow Google style with two forms of Keras's own, which
griffe's Google parser does not know:

- `Call arguments:`, what a layer's `call` takes, in the class docstring:
  to the parser an admonition, its entries run together in one paragraph.
  It becomes `Other Parameters: Call arguments:`, a table of its own titled
  "Call arguments:".
- `Example:` followed by unindented doctest lines (`>>>`): to the parser
  plain text, which Markdown renders as quotes nested three deep. The header
  becomes `Examples:` and the lines under it are indented, which the parser
  reads as an examples section: console code, prompts and outputs kept.
  doctest finds the examples in either form.

A class docstring's `Call arguments:` and `Returns:` describe `call`; the
parser takes types from the annotations of the function it documents, and a
class has none, so their entries are given `call`'s annotations.

The rewriting keeps every line where it was, so that griffe's messages still
name the docstring's own lines.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# A section header that ends the examples: a capitalized title alone on its
# line (`Returns:`); prose inside the examples ("and a client:") starts in
# lower case.
SECTION_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:$")
# A Returns entry that already names its type: `(type): description`.
TYPED_ENTRY = re.compile(r"^\s+\(.+\):\s")
# An entry of `Call arguments:`, its name in the first column of the block.
CALL_ARGUMENT = re.compile(r"^    (?P<name>\w+):")


def with_examples_section(lines: list[str]) -> list[str]:
    """`Example:` + blank line + unindented lines holding doctests (`>>>`),
    as an indented `Examples:` section (the blank line moves above the
    header). The section runs to the next header or the docstring's end."""
    lines = list(lines)
    for index, line in enumerate(lines[:-2]):
        if line not in ("Example:", "Examples:") or lines[index + 1]:
            continue
        end = next(
            (i for i in range(index + 2, len(lines)) if SECTION_HEADER.match(lines[i])),
            len(lines),
        )
        if not any(body.startswith(">>>") for body in lines[index + 2 : end]):
            continue
        lines[index : index + 2] = ["", "Examples:"]
        for body in range(index + 2, end):
            lines[body] = "    " + lines[body] if lines[body] else ""
        break
    return lines


def with_call_arguments_table(lines: list[str], call: griffe.Function | None) -> list[str]:
    """`Call arguments:` as an other-parameters section, each entry
    (`name: description`) typed with `call`'s annotation of `name`."""
    lines = list(lines)
    for index, line in enumerate(lines):
        if line != "Call arguments:":
            continue
        lines[index] = "Other Parameters: Call arguments:"
        for entry in range(index + 1, len(lines)):
            if lines[entry] and not lines[entry].startswith(" "):
                break
            match = CALL_ARGUMENT.match(lines[entry])
            if match and call is not None and match["name"] in call.parameters:
                name = match["name"]
                annotation = call.parameters[name].annotation
                if annotation:
                    lines[entry] = lines[entry].replace(f"{name}:", f"{name} ({annotation}):", 1)
    return lines


def with_typed_call_returns(lines: list[str], call: griffe.Function | None) -> list[str]:
    """The first entry under `Returns:` prefixed with `(annotation): `."""
    if call is None or not call.returns:
        return lines
    lines = list(lines)
    for index, line in enumerate(lines[:-1]):
        if line == "Returns:" and lines[index + 1].strip():
            entry = lines[index + 1]
            if not TYPED_ENTRY.match(entry):
                indent = entry[: len(entry) - len(entry.lstrip())]
                lines[index + 1] = f"{indent}({call.returns}): {entry.lstrip()}"
            break
    return lines


def call_method(obj: griffe.Object) -> griffe.Function | None:
    """The `call` a class defines or inherits, if griffe can see it."""
    if not obj.is_class:
        return None
    try:
        call = obj.all_members.get("call")
        return call if call is not None and call.is_function else None
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


class KerasDocstrings(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        docstring = obj.docstring
        if docstring is None:
            return
        call = call_method(obj)
        lines = with_examples_section(docstring.value.split("\n"))
        lines = with_typed_call_returns(with_call_arguments_table(lines, call), call)
        docstring.value = "\n".join(lines)
