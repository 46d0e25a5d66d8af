"""Pronounce words with the LiteRT file of a `kerasrnn-train g2p` run.

    python examples/g2p_litert.py RUN_DIRECTORY WORD [WORD ...]

prints one line per word: the word, a tab, its ARPAbet phonemes. It reads
`model.tflite` and `vocabulary.json` from the run directory and needs only
NumPy and `ai-edge-litert`: no TensorFlow, no kerasrnn. The steps are the
ones `vocabulary.json` describes (see `kerasrnn.seq2seq.litert`): text to
token ids, the signature of the shortest bucket that holds the word, the
best hypothesis back to tokens. A word longer than the file's
`max_source_length` is refused (exit status 1), since the file would read
only its beginning.
"""

import argparse
import json
import pathlib
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def source_ids(text, vocabulary):
    """`text` as source ids: stripped, lower-cased, split and looked up as
    `vocabulary["source_text"]` says; tokens outside the vocabulary dropped."""
    rules = vocabulary["source_text"]
    if rules["strip"]:
        text = text.strip()
    if rules["lowercase"]:
        text = text.lower()
    tokens = list(text) if rules["split"] == "characters" else text.split()
    ids = {token: index for index, token in enumerate(vocabulary["source_tokens"])}
    first = vocabulary["unknown_id"] + 1  # the reserved tokens are never read
    return [ids[token] for token in tokens if ids.get(token, 0) >= first]


def target_text(target_ids, vocabulary):
    """The tokens before the first `end_id`, padding left out, joined."""
    tokens = []
    for index in target_ids.tolist():
        if index == vocabulary["end_id"]:
            break
        if index != vocabulary["pad_id"]:
            tokens.append(vocabulary["target_tokens"][index])
    return vocabulary["target_text"]["separator"].join(tokens)


def pronounce(interpreter, vocabulary, words):
    """Each word's pronunciation, or None for a word too long for the file.

    The words that share a bucket go through its signature in one call.
    """
    sources = [source_ids(word, vocabulary) for word in words]
    answers = [None] * len(words)
    pending = list(range(len(words)))
    for bucket in vocabulary["buckets"]:
        length = bucket["max_source_length"]
        fits = [i for i in pending if len(sources[i]) <= length]
        pending = [i for i in pending if len(sources[i]) > length]
        if not fits:
            continue
        ids = np.full((len(fits), length), vocabulary["pad_id"], np.int32)
        for row, index in enumerate(fits):
            ids[row, : len(sources[index])] = sources[index]
        runner = interpreter.get_signature_runner(bucket["signature"])
        for index, row in zip(fits, runner(source_ids=ids)["target_ids"]):
            answers[index] = target_text(row, vocabulary)
    return answers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=pathlib.Path, help="a g2p run directory")
    parser.add_argument("words", nargs="+")
    arguments = parser.parse_args(argv)
    vocabulary = json.loads((arguments.run / "vocabulary.json").read_text())
    interpreter = Interpreter(str(arguments.run / "model.tflite"))
    status = 0
    for word, phonemes in zip(
        arguments.words, pronounce(interpreter, vocabulary, arguments.words)
    ):
        if phonemes is None:
            print(
                f"{word}: longer than {vocabulary['max_source_length']} letters",
                file=sys.stderr,
            )
            status = 1
        else:
            print(f"{word}\t{phonemes}")
    return status


if __name__ == "__main__":
    sys.exit(main())
