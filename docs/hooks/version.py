"""MkDocs hook: the footer names the release, read from pyproject.toml.

pyproject.toml's `[project] version` is the one place the version is
written; the site shows it as `kerasrnn 0.2.0` in every page's footer.
"""

import pathlib
import tomllib

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"


def on_config(config):
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    config.copyright = f"{project['name']} {project['version']} · {project['license']} license"
    return config
