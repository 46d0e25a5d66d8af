"""The distribution installs `kerasrnn` and the pipelines as `kerasrnn_pipelines`."""

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import tomllib

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_folder_is_installed_under_its_import_name():
    setuptools = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"][
        "setuptools"
    ]
    folders = {"kerasrnn": "kerasrnn", **setuptools["package-dir"]}
    on_disk = {
        ".".join((name, *init.parent.relative_to(REPOSITORY / folder).parts))
        for name, folder in folders.items()
        for init in (REPOSITORY / folder).rglob("__init__.py")
    }
    assert folders["kerasrnn_pipelines"] == "pipelines"
    assert sorted(setuptools["packages"]) == sorted(on_disk)


def test_the_command_and_python_dash_m_run_the_installed_pipelines(tmp_path):
    from kerasrnn_pipelines import cli

    (script,) = importlib.metadata.entry_points(
        group="console_scripts", name="kerasrnn-train"
    )
    assert script.load() is cli.main
    # Outside the repository and without PYTHONPATH only the installed
    # mapping can find the package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, "-m", "kerasrnn_pipelines", "g2p", "--beam-width", "0"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        "kerasrnn-train g2p: argument --beam-width: must be a positive integer; "
        "received '0' (see kerasrnn-train g2p --help)"
    ]
