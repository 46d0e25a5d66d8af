"""The string SavedModel, loaded in a process that cannot import kerasrnn."""

import re
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.export.seq2seq_savedmodel import BATCH_STEP, LENGTH_STEP, padded_to_bucket
from tests.isolated import PROJECT, last_json, run_without
from tests.kerasrnn.seq2seq.sharpened import scaled_outputs

# Every test here exports or serves a SavedModel.
pytestmark = pytest.mark.slow

LETTERS = list("abcdef")
PHONES = ["AA", "B", "K", "D", "EH", "F"]
# 15 words: with XLA the batch is padded to 16, and the longest source (cut
# to MAX_INPUT = 8 tokens) fills the first length bucket exactly.
WORDS = ["bad", "cab", "face", "", "   ", "BaD", " bad\t", "b1a-d", "bäad",
         "ééé", "abcdefabcdefabcdef", "abcdefab", "fade cafe", "fadecafe",
         b"b\xffad"]  # invalid UTF-8
MAX_INPUT = 8
BEAM = 3


def serve_in_clean_process(path, words):
    program = f"""
        import json

        import tensorflow as tf

        serve = tf.saved_model.load({str(path)!r}).signatures["serving_default"]
        result = serve(texts=tf.constant({words!r}))
        def plain(value):
            if isinstance(value, list):
                return [plain(item) for item in value]
            return value.decode() if isinstance(value, bytes) else value

        print(json.dumps({{key: plain(value.numpy().tolist()) for key, value in result.items()}}))
        """
    return last_json(run_without(PROJECT, program, timeout=180))


def export(model, source, target, path, **options):
    seq2seq.export_serving(
        model, path, source, target, beam_width=BEAM, max_source_length=MAX_INPUT,
        max_target_length=6, **options,
    )
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A plain model exported with the defaults (XLA), served to WORDS."""
    keras.utils.set_random_seed(5)
    source, target = seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)
    model = seq2seq.Seq2Seq(
        source.size, target.size, kerasrnn.LSTMCell(8), embedding_dim=6,
        bidirectional=True, context="both",
    )
    # Its candidates at least 2e-4 apart, where untrained they came within 1e-5.
    scaled_outputs(model, 20.0)
    path = export(model, source, target, tmp_path_factory.mktemp("export") / "saved_model")
    return model, source, target, serve_in_clean_process(path, WORDS)


@pytest.fixture(scope="module")
def exported_without_xla(exported, tmp_path_factory):
    """The same model exported with `jit_compile=False`, served to WORDS."""
    model, source, target, _ = exported
    path = tmp_path_factory.mktemp("export_without_xla") / "saved_model"
    export(model, source, target, path, jit_compile=False)
    return serve_in_clean_process(path, WORDS)


def xla_compiled_functions(path):
    """Names of the SavedModel's functions that XLA must compile."""
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((path / "saved_model.pb").read_bytes())
    library = saved_model.meta_graphs[0].graph_def.library
    return [
        function.signature.name for function in library.function
        if function.attr["_XlaMustCompile"].b
    ]


def in_process(model, source, target, word):
    """The documented normalisation, then beam search, by the Python API."""
    if isinstance(word, bytes):
        word = word.decode("utf-8", errors="replace")
    letters = [c for c in word.strip().lower() if c in LETTERS][:MAX_INPUT]
    if not letters:
        return [""] * BEAM, [0.0] * BEAM
    result = seq2seq.beam_search_decode(
        model, np.array([source.encode(letters)]), BEAM, 6
    )
    return (
        [" ".join(target.decode(s)) for s in result.sequences[0].numpy()],
        result.log_probs[0].numpy().tolist(),
    )


@pytest.mark.slow
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
    assert (
        answer[b"b\xffad"] == answer["BaD"] == answer[" bad\t"] == answer["b1a-d"]
        == answer["bäad"] == answer["bad"]
    )
    assert answer["abcdefabcdefabcdef"] == answer["abcdefab"]
    assert answer["fade cafe"] == answer["fadecafe"]
    emitted = {p for out in served["beam_outputs"] for o in out for p in o.split()}
    assert emitted <= set(PHONES) | {"<unk>"}


@pytest.mark.slow
def test_compiled_export_answers_as_the_uncompiled_one(exported, exported_without_xla):
    *_, served = exported
    plain = exported_without_xla
    assert set(served) == set(plain)
    assert served["outputs"] == plain["outputs"]
    assert served["beam_outputs"] == plain["beam_outputs"]
    # XLA fuses and orders the sums differently: equal up to rounding.
    np.testing.assert_allclose(served["log_probs"], plain["log_probs"], rtol=1e-5)
    np.testing.assert_allclose(served["beam_log_probs"], plain["beam_log_probs"], rtol=1e-5)


@pytest.mark.slow
def test_only_the_compiled_export_holds_an_xla_function(exported, tmp_path):
    model, source, target, _ = exported
    assert xla_compiled_functions(export(model, source, target, tmp_path / "xla"))
    assert not xla_compiled_functions(
        export(model, source, target, tmp_path / "graph", jit_compile=False)
    )


@pytest.mark.parametrize(
    "batch, lengths, padded_batch, padded_length",
    [
        (1, [3], 1, LENGTH_STEP),
        (3, [0, 0, 0], 4, LENGTH_STEP),  # nothing to read: still one bucket
        (5, [LENGTH_STEP, 2, 0, 1, 1], 8, LENGTH_STEP),
        (2, [LENGTH_STEP + 1, 4], 2, 2 * LENGTH_STEP),
        (BATCH_STEP, [1] * BATCH_STEP, BATCH_STEP, LENGTH_STEP),
        (BATCH_STEP + 1, [2] * (BATCH_STEP + 1), 2 * BATCH_STEP, LENGTH_STEP),
        (2 * BATCH_STEP + 3, [2] * (2 * BATCH_STEP + 3), 3 * BATCH_STEP, LENGTH_STEP),
    ],
)
def test_ids_are_padded_to_the_documented_buckets(batch, lengths, padded_batch, padded_length):
    rng = np.random.default_rng(batch)
    # As `source_ids` makes them: right-padded, one column of padding more.
    source = np.zeros((batch, max(lengths) + 1), np.int32)
    for row, length in enumerate(lengths):
        source[row, :length] = rng.integers(4, 10, length)
    padded = padded_to_bucket(tf.constant(source)).numpy()
    assert padded.shape == (padded_batch, padded_length)
    kept = min(source.shape[1], padded_length)
    np.testing.assert_array_equal(padded[:batch, :kept], source[:, :kept])
    np.testing.assert_array_equal(padded[batch:], 0)
    np.testing.assert_array_equal(padded[:, kept:], 0)


@pytest.mark.parametrize("separator", ["", "-+-"])
def test_output_tokens_are_joined_by_the_separator(exported, separator):
    model, source, target, _ = exported
    module = seq2seq.StringSeq2Seq(
        model, source, target, separator=separator, beam_width=BEAM,
        max_source_length=MAX_INPUT, max_target_length=6,
    )
    words = ["bad", "", "fadecafe"]
    served = module.serve(tf.constant(words))["beam_outputs"].numpy()
    for word, row in zip(words, served):
        result = seq2seq.beam_search_decode(
            model, np.array([source.encode(list(word)) or [0]]), BEAM, 6
        )
        expected = [
            separator.join(target.decode(s)) for s in result.sequences[0].numpy()
        ]
        assert [answer.decode() for answer in row] == expected, word


def test_plain_models_serve_no_alignments(exported):
    *_, served = exported
    assert set(served) == {"outputs", "log_probs", "beam_outputs", "beam_log_probs"}


def test_bad_export_arguments(exported, tmp_path):
    model, source, target, _ = exported
    with pytest.raises(ValueError, match="`split`.*Received: split='bytes'"):
        seq2seq.export_serving(model, tmp_path, source, target, split="bytes")
    with pytest.raises(ValueError, match="`source_vocabulary`"):
        seq2seq.export_serving(model, tmp_path, LETTERS, target)
    with pytest.raises(ValueError, match="`jit_compile`.*Received: jit_compile='yes'"):
        seq2seq.export_serving(model, tmp_path, source, target, jit_compile="yes")
    # Vocabularies of other sizes than the embeddings would serve wrong ids.
    with pytest.raises(ValueError, match="`source_vocabulary` must have the 10 ids.*with 7"):
        seq2seq.export_serving(model, tmp_path, seq2seq.Vocabulary(LETTERS[:3]), target)
    with pytest.raises(ValueError, match="`target_vocabulary` must have the 10 ids.*with 12"):
        seq2seq.export_serving(model, tmp_path, source, seq2seq.Vocabulary(PHONES + ["X", "Y"]))
    a_file = tmp_path / "taken"
    a_file.write_text("")
    with pytest.raises(ValueError, match="`path`.*an existing file"):
        seq2seq.export_serving(model, a_file, source, target)
    # A directory cannot be made under a file.
    with pytest.raises(ValueError, match="`path`.*Received: path=.*taken/sub.*'.*taken' is a file"):
        seq2seq.export_serving(model, a_file / "sub", source, target)
    with pytest.raises(TypeError, match="`path`.*Received: path=3"):
        seq2seq.export_serving(model, 3, source, target)


@pytest.mark.parametrize(
    "tokens, options",
    [
        (list("ABC"), {}),  # lower-cased first: no input reads as an upper-case token
        (["hello", "world", "cat"], {}),  # words, split into characters
        (["a b", "c d", "e\tf"], {"split": "whitespace"}),  # split at whitespace
    ],
)
def test_a_vocabulary_no_text_can_reach_is_refused(tmp_path, tokens, options):
    vocabulary = seq2seq.Vocabulary(tokens)
    model = seq2seq.Seq2Seq(vocabulary.size, 7, kerasrnn.GRUCell(3), embedding_dim=2)
    with pytest.raises(ValueError, match="`source_vocabulary`.*" + re.escape(repr(tokens))):
        seq2seq.export_serving(
            model, tmp_path / "saved_model", vocabulary, seq2seq.Vocabulary(PHONES[:3]),
            **options,
        )
    assert not (tmp_path / "saved_model").exists()


@pytest.mark.parametrize(
    "tokens, options, unreachable",
    [
        (["a", "B", "c", "Dé"], {}, ["B", "Dé"]),
        (["a", "B", " "], {"lowercase": False}, []),  # an inner space is read
        (["cat", "a", "c d"], {"split": "whitespace"}, ["c d"]),
    ],
)
def test_tokens_no_text_can_reach_are_named_in_a_warning(tokens, options, unreachable):
    vocabulary = seq2seq.Vocabulary(tokens)
    model = seq2seq.Seq2Seq(vocabulary.size, 7, kerasrnn.GRUCell(3), embedding_dim=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seq2seq.StringSeq2Seq(
            model, vocabulary, seq2seq.Vocabulary(PHONES[:3]), **options
        )
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    if not unreachable:
        assert not messages
        return
    assert len(messages) == 1 and repr(unreachable) in messages[0]


@pytest.mark.slow
def test_served_signature_names_the_expected_rank(exported, tmp_path):
    model, source, target, _ = exported
    path = tmp_path / "saved_model"
    seq2seq.export_serving(model, path, source, target, beam_width=2)
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    assert serve(texts=tf.constant(["bad"]))["outputs"].shape == (1,)
    # An empty batch is padded to one row for XLA, and that row cut off again.
    empty = serve(texts=tf.constant([], tf.string))
    assert empty["outputs"].shape == (0,) and empty["beam_outputs"].shape == (0, 2)
    for texts in (tf.constant("bad"), tf.constant([["bad", "cab"]])):
        with pytest.raises(tf.errors.InvalidArgumentError, match="1-D batch of strings"):
            serve(texts=texts)


@pytest.mark.slow
@pytest.mark.parametrize(
    "attention, jit_compile", [("bahdanau", True), ("luong", True), ("luong", False)]
)
def test_attention_model_serves_its_alignments(tmp_path, attention, jit_compile):
    keras.utils.set_random_seed(6)
    source, target = seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)
    model = seq2seq.Seq2Seq(
        source.size, target.size, kerasrnn.GRUCell(8), embedding_dim=6,
        bidirectional=True, attention=attention,
    )
    # Its candidates at least 5e-3 apart, where untrained they came within 3e-5.
    scaled_outputs(model, 20.0)
    path = export(model, source, target, tmp_path / "saved_model", jit_compile=jit_compile)
    # With XLA: 5 rows padded to 8, sources (longest 8) to 8 columns.
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
        expected = seq2seq.beam_search_decode(
            model, np.array([source.encode(letters)]), BEAM, 6, return_alignments=True
        ).alignments
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
