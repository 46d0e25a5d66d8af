"""Shared fixtures of the pipeline tests: running the command line, and
serving a SavedModel in a process that cannot import kerasrnn."""

import json
import pathlib

import numpy as np
import pytest

from tests.isolated import PROJECT, run_without

# Serves from TensorFlow alone: the process cannot import kerasrnn or
# kerasrnn_pipelines.
SERVE_PROGRAM = """
import sys

import numpy as np
import tensorflow as tf

saved_model, inputs, outputs = sys.argv[1:4]
served = tf.saved_model.load(saved_model)
np.save(outputs, served.serve(tf.constant(np.load(inputs))).numpy())
"""


@pytest.fixture
def serve_without_kerasrnn(tmp_path):
    """`serve(saved_model_dir, inputs) -> outputs` in a kerasrnn-free process."""

    def serve(saved_model, inputs):
        inputs_path = tmp_path / "serve_inputs.npy"
        outputs_path = tmp_path / "serve_outputs.npy"
        np.save(inputs_path, inputs)
        run_without(PROJECT, SERVE_PROGRAM, saved_model, inputs_path, outputs_path)
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
