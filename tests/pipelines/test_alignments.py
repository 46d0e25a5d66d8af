"""Alignment heatmaps: padded α cut to each word, drawn with its tokens as ticks."""

import warnings

import numpy as np

from kerasrnn_pipelines import alignments


def test_examples_are_cut_to_their_real_rows_and_columns():
    padded = np.arange(2 * 4 * 5, dtype="float32").reshape(2, 4, 5)
    examples = alignments.alignment_examples(
        ["cat", "at"], [["K", "AE", "T"], ["AE"]], padded
    )
    (first_source, first_output, first), (_, _, second) = examples
    assert (first_source, first_output) == (list("cat"), ["K", "AE", "T"])
    np.testing.assert_array_equal(first, padded[0, :3, :3])
    np.testing.assert_array_equal(second, padded[1, :1, :2])


def test_panels_are_labelled_by_letters_and_phonemes_and_an_empty_output_draws_cleanly():
    examples = [
        (list("cat"), ["K", "AE", "T"], np.eye(3, dtype="float32")),
        (list("hmm"), [], np.zeros((0, 3), "float32")),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. matplotlib's singular-limits warning
        figure = alignments.draw_alignments(examples, columns=2)
    first, second = figure.axes
    assert [t.get_text() for t in first.get_xticklabels()] == list("cat")
    assert [t.get_text() for t in first.get_yticklabels()] == ["K", "AE", "T"]
    assert second.get_title() == "hmm"
    assert [t.get_text() for t in second.texts] == ["(empty output)"]
