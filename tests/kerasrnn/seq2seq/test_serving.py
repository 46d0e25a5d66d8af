"""The string SavedModel, loaded in a process that cannot import kerasrnn."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

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
                if name.split(".")[0] in ("kerasrnn", "kerasrnn_pipelines"):
                    raise ImportError("the served model must not need " + name)
                return None

        sys.meta_path.insert(0, RefuseProjectImports())
        import tensorflow as tf

        serve = tf.saved_model.load({str(path)!r}).signatures["serving_default"]
        result = serve(texts=tf.constant({words!r}))
        def plain(value):
            if isinstance(value, list):
                return [plain(item) for item in value]
            return value.decode() if isinstance(value, bytes) else value

        print(json.dumps({{key: plain(value.numpy().tolist()) for key, value in result.items()}}))
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


def test_plain_models_serve_no_alignments(exported):
    *_, served = exported
    assert set(served) == {"outputs", "log_probs", "beam_outputs", "beam_log_probs"}


def test_bad_export_arguments(exported, tmp_path):
    model, source, target, _ = exported
    with pytest.raises(ValueError, match="`split`.*Received: split='bytes'"):
        seq2seq.export_serving(model, tmp_path, source, target, split="bytes")
    with pytest.raises(ValueError, match="`source_vocabulary`"):
        seq2seq.export_serving(model, tmp_path, LETTERS, target)
    # Vocabularies of other sizes than the embeddings would serve wrong ids.
    with pytest.raises(ValueError, match="`source_vocabulary` must have the 10 ids.*with 7"):
        seq2seq.export_serving(model, tmp_path, seq2seq.Vocabulary(LETTERS[:3]), target)
    with pytest.raises(ValueError, match="`target_vocabulary` must have the 10 ids.*with 12"):
        seq2seq.export_serving(model, tmp_path, source, seq2seq.Vocabulary(PHONES + ["X", "Y"]))
    a_file = tmp_path / "taken"
    a_file.write_text("")
    with pytest.raises(ValueError, match="`path`.*an existing file"):
        seq2seq.export_serving(model, a_file, source, target)


def test_served_signature_names_the_expected_rank(exported, tmp_path):
    model, source, target, _ = exported
    path = tmp_path / "saved_model"
    seq2seq.export_serving(model, path, source, target, beam_width=2)
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    assert serve(texts=tf.constant(["bad"]))["outputs"].shape == (1,)
    for texts in (tf.constant("bad"), tf.constant([["bad", "cab"]])):
        with pytest.raises(tf.errors.InvalidArgumentError, match="1-D batch of strings"):
            serve(texts=texts)


@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_attention_model_serves_its_alignments(tmp_path, attention):
    keras.utils.set_random_seed(6)
    source, target = seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)
    model = seq2seq.Seq2Seq(
        source.size, target.size, kerasrnn.GRUCell(8), embedding_dim=6,
        bidirectional=True, attention=attention,
    )
    path = tmp_path / "saved_model"
    seq2seq.export_serving(
        model, path, source, target, beam_width=BEAM, max_input_length=MAX_INPUT,
        max_output_length=6,
    )
    words = ["bad", "face", "", "cab", "abcdefabcdef"]
    served = serve_in_clean_process(path, words)
    alignments = np.array(served["alignments"])
    assert alignments.shape[0] == len(words)
    for index, word in enumerate(words):
        outputs, log_probs = in_process(model, source, target, word)
        assert served["beam_outputs"][index] == outputs
        letters = [c for c in word if c in LETTERS][:MAX_INPUT]
        rows, columns = served["output_lengths"][index], served["input_lengths"][index]
        assert columns == len(letters) and rows == len(outputs[0].split())
        if not letters:
            np.testing.assert_array_equal(alignments[index], 0.0)
            continue
        *_, expected = seq2seq.beam_search_decode(
            model, np.array([source.encode(letters)]), BEAM, 6, return_alignments=True
        )
        np.testing.assert_allclose(
            alignments[index, :rows, :columns], expected[0, 0, :rows], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(alignments[index, :rows].sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_array_equal(alignments[index, rows:], 0.0)
        np.testing.assert_array_equal(alignments[index, :, columns:], 0.0)


def test_vocabulary_hand_worked():
    vocabulary = seq2seq.Vocabulary(["x", "y"])
    assert vocabulary.size == 6
    assert vocabulary.encode(["y", "q", "x"]) == [5, 3, 4]
    assert vocabulary.decode([1, 5, 4, 0, 2, 5]) == ["y", "x"]
    with pytest.raises(ValueError, match="`tokens`"):
        seq2seq.Vocabulary(["x", "x"])
    with pytest.raises(ValueError, match="`tokens`"):
        seq2seq.Vocabulary(["<end>"])
