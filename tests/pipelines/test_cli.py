"""The command line: help, refusals with the valid choices, option precedence."""

import subprocess
import sys

import pytest

from pipelines import cli
from pipelines.tasks import TASKS, load_task
from tests.pipelines.conftest import REPOSITORY, subprocess_env

# Every option issue 4 names for the command line.
ISSUE_OPTIONS = (
    "--cell",
    "--units",
    "--layers",
    "--bidirectional",
    "--dropout",
    "--epochs",
    "--batch-size",
    "--learning-rate",
    "--clipnorm",
    "--seed",
    "--data",
    "--out",
    "--strategy",
    "--quick",
)


def test_python_dash_m_help_documents_every_option():
    completed = subprocess.run(
        [sys.executable, "-m", "pipelines", "--help"],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=subprocess_env(),
        timeout=120,
    )
    assert completed.returncode == 0
    for option in ISSUE_OPTIONS:
        assert option in completed.stdout
    for task in ("forecast", "classify", "charlm", "tag", "g2p"):
        assert task in completed.stdout


def test_task_help_shows_the_task_defaults(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["forecast", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    # The lecture notes' model: Elman cells, 50 units, dropout 0.2.
    assert "(default: elman)" in text
    assert "(default: 50)" in text
    assert "(default: 0.2)" in text
    assert "--window" in text


def test_unknown_task_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["nonsense"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'nonsense'" in error
    for task in TASKS:
        assert task in error


def test_unknown_option_is_refused_with_the_valid_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["forecast", "--unitz", "3"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "unrecognized arguments: --unitz 3" in error
    assert "--units" in error and "--window" in error


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (
            ["--units", "0"],
            "argument --units: must be a positive integer; received '0'",
        ),
        (
            ["--dropout", "1.5"],
            "argument --dropout: must be a number in [0, 1); received '1.5'",
        ),
        (
            ["--learning-rate", "nan"],
            "argument --learning-rate: must be a positive number",
        ),
        (
            ["--window", "0"],
            "argument --window: must be a positive integer; received '0'",
        ),
        (["--cell", "rnn"], "argument --cell: invalid choice: 'rnn'"),
        (["--strategy", "tpu"], "argument --strategy: invalid choice: 'tpu'"),
        (
            ["--data", "mnist"],
            "argument --data: invalid choice: 'mnist' (choose from embedded)",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_option(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_config(["forecast", *argv])
    assert exit_info.value.code == 2
    assert fragment in " ".join(capsys.readouterr().err.split())


def test_precedence_defaults_then_quick_then_typed():
    forecast = load_task("forecast")
    _, plain = cli.parse_config(["forecast"])
    assert plain.units == forecast.DEFAULTS["units"] == 50
    assert plain.cell == "elman" and plain.window == 12
    assert plain.clipnorm is None and plain.shuffle is True
    assert plain.out == "runs/forecast"

    _, quick = cli.parse_config(["forecast", "--quick"])
    assert quick.units == forecast.QUICK["units"] == 8
    assert quick.window == forecast.QUICK["window"]

    # What the user types wins even over --quick, in any order.
    _, typed = cli.parse_config(
        [
            "forecast",
            "--units",
            "5",
            "--quick",
            "--window",
            "3",
            "--cell",
            "gru",
        ]
    )
    assert (typed.units, typed.window, typed.cell, typed.quick) == (
        5,
        3,
        "gru",
        True,
    )
    assert typed.epochs == forecast.QUICK["epochs"]


def test_a_registered_task_without_its_module_is_reported(monkeypatch, capsys):
    monkeypatch.setitem(TASKS, "ghost", "pipelines.tasks.ghost")
    with pytest.raises(SystemExit):
        cli.parse_config(["ghost"])
    assert (
        "task 'ghost' is registered but its module pipelines.tasks.ghost"
        in (capsys.readouterr().err)
    )


def test_load_task_refuses_unknown_names():
    with pytest.raises(
        ValueError, match=r"Argument `task` must be one of .*Received: task='x'"
    ):
        load_task("x")


@pytest.mark.parametrize("name", ["forecast", "classify", "charlm", "tag"])
def test_task_modules_follow_the_contract(name):
    task = load_task(name)
    assert isinstance(task.DESCRIPTION, str) and task.DESCRIPTION
    assert next(iter(task.DATA_SOURCES)) == "embedded"
    assert set(task.QUICK) <= set(task.DEFAULTS)
    assert callable(task.run)
