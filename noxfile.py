"""The test matrix: the oldest supported TensorFlow and Keras, the newest, and
Keras's nightly.

    nox                 # floor, then newest
    nox -s floor        # what .ci/run adds after the README's test command
    nox -s canary       # keras-nightly: reports, never fails the run

Each session installs the project with its `dev` extra into a fresh virtual
environment under .nox/, with the Python that runs nox.
"""

import importlib.util
import pathlib
from types import ModuleType

import nox

ROOT = pathlib.Path(__file__).parent

nox.options.sessions = ["floor", "newest"]


def tested_versions() -> ModuleType:
    """kerasrnn/versions.py, read from its file: importing kerasrnn would
    import Keras, which nox's own environment need not have."""
    spec = importlib.util.spec_from_file_location(
        "kerasrnn_versions", ROOT / "kerasrnn" / "versions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def oldest(package: str) -> str:
    """`"2.20.*"`: every patch release of the oldest tested minor."""
    (major, minor), _ = tested_versions().TESTED[package]
    return f"{major}.{minor}.*"


@nox.session
def floor(session: nox.Session) -> None:
    """The oldest TensorFlow and Keras of the ranges (TensorBoard follows
    TensorFlow): the fast suite. `.ci/run` says what it costs."""
    session.install(
        "-e", ".[dev]",
        f"tensorflow=={oldest('tensorflow')}",
        f"tensorboard=={oldest('tensorflow')}",
        f"keras=={oldest('keras')}",
    )
    session.run("python", "-m", "pytest", "-m", "not slow", *session.posargs)


@nox.session
def newest(session: nox.Session) -> None:
    """The newest releases the ranges admit: the README's test command."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(default=False)
def canary(session: nox.Session) -> None:
    """Keras's nightly in place of its release, on the newest TensorFlow:
    the fast suite, whose failures are reported and do not fail the run
    (pytest's exit status 1, failed tests, is accepted; an error that stops
    the run is not)."""
    session.install("-e", ".[dev]")
    # keras-nightly installs the same `keras` package: the release goes first.
    session.run("python", "-m", "pip", "uninstall", "--yes", "keras")
    session.install("--pre", "keras-nightly")
    session.run(
        "python", "-m", "pytest", "-m", "not slow", *session.posargs, success_codes=[0, 1]
    )
