"""`examples/g2p_litert.py` on run directories with one mistake each, run as
a client runs it: in a process that can import neither TensorFlow nor Keras
nor the pipelines (kerasrnn's bucket routing, which needs none of them, is
all it imports of kerasrnn). Each mistake is one line on stderr naming the path and what is
wrong, exit status 1 (2 for wrong arguments), never a traceback. The files
are real exports of tiny models: the run's own, a second seq2seq export of
other lengths, a third of fewer phonemes, and a cell model's."""

import json
import runpy
import shutil

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from tests.isolated import CLIENT_WITHOUT, run_without

LETTERS = list("abcdefgh")
PHONES = ["AA", "B", "K", "D", "EH"]
# The run: sources of up to 5 letters, a bucket for words of up to 2.
RUN_LENGTHS = {"max_source_length": 5, "max_target_length": 4, "buckets": [(2, 3)]}
WORDS = ["Bad", "he", "fAcE!", "x", "hedge"]

CLIENT = """
import runpy
import sys

sys.argv[0] = "examples/g2p_litert.py"
runpy.run_path("examples/g2p_litert.py", run_name="__main__")
"""


def attending_model(target_tokens):
    """A tiny untrained Luong-attention model over `LETTERS`."""
    return seq2seq.Seq2Seq(
        len(LETTERS) + 4,
        len(target_tokens) + 4,
        kerasrnn.GRUCell(4),
        embedding_dim=3,
        attention="luong",
    )


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """`(run model, {name: directory})`: `run`, a run's two files; `other_lengths`,
    an export with the run's signature names at shorter lengths; `fewer_phones`,
    one with the run's lengths and 1 phoneme instead of 5; `cell`, a
    `kerasrnn.export_litert` model.tflite of a GRU cell."""
    root = tmp_path_factory.mktemp("g2p_litert_example")
    keras.utils.set_random_seed(0)
    letters = seq2seq.Vocabulary(LETTERS)
    exported = {}
    run_model = attending_model(PHONES)
    for name, model, phones, lengths in [
        ("run", run_model, PHONES, RUN_LENGTHS),
        (
            "other_lengths",
            attending_model(PHONES),
            PHONES,
            {"max_source_length": 4, "max_target_length": 3, "buckets": [(2, 2)]},
        ),
        ("fewer_phones", attending_model(PHONES[:1]), PHONES[:1], RUN_LENGTHS),
    ]:
        exported[name] = root / name
        exported[name].mkdir()
        seq2seq.export_litert(
            model,
            exported[name] / "model.tflite",
            letters,
            seq2seq.Vocabulary(phones),
            beam_width=2,
            **lengths,
        )
    cell_model = keras.Sequential(
        [keras.Input((None, 3)), keras.layers.RNN(kerasrnn.GRUCell(4)), keras.layers.Dense(1)]
    )
    exported["cell"] = root / "cell"
    exported["cell"].mkdir()
    kerasrnn.export_litert(cell_model, exported["cell"] / "model.tflite", sequence_length=4)
    return run_model, exported


def run_directory(path, model, vocabulary):
    """A run directory at `path` with `model` as model.tflite and `vocabulary`
    as vocabulary.json, each a file to copy, bytes to write, or None for no
    such file."""
    path.mkdir()
    for name, content in (("model.tflite", model), ("vocabulary.json", vocabulary)):
        if isinstance(content, bytes):
            (path / name).write_bytes(content)
        elif content is not None:
            shutil.copyfile(content, path / name)
    return path


def client(*arguments):
    """The example client run on `arguments` where TensorFlow, Keras and
    the pipelines cannot be imported."""
    return run_without(CLIENT_WITHOUT, CLIENT, *arguments, check=False)


def refusal(completed, status=1):
    """The one line the client printed on stderr, once it is checked that
    the client refused with `status`, answered nothing and raised nothing."""
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert completed.returncode == status, completed.stderr[-3000:]
    assert completed.stdout == ""
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def best_ids(model, words, lengths):
    """Each word's answer by `beam_search_decode` at width 2, as target ids
    before `<end>`: letters outside `LETTERS` dropped, at the lengths of the
    shortest bucket that holds the word."""
    buckets = [*lengths["buckets"], (lengths["max_source_length"], lengths["max_target_length"])]
    answers = []
    for word in words:
        ids = [LETTERS.index(letter) + 4 for letter in word.lower() if letter in LETTERS]
        source_length, target_length = next(pair for pair in buckets if len(ids) <= pair[0])
        row = np.zeros((1, source_length), np.int32)
        row[0, : len(ids)] = ids
        sequence = np.asarray(seq2seq.beam_search_decode(model, row, 2, target_length).sequences)[
            0, 0
        ]
        answer = []
        for index in sequence.tolist():
            if index == seq2seq.END_ID:
                break
            if index != seq2seq.PAD_ID:
                answer.append(index)
        answers.append(answer)
    return answers


@pytest.mark.slow
def test_the_run_answers_as_beam_search_decode_and_prints_nothing_else(exports):
    """The run every other test spoils one way: sound, it answers, and its
    stderr is empty (the interpreter's XNNPACK notice held back)."""
    model, exported = exports
    completed = client(exported["run"], *WORDS)
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr[-3000:]
    tokens = seq2seq.Vocabulary(PHONES).id_to_token()
    expected = [
        f"{word}\t{' '.join(tokens[index] for index in answer)}"
        for word, answer in zip(WORDS, best_ids(model, WORDS, RUN_LENGTHS))
    ]
    assert completed.stdout.splitlines() == expected


@pytest.mark.slow
def test_a_word_with_a_tab_or_a_line_break_stays_one_line(exports):
    """Each word is one line whatever it holds: a backslash and the
    characters that are not printable are written escaped, as Python writes
    them in a string; the word is pronounced from its letters."""
    model, exported = exports
    words = ["b\tad", "he\n", "fa\\ce", "x\u2028he", "\x1bbad"]
    completed = client(exported["run"], *words)
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr[-3000:]
    tokens = seq2seq.Vocabulary(PHONES).id_to_token()
    shown = ["b\\tad", "he\\n", "fa\\\\ce", "x\\u2028he", "\\x1bbad"]
    expected = [
        f"{word}\t{' '.join(tokens[index] for index in answer)}"
        for word, answer in zip(shown, best_ids(model, words, RUN_LENGTHS))
    ]
    assert completed.stdout.split("\n") == [*expected, ""]

    too_long = client(exported["run"], "bad", "hedge\nhedge")
    assert too_long.returncode == 1
    assert too_long.stderr == "hedge\\nhedge: longer than 5 letters\n"
    assert too_long.stdout.split("\n")[1:] == [""]


@pytest.mark.slow
@pytest.mark.parametrize("num_threads", [1, 2])
def test_signatures_answer_batches_of_every_size_in_turn(exports, num_threads):
    """`Signatures` keeps a signature's buffers for the batch size it last
    ran: each call of another size, and each return to an earlier one,
    answers as `beam_search_decode` does. On two threads, the 42 words of
    the longer bucket in `many` reach `SPLIT_ROWS_PER_THREAD` rows per
    thread and are split between two interpreters (their halves in
    different orders, so that halves swapped would show) while the 28 words
    of the shorter bucket run whole beside them; `WORDS * 7` (21 and 14)
    runs through the compiled model."""
    model, exported = exports
    client_module = runpy.run_path("examples/g2p_litert.py")
    vocabulary = json.loads((exported["run"] / "vocabulary.json").read_text())
    signatures = client_module["Signatures"](exported["run"] / "model.tflite", num_threads)
    tokens = seq2seq.Vocabulary(PHONES).id_to_token()
    answer_of = {
        word: " ".join(tokens[index] for index in answer)
        for word, answer in zip(WORDS, best_ids(model, WORDS, RUN_LENGTHS))
    }
    assert answer_of["Bad"] != answer_of["hedge"]
    many = WORDS * 7 + WORDS[::-1] * 7
    assert 28 < 2 * client_module["SPLIT_ROWS_PER_THREAD"] <= 42
    try:
        for words in (WORDS, WORDS[:1], many, WORDS[1:3], WORDS * 7, WORDS):
            expected = [answer_of[word] for word in words]
            assert client_module["pronounce"](signatures, vocabulary, words) == expected
    finally:
        signatures.close()


@pytest.mark.slow
@pytest.mark.parametrize("num_threads", [0, -2, 1.5, "2", True])
def test_signatures_refuse_a_thread_count_that_is_not_one(exports, num_threads):
    _, exported = exports
    client_module = runpy.run_path("examples/g2p_litert.py")
    with pytest.raises(ValueError) as refused:
        client_module["Signatures"](exported["run"] / "model.tflite", num_threads)
    assert str(refused.value) == (
        f"Signatures: num_threads must be a positive int, got {num_threads!r}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_run_directory_that_is_not_one(tmp_path, kind):
    run = tmp_path / "no-such-run"
    if kind == "a file":
        run.write_text("not a directory\n")
    line = refusal(client(run, "hello"))
    what = "does not exist" if kind == "missing" else "is not a directory"
    assert line == f"g2p_litert.py: {run} {what}: give the directory of a g2p run"


@pytest.mark.slow
@pytest.mark.parametrize("missing", ["vocabulary.json", "model.tflite"])
def test_a_run_directory_without_one_of_its_files(exports, tmp_path, missing):
    _, exported = exports
    files = {name: exported["run"] / name for name in ("model.tflite", "vocabulary.json")}
    files[missing] = None
    run = run_directory(tmp_path / "run", files["model.tflite"], files["vocabulary.json"])
    line = refusal(client(run, "hello"))
    assert line.startswith(f"g2p_litert.py: {run / missing} does not exist: ")


@pytest.mark.slow
def test_a_model_that_is_not_a_seq2seq_export(exports, tmp_path):
    _, exported = exports
    run = run_directory(
        tmp_path / "run", exported["cell"] / "model.tflite", exported["run"] / "vocabulary.json"
    )
    line = refusal(client(run, "hello"))
    assert line == (
        f"g2p_litert.py: {run / 'model.tflite'} is not a seq2seq LiteRT export: no "
        "signature takes source_ids and gives target_ids (serving_default takes inputs)"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "mmap of size 0"),
        (bytes(range(256)) * 8, "not a valid Flatbuffer"),
    ],
    ids=["empty", "random bytes"],
)
def test_a_model_that_is_not_a_litert_file(exports, tmp_path, content, reason):
    _, exported = exports
    run = run_directory(tmp_path / "run", content, exported["run"] / "vocabulary.json")
    line = refusal(client(run, "hello"))
    assert line.startswith(f"g2p_litert.py: {run / 'model.tflite'} is not a LiteRT model: ")
    assert reason in line


@pytest.mark.slow
def test_a_vocabulary_of_another_export_at_other_lengths(exports, tmp_path):
    """The mix that used to stop in the interpreter ("UNPACK failed to
    prepare"): the signature names agree, the lengths do not."""
    _, exported = exports
    run = run_directory(
        tmp_path / "run",
        exported["run"] / "model.tflite",
        exported["other_lengths"] / "vocabulary.json",
    )
    line = refusal(client(run, "hello"))
    assert line == (
        f"g2p_litert.py: {run / 'model.tflite'} does not match {run / 'vocabulary.json'}: "
        "signature source_2's target_ids is int32 [-1, 3], where the bucket's "
        "max_source_length=2 and max_target_length=2 make it int32 [-1, 2]; both must "
        "come from one seq2seq LiteRT export"
    )


@pytest.mark.slow
def test_a_vocabulary_of_another_export_with_fewer_phonemes(exports, tmp_path):
    """Same signatures and lengths: only an answer holding an id past the
    vocabulary's 5 target tokens shows the mix, and it is refused by name."""
    model, exported = exports
    # The run's model answers these words with phonemes past the fifth id.
    assert max(max(answer, default=0) for answer in best_ids(model, WORDS, RUN_LENGTHS)) >= 5
    run = run_directory(
        tmp_path / "run",
        exported["run"] / "model.tflite",
        exported["fewer_phones"] / "vocabulary.json",
    )
    line = refusal(client(run, *WORDS))
    assert line.startswith(
        f"g2p_litert.py: {run / 'model.tflite'} does not match {run / 'vocabulary.json'}: "
        "an answer holds target id "
    )
    assert line.endswith(
        "outside its 5 target_tokens (ids 0 to 4); both must come from one seq2seq LiteRT export"
    )


def spoiled(vocabulary, change):
    """`vocabulary` with `change(vocabulary)` applied, as bytes of JSON."""
    vocabulary = json.loads(json.dumps(vocabulary))
    change(vocabulary)
    return json.dumps(vocabulary).encode()


@pytest.mark.slow
@pytest.mark.parametrize(
    "change, message",
    [
        (lambda v: v.pop("buckets"), "lacks buckets: it is not the vocabulary.json of a seq2seq"),
        (
            lambda v: [v.pop(key) for key in ("pad_id", "target_text")],
            "lacks pad_id, target_text: it is not",
        ),
        (
            lambda v: v.update(pad_id=99),
            "pad_id must be an id in [0, 9), an index of source_tokens and target_tokens; it is 99",
        ),
        (
            lambda v: v.update(end_id=True),
            "end_id must be an id in [0, 9), an index of target_tokens; it is true",
        ),
        (lambda v: v.update(target_tokens=[]), "target_tokens must be a non-empty list"),
        (lambda v: v.update(inputs=["ids"]), 'inputs must be ["source_ids"]; it is ["ids"]'),
        (lambda v: v["buckets"].reverse(), "buckets' max_source_length must be increasing"),
        (
            lambda v: v["buckets"][0].update(max_target_length=0),
            "buckets[0].max_target_length must be a positive int; it is 0",
        ),
        (lambda v: v["source_text"].update(split="letters"), 'split must be "characters" or'),
        (
            lambda v: v.update(outputs=["target_ids", "scores"]),
            "signature source_2 gives alignments, scores, target_ids, not scores, target_ids",
        ),
        (
            lambda v: v["buckets"][0].update(signature="source_3"),
            "its signatures are serving_default, source_2, while the buckets list source_3",
        ),
    ],
    ids=[
        "no buckets",
        "no pad_id and target_text",
        "pad_id out of range",
        "end_id a boolean",
        "no target tokens",
        "another input",
        "buckets longest first",
        "a zero length",
        "an unknown split",
        "an output missing",
        "another signature",
    ],
)
def test_a_vocabulary_that_breaks_the_contract(exports, tmp_path, change, message):
    _, exported = exports
    vocabulary = json.loads((exported["run"] / "vocabulary.json").read_text())
    run = run_directory(
        tmp_path / "run", exported["run"] / "model.tflite", spoiled(vocabulary, change)
    )
    line = refusal(client(run, "hello"))
    assert line.startswith(f"g2p_litert.py: {run / 'vocabulary.json'}") or line.startswith(
        f"g2p_litert.py: {run / 'model.tflite'} does not match {run / 'vocabulary.json'}"
    )
    assert message in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"inputs": ["source_ids"],', "is not valid JSON: Expecting"),
        (b"\xff\xfe{}", "is not valid JSON: 'utf-8' codec can't decode"),
        (b"[1, 2]", "must hold a JSON object, the vocabulary of a seq2seq LiteRT export"),
    ],
    ids=["cut short", "not UTF-8", "a list"],
)
def test_a_vocabulary_that_is_not_a_json_object(exports, tmp_path, content, message):
    _, exported = exports
    run = run_directory(tmp_path / "run", exported["run"] / "model.tflite", content)
    line = refusal(client(run, "hello"))
    assert line.startswith(f"g2p_litert.py: {run / 'vocabulary.json'} {message}")


@pytest.mark.slow
@pytest.mark.parametrize(
    "arguments, missing",
    [((), "run, words"), (("runs/g2p",), "words")],
    ids=["nothing", "no word"],
)
def test_missing_arguments_are_one_line_and_status_2(arguments, missing):
    line = refusal(client(*arguments), status=2)
    assert line == (
        f"g2p_litert.py: the following arguments are required: {missing} (see g2p_litert.py --help)"
    )
