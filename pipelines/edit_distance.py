"""Levenshtein distance and the error rates the seq2seq tasks report.

A prediction is a token sequence; its references are one or more token
sequences (a word's pronunciations, a sentence's translation):

- the sequence error rate: the fraction of predictions equal to none of
  their references (WER of G2P, 1 - exact match of translation);
- the token error rate: Σ d(prediction, closest reference) / Σ len(closest
  reference), d the Levenshtein distance over tokens and the closest
  reference the one with the smallest d (the shorter one on a tie): PER of
  G2P, the word error rate of speech recognition.
"""

from collections.abc import Sequence


def edit_distance(first: Sequence[object], second: Sequence[object]) -> int:
    """Levenshtein distance between two token sequences (unit costs)."""
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, start=1):
        current = [i]
        for j, b in enumerate(second, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            )
        previous = current
    return previous[-1]


def error_rates(
    predictions: Sequence[Sequence[object]],
    references: Sequence[Sequence[Sequence[object]]],
) -> tuple[float, float]:
    """Sequence and token error rates of predictions against references.

    Args:
        predictions: One token sequence per example.
        references: Per example, the list of its reference sequences.

    Returns:
        `(sequence_error_rate, token_error_rate)`, both fractions (see the
        module docstring).

    Raises:
        ValueError: the lists are empty or of different lengths.
    """
    if len(predictions) != len(references) or not predictions:
        raise ValueError(
            "Arguments `predictions` and `references` must be non-empty and "
            f"of the same length. Received {len(predictions)} predictions and "
            f"{len(references)} references"
        )
    wrong = edits = length = 0
    for prediction, candidates in zip(predictions, references):
        prediction = tuple(prediction)
        distance, reference_length = min(
            (edit_distance(prediction, tuple(reference)), len(reference))
            for reference in candidates
        )
        wrong += distance > 0
        edits += distance
        length += reference_length
    return wrong / len(predictions), edits / length
