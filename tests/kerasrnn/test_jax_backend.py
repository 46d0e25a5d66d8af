"""The cells on Keras's JAX backend, against the same NumPy references.

Keras fixes its backend when it is first imported, so the rest of the suite
stays on TensorFlow and this test runs a selection of the cell, conversion
and parameter tests again in a subprocess with `KERAS_BACKEND=jax`: the seed
equations with masks, `Bidirectional`, `StackedRNNCells` and dropout,
`param_count` and `explain_params`, `from_keras`/`to_keras` with their
configurations, and the `.keras` round trip. Each selected test compares
with its NumPy reference as it does on TensorFlow; the selection is small so
that the subprocess takes a minute or two.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = [
    "tests/kerasrnn/cells/test_equations.py",
    "tests/kerasrnn/cells/test_contract.py",
    "tests/kerasrnn/test_convert.py",
    "tests/kerasrnn/test_params.py",
]
# One clause per test function: which of its parameter sets run on JAX.
SELECTION = [
    "test_sequence_and_final_state_match_the_seed_equations and "
    "(leaky-learned or lstm] or gru] or gru-reset-after)",
    "test_masks_skip_padding_and_mid_sequence_steps and (elman] or lstm])",
    "test_bidirectional_every_merge_mode and (lstm-concat or gru-None)",
    "test_stacked_cells_feed_each_other",
    "test_dropout_only_when_training_with_one_mask_per_sequence and "
    "(leaky-learned or lstm] or gru-reset-after)",
    "test_keras_file_round_trip",
    "test_every_constructor_argument_survives_get_config",
    "test_from_keras_layer_and_back and (lstm or gru_reset_before)",
    "test_bidirectional_from_keras",
    "test_to_keras_lstm_config_recreates_the_forget_bias and 2.0",
    "test_from_keras_lstm_config_recreates_the_forget_bias and True-initializer3",
    "test_worked_examples_in_explain_params_and_summary and exam-kerasrnn",
    "test_bidirectional_stacked_and_embedding_breakdown",
]
# How many tests the selection runs, so that a renamed test cannot silently
# drop out of it.
SELECTED = 24


@pytest.mark.slow
def test_cells_conversion_and_accounting_on_the_jax_backend():
    environment = {**os.environ, "KERAS_BACKEND": "jax"}
    arguments = [
        "-p", "no:cacheprovider", "-o", "addopts=", "-q",
        "-W", "ignore::UserWarning",
        "-k", " or ".join(f"({clause})" for clause in SELECTION),
        *FILES,
    ]
    # Asserts the backend in the process that runs the tests.
    program = (
        "import sys, keras, pytest\n"
        "assert keras.backend.backend() == 'jax', keras.backend.backend()\n"
        f"sys.exit(pytest.main({arguments!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=environment,
        capture_output=True, text=True, timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed.group(1)) == SELECTED, output[-3000:]
    assert "failed" not in output.splitlines()[-1]
