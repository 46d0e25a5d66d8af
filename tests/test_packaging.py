"""The distribution installs `kerasrnn` and the pipelines as `kerasrnn_pipelines`, and
`import kerasrnn` warns beside a TensorFlow or Keras the test suite has not run on.

The version checks read real distribution metadata, written in a temporary folder put first
on the path, where `importlib.metadata` finds it before the installed packages'.
"""

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

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


def test_the_dependencies_floors_are_the_oldest_tested_minors_without_a_cap():
    from kerasrnn import versions

    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["data"]]
    ranges = {
        requirement.split(">=")[0]: requirement.split(">=")[1]
        for requirement in requirements
        if requirement.startswith(("tensorflow>=", "keras>=", "tensorboard>="))
    }
    oldest = {package: "{}.{}".format(*versions.TESTED[package][0]) for package in versions.TESTED}
    # No cap: none is known to break, and the import warns beside an untested release.
    assert ranges == {**oldest, "tensorboard": oldest["tensorflow"]}


def test_the_tested_minors_hold_every_patch_release_and_nothing_beside():
    from kerasrnn import versions

    assert versions.is_tested("tensorflow", "2.21.3")
    assert versions.is_tested("tensorflow", "2.20.0rc1")
    assert versions.is_tested("keras", "3.16.0.dev2026102704")
    assert versions.is_tested("keras", "3.13.2")
    assert not versions.is_tested("keras", "3.12.4")
    assert not versions.is_tested("keras", "3.17.0")
    assert not versions.is_tested("tensorflow", "2.19.1")
    assert not versions.is_tested("tensorflow", "3.0.0")


def installed_metadata(folder, distribution, version):
    """A distribution's metadata as pip writes it, in `folder`."""
    info = folder / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
    )


def test_an_untested_release_gets_one_warning_naming_it_and_the_tested_ones(
    tmp_path, monkeypatch, recwarn
):
    from kerasrnn import versions

    # Found first on sys.path, this metadata is what the check reads.
    installed_metadata(tmp_path, "keras", "3.12.4")
    installed_metadata(tmp_path, "tensorflow", "2.21.3")
    monkeypatch.syspath_prepend(str(tmp_path))
    versions.warn_if_untested()
    (warning,) = [w for w in recwarn.list if w.category is UserWarning]
    assert warning.category is UserWarning
    assert str(warning.message) == (
        "kerasrnn's test suite has not run on keras 3.12.4 (tested: keras 3.13 to 3.16); "
        "it may still work. Installing a tested release avoids the risk."
    )


def test_a_patch_release_of_a_tested_minor_gets_no_warning(tmp_path, monkeypatch, recwarn):
    from kerasrnn import versions

    installed_metadata(tmp_path, "keras", "3.15.7")
    installed_metadata(tmp_path, "tensorflow", "2.21.9")
    monkeypatch.syspath_prepend(str(tmp_path))
    versions.warn_if_untested()
    assert [w for w in recwarn.list if w.category is UserWarning] == []


@pytest.mark.slow
def test_importing_kerasrnn_beside_an_untested_release_warns_once(tmp_path):
    installed_metadata(tmp_path, "tensorflow", "2.19.1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPOSITORY)])}
    completed = subprocess.run(
        [sys.executable, "-c", "import kerasrnn"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    warnings = [line for line in completed.stderr.splitlines() if "UserWarning" in line]
    assert len(warnings) == 1
    # Shown at the importing line, the first of the program.
    assert warnings[0].startswith("<string>:1: UserWarning: ")
    assert "tensorflow 2.19.1 (tested: tensorflow 2.20 to 2.21)" in warnings[0]
