"""The script that draws the README's WER-by-length plot."""

import json
import runpy

import pytest

from tests.pipelines.conftest import REPOSITORY

SCRIPT = REPOSITORY / "docs" / "wer_by_length.py"


def test_bars_are_the_runs_wer_by_length_in_percent(tmp_path):
    script = runpy.run_path(str(SCRIPT))
    for name, by_length in (("a", {"<=4": 0.25, ">=11": 0.5}), ("b", {"<=4": 0.2, ">=11": 0.3})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(
            json.dumps({"test_wer_by_length": by_length})
        )
    runs = script["read_runs"]([f"first={tmp_path / 'a'}", f"second={tmp_path / 'b'}"])
    figure = script["draw"](runs)
    (axis,) = figure.axes
    heights = [round(bar.get_height(), 6) for bar in axis.patches]
    assert heights == [25.0, 50.0, 20.0, 30.0]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["first", "second"]


def test_arguments_without_a_label_are_refused():
    script = runpy.run_path(str(SCRIPT))
    with pytest.raises(SystemExit, match="expected LABEL=RUN_DIRECTORY; received 'run'"):
        script["read_runs"](["run"])
