"""The string SavedModel, loaded in a process that cannot import kerasrnn."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import keras
import kerasrnn
from kerasrnn import seq2seq

LETTERS = list("abcdef")
PHONES = ["AA", "B", "K", "D", "EH", "F"]
WORDS = ["bad", "cab", "face", "", "   ", "BaD", " bad\t", "b1a-d", "bäad",
         "ééé", "abcdefabcdefabcdef", "abcdefab", "fade cafe", "fadecafe",
         b"b\xffad"]  # invalid UTF-8
MAX_INPUT = 8
BEAM = 3


def serve_in_clean_process(path, words):
    script = textwrap.dedent(
        f"""
        import json, sys

        class RefuseProjectImports:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("kerasrnn", "pipelines"):
                    raise ImportError("the served model must not need " + name)
                return None

        sys.meta_path.insert(0, RefuseProjectImports())
        import tensorflow as tf

        serve = tf.saved_model.load({str(path)!r}).signatures["serving_default"]
        result = serve(texts=tf.constant({words!r}))
        print(json.dumps({{
            key: np.tolist() if key.endswith("probs")
            else [[w.decode() for w in row] if isinstance(row, list) else row.decode()
                  for row in np.tolist()]
            for key, np in ((k, v.numpy()) for k, v in result.items())
        }}))
        assert "kerasrnn" not in sys.modules
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    keras.utils.set_random_seed(5)
    source, target = seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)
    model = seq2seq.Seq2Seq(
        source.size, target.size, kerasrnn.LSTMCell(8), embedding_dim=6,
        bidirectional=True, context="both",
    )
    path = tmp_path_factory.mktemp("export") / "saved_model"
    seq2seq.export_serving(
        model, path, source, target, beam_width=BEAM, max_input_length=MAX_INPUT,
        max_output_length=6,
    )
    return model, source, target, serve_in_clean_process(path, WORDS)


def in_process(model, source, target, word):
    """The documented normalisation, then beam search, by the Python API."""
    if isinstance(word, bytes):
        word = word.decode("utf-8", errors="replace")
    letters = [c for c in word.strip().lower() if c in LETTERS][:MAX_INPUT]
    if not letters:
        return [""] * BEAM, [0.0] * BEAM
    sequences, log_probs, _ = seq2seq.beam_search_decode(
        model, np.array([source.encode(letters)]), BEAM, 6
    )
    return (
        [" ".join(target.decode(s)) for s in sequences[0].numpy()],
        log_probs[0].numpy().tolist(),
    )


def test_served_answers_equal_the_python_api(exported):
    model, source, target, served = exported
    for index, word in enumerate(WORDS):
        outputs, log_probs = in_process(model, source, target, word)
        assert served["beam_outputs"][index] == outputs, word
        np.testing.assert_allclose(served["beam_log_probs"][index], log_probs, rtol=1e-5)
        assert served["outputs"][index] == outputs[0]
        np.testing.assert_allclose(served["log_probs"][index], log_probs[0], rtol=1e-5)


def test_odd_inputs_have_their_documented_results(exported):
    *_, served = exported
    answer = dict(zip(WORDS, served["outputs"]))
    assert answer[""] == answer["   "] == answer["ééé"] == ""
    assert answer[b"b\xffad"] == answer["BaD"] == answer[" bad\t"] == answer["b1a-d"] == answer["bäad"] == answer["bad"]
    assert answer["abcdefabcdefabcdef"] == answer["abcdefab"]
    assert answer["fade cafe"] == answer["fadecafe"]
    emitted = {p for out in served["beam_outputs"] for o in out for p in o.split()}
    assert emitted <= set(PHONES) | {"<unk>"}


def test_bad_export_arguments(exported, tmp_path):
    model, source, target, _ = exported
    with pytest.raises(ValueError, match="`split`.*Received: split='bytes'"):
        seq2seq.export_serving(model, tmp_path, source, target, split="bytes")
    with pytest.raises(ValueError, match="`source_vocabulary`"):
        seq2seq.export_serving(model, tmp_path, LETTERS, target)


def test_vocabulary_hand_worked():
    vocabulary = seq2seq.Vocabulary(["x", "y"])
    assert vocabulary.size == 6
    assert vocabulary.encode(["y", "q", "x"]) == [5, 3, 4]
    assert vocabulary.decode([1, 5, 4, 0, 2, 5]) == ["y", "x"]
    with pytest.raises(ValueError, match="`tokens`"):
        seq2seq.Vocabulary(["x", "x"])
    with pytest.raises(ValueError, match="`tokens`"):
        seq2seq.Vocabulary(["<end>"])
