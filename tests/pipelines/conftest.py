"""Shared fixtures of the pipeline tests: running the command line, and
serving a SavedModel in a process that cannot import kerasrnn."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: any import of kerasrnn or pipelines fails, so
# the SavedModel must serve from TensorFlow alone.
SERVE_WITHOUT_KERASRNN = textwrap.dedent(
    """
    import sys

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("kerasrnn", "kerasrnn_pipelines"):
                raise ImportError(f"blocked import of {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    import numpy as np
    import tensorflow as tf

    saved_model, inputs, outputs = sys.argv[1:4]
    served = tf.saved_model.load(saved_model)
    result = served.serve(tf.constant(np.load(inputs)))
    np.save(outputs, result.numpy())
    print("kerasrnn" in sys.modules, "kerasrnn_pipelines" in sys.modules)
    """
)


def subprocess_env():
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = str(REPOSITORY) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def serve_without_kerasrnn(tmp_path):
    """`serve(saved_model_dir, inputs) -> outputs` in a kerasrnn-free process."""

    def serve(saved_model, inputs):
        inputs_path = tmp_path / "serve_inputs.npy"
        outputs_path = tmp_path / "serve_outputs.npy"
        np.save(inputs_path, inputs)
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                SERVE_WITHOUT_KERASRNN,
                str(saved_model),
                str(inputs_path),
                str(outputs_path),
            ],
            capture_output=True,
            text=True,
            env=subprocess_env(),
            timeout=300,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert completed.stdout.split()[-2:] == ["False", "False"]
        return np.load(outputs_path)

    return serve


@pytest.fixture
def train(tmp_path):
    """Run `kerasrnn-train` in this process; return (exit code, out dir)."""
    from kerasrnn_pipelines.cli import main

    def run(*argv, out=None):
        out = pathlib.Path(out or tmp_path / "run")
        code = main([*argv, "--out", str(out)])
        return code, out

    return run


def read_metrics(out):
    return json.loads((pathlib.Path(out) / "metrics.json").read_text())
