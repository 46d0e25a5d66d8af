"""Token ids of a sequence-to-sequence model: reserved ids and a vocabulary.

Every id layout in `kerasrnn.seq2seq` is the same, for sources and targets:

| id | token | role |
|---|---|---|
| 0 | `<pad>` | padding; embeddings mask it (`mask_zero=True`), losses skip it |
| 1 | `<start>` | the decoder's first input y_0 (`eq:rnn-seq2seq`) |
| 2 | `<end>` | the last target token; decoding stops an example there |
| 3 | `<unk>` | a token outside the vocabulary (Python-side encoding only) |
| 4 ... | the vocabulary's own tokens, in the order given |

Decoders never emit `<pad>` or `<start>`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kerasrnn.validation import check_ids

PAD_ID = 0
START_ID = 1
END_ID = 2
UNKNOWN_ID = 3
RESERVED_TOKENS = ("<pad>", "<start>", "<end>", "<unk>")


class Vocabulary:
    """An ordered token list mapped to ids 4, 5, ... after the reserved ids.

    Args:
        tokens: Iterable of distinct non-empty strings (characters of a
            word, phonemes, words), none of them a reserved token.

    Example:

    >>> vocabulary = Vocabulary(["a", "b"])
    >>> vocabulary.encode(["b", "a", "z"])
    [5, 4, 3]
    >>> vocabulary.decode([5, 4, 2, 4])
    ['b', 'a']
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        tokens = list(tokens)
        seen: set[str] = set()
        for token in tokens:
            if not isinstance(token, str) or not token:
                raise ValueError(
                    "Argument `tokens` must hold non-empty strings. "
                    f"Received the token {token!r}"
                )
            if token in RESERVED_TOKENS or token in seen:
                raise ValueError(
                    "Argument `tokens` must hold distinct strings other than "
                    f"{RESERVED_TOKENS}. Received {token!r} twice or as a "
                    "reserved token"
                )
            seen.add(token)
        self.tokens = tokens
        self.token_to_id = {
            token: index + len(RESERVED_TOKENS)
            for index, token in enumerate(tokens)
        }

    @property
    def size(self) -> int:
        """Number of ids, reserved ones included (the embedding's input_dim)."""
        return len(RESERVED_TOKENS) + len(self.tokens)

    def id_to_token(self) -> list[str]:
        """All tokens indexed by id: the reserved ones, then `tokens`."""
        return list(RESERVED_TOKENS) + self.tokens

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token strings -> ids; unknown tokens become `UNKNOWN_ID`."""
        return [self.token_to_id.get(token, UNKNOWN_ID) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids -> token strings, up to the first `END_ID`, skipping pad/start.

        Args:
            ids: Iterable (or 1-D array) of Python or NumPy integers in
                [0, `size`).

        Returns:
            A list of token strings.

        Raises:
            ValueError: An id is not an integer or lies outside [0, `size`),
                checked over all of `ids` before any is decoded (a negative
                id would otherwise index from the end of the list).
        """
        checked = check_ids("ids", list(ids), self.size)
        if checked.ndim != 1:
            raise ValueError(
                "Argument `ids` must be one sequence of ids (1-D). "
                f"Received ids of shape {checked.shape}"
            )
        id_to_token = self.id_to_token()
        tokens = []
        for index in checked.tolist():
            if index == END_ID:
                break
            if index in (PAD_ID, START_ID):
                continue
            tokens.append(id_to_token[index])
        return tokens

    def get_config(self) -> dict[str, Any]:
        """`{"tokens": [...]}`, what `from_config` takes."""
        return {"tokens": list(self.tokens)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Vocabulary:
        """The vocabulary `get_config` describes."""
        return cls(**config)


def check_vocabularies(
    source_vocabulary: object,
    target_vocabulary: object,
    source_vocabulary_size: int,
    target_vocabulary_size: int,
) -> None:
    """Refuse a vocabulary that is no `Vocabulary`, or whose size differs
    from that of the embedding it feeds.

    A vocabulary of another size than the model's embedding maps strings to
    the wrong rows, or to rows that do not exist; both exports check it.

    Args:
        source_vocabulary: Should be a `Vocabulary` of
            `source_vocabulary_size` ids.
        target_vocabulary: Should be a `Vocabulary` of
            `target_vocabulary_size` ids.
        source_vocabulary_size: The model's number of source ids.
        target_vocabulary_size: The model's number of target ids.
    """
    for name, vocabulary, size in (
        ("source_vocabulary", source_vocabulary, source_vocabulary_size),
        ("target_vocabulary", target_vocabulary, target_vocabulary_size),
    ):
        if not isinstance(vocabulary, Vocabulary):
            raise ValueError(
                f"Argument `{name}` must be a kerasrnn.seq2seq.Vocabulary. "
                f"Received: {name}={vocabulary!r}"
            )
        if vocabulary.size != size:
            raise ValueError(
                f"Argument `{name}` must have the {size} ids the model was "
                f"built with. Received: {name} with {vocabulary.size} ids"
            )
