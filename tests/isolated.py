"""Python run in a fresh interpreter that cannot import given packages.

What must work without a package (a SavedModel served without kerasrnn,
the cells without TensorFlow) is proved in a subprocess whose first act is
to put a finder at the front of `sys.meta_path` that makes importing any of
the `blocked` top-level packages, or their submodules, raise ImportError.
A program that needed one of them fails there, whoever imported it.

    completed = run_without(PROJECT, "import tensorflow as tf; ...", path)
    result = last_json(completed)
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]

#: The repository's own packages: what a served model must not need.
PROJECT = ("kerasrnn", "kerasrnn_pipelines")

#: What the LiteRT example client (`examples/g2p_litert.py`) runs without:
#: of kerasrnn it imports only the bucket routing, which needs neither
#: TensorFlow nor Keras.
CLIENT_WITHOUT = ("tensorflow", "keras", "kerasrnn_pipelines")

_REFUSE_IMPORTS = """\
import importlib.abc as _importlib_abc
import sys as _sys


class _RefuseImports(_importlib_abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} must not be imported here", name=name)
        return None


_sys.meta_path.insert(0, _RefuseImports())
del _importlib_abc, _sys, _RefuseImports
"""


def subprocess_env(env=None):
    """The environment of a test's subprocess.

    `env` (`os.environ` if None), copied, with TensorFlow's C++ log level
    at errors only unless it is set, and the repository first on
    `PYTHONPATH`, so that `kerasrnn`, `kerasrnn_pipelines` (through its
    installed name) and `tests.*` import from this checkout.
    """
    environment = dict(os.environ if env is None else env)
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPOSITORY), environment.get("PYTHONPATH")])
    )
    return environment


def run_without(blocked, program, *arguments, env=None, check=True, timeout=300):
    """Run `program` where importing any package in `blocked` fails.

    Args:
        blocked: Top-level package names, e.g. `PROJECT` or `("tensorflow",)`.
        program: Python source; dedented, so it may be an indented literal.
        *arguments: Its `sys.argv[1:]` (converted with `str`).
        env: The environment, completed by `subprocess_env`.
        check: Fail the calling test, showing the end of stderr, unless the
            program exits with status 0.
        timeout: Seconds before the program is killed.

    Returns:
        The `subprocess.CompletedProcess`, with text `stdout` and `stderr`.
    """
    source = _REFUSE_IMPORTS.format(blocked=tuple(blocked)) + textwrap.dedent(program)
    completed = subprocess.run(
        [sys.executable, "-c", source, *map(str, arguments)],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        cwd=REPOSITORY,
        timeout=timeout,
    )
    if check:
        assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def last_json(completed):
    """The JSON value the program printed on its last line of stdout."""
    return json.loads(completed.stdout.strip().splitlines()[-1])
