"""What `kerasrnn-train` prints: one plain line per epoch in a file, Keras's
progress bar on a terminal, TensorFlow's start-up held back unless asked
for, and the summary a run ends with."""

import json
import os
import pty
import re
import shlex
import subprocess
import sys
import threading
from argparse import Namespace

import numpy as np
import pytest

from kerasrnn.native_output import LOG_LEVEL, held_back_stderr
from kerasrnn_pipelines.console import hold_back_tensorflow, summary
from tests.isolated import PROJECT, REPOSITORY, run_without, subprocess_env

# A TensorFlow C++ log line: severity, date, time, thread, `file.cc:line]`.
TENSORFLOW_LOG = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ (\S+:\d+)\]", re.MULTILINE)
EPOCH_LINE = re.compile(r"^Epoch (\d+)/(\d+): (.*) \((\d+\.\d) s\)$")


def test_tensorflow_is_held_back_unless_asked_for():
    environ = {}
    assert hold_back_tensorflow(False, environ) is True
    assert environ == {LOG_LEVEL: "2"}
    # The user's own level is theirs, whatever it is.
    for level in ("0", "3"):
        environ = {LOG_LEVEL: level}
        assert hold_back_tensorflow(False, environ) is False
        assert environ == {LOG_LEVEL: level}
    environ = {}
    assert hold_back_tensorflow(True, environ) is False
    assert environ == {}


def test_held_back_stderr_shows_what_was_written_only_on_failure(capfd):
    # Written to the descriptor, as TensorFlow's C++ writes.
    with held_back_stderr(True):
        os.write(2, b"oneDNN custom operations are on\n")
    with held_back_stderr(False):
        os.write(2, b"shown: not held back\n")
    assert capfd.readouterr().err == "shown: not held back\n"
    with pytest.raises(ImportError, match="no such task"):
        with held_back_stderr(True):
            os.write(2, b"why the import failed\n")
            raise ImportError("no such task")
    assert capfd.readouterr().err == "why the import failed\n"


def test_summary_names_the_headline_the_outputs_and_the_litert_command(tmp_path):
    (tmp_path / "history.csv").write_text("epoch,loss\n1,0.5\n")
    (tmp_path / "model.tflite").write_bytes(b"TFL3")
    (tmp_path / "figures").mkdir()
    # run.json lists an output a user has since deleted: not shown.
    record = {"task": "forecast", "outputs": ["figures", "history.csv", "model.tflite", "gone.png"]}
    (tmp_path / "run.json").write_text(json.dumps(record))
    report = {"test_rmse": 21.25, "persistence_rmse": 25.5, "worse_than_baseline": False,
              "wall_time_s": 12.34}
    lines = summary("forecast", report, ("test_rmse", "persistence_rmse", "lower"), tmp_path)
    litert = (
        "from ai_edge_litert.interpreter import Interpreter; print(Interpreter("
        f'model_path="{tmp_path}/model.tflite").get_signature_list())'
    )
    assert lines == [
        "kerasrnn-train forecast: done in 12.3 s",
        "  test_rmse 21.25 against the baseline's persistence_rmse 25.5 (lower is better): "
        "at least as good as the baseline",
        f"  outputs in {tmp_path}/: figures/, history.csv, model.tflite",
        f"  run the LiteRT model (ai-edge-litert only): python -c {shlex.quote(litert)}",
    ]
    report["worse_than_baseline"] = True
    assert summary("forecast", report, ("test_rmse", "persistence_rmse", "lower"), tmp_path)[
        1
    ].endswith("(lower is better): worse than the baseline")


def read_all(descriptor, into):
    """Drain a pty's master side until the other side closes."""
    while True:
        try:
            data = os.read(descriptor, 4096)
        except OSError:
            return
        if not data:
            return
        into.append(data)


@pytest.mark.slow
@pytest.mark.parametrize("terminal", [False, True], ids=["file", "terminal"])
def test_fit_prints_epoch_lines_in_a_file_and_the_progress_bar_on_a_terminal(
    tmp_path, monkeypatch, terminal
):
    import keras
    import tensorflow as tf

    from kerasrnn_pipelines.run_directory import claim_run_directory
    from kerasrnn_pipelines.training import RunContext

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(32, 5, 2)), rng.normal(size=(32, 1))
    train = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    validation = tf.data.Dataset.from_tensor_slices((x[:8], y[:8])).batch(8)
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((5, 2)), keras.layers.SimpleRNN(3), keras.layers.Dense(1)]
    )
    model.compile(optimizer="adam", loss="mse")
    config = Namespace(epochs=2)
    directory = claim_run_directory(tmp_path / "run", "test", {}, restart=False, overwrite=False)
    context = RunContext(config, tf.distribute.get_strategy(), directory)

    chunks = []
    if terminal:
        master, replica = pty.openpty()
        reader = threading.Thread(target=read_all, args=(master, chunks))
        reader.start()
        stream = os.fdopen(replica, "w")
    else:
        stream = open(tmp_path / "stdout.txt", "w")
    monkeypatch.setattr(sys, "stdout", stream)
    history = context.fit(model, train, validation)
    stream.close()
    monkeypatch.undo()
    if terminal:
        reader.join()
        os.close(master)
        printed = b"".join(chunks).decode()
    else:
        printed = (tmp_path / "stdout.txt").read_text()

    if terminal:
        # Keras's bar, redrawn in place; no epoch lines of ours.
        assert "\r" in printed and "\x1b[" in printed
        assert not [line for line in printed.splitlines() if EPOCH_LINE.match(line)]
        return
    assert "\r" not in printed and "\x1b" not in printed and "\b" not in printed
    lines = printed.splitlines()
    assert len(lines) == 2
    for epoch, line in enumerate(lines):
        number, total, values, _ = EPOCH_LINE.match(line).groups()
        assert (int(number), int(total)) == (epoch + 1, 2)
        logged = dict(pair.split(" ") for pair in values.split(", "))
        assert list(logged) == ["loss", "val_loss"]
        # The CSV log (history) is the reference for the printed numbers.
        for name, value in logged.items():
            assert float(value) == pytest.approx(history[name][epoch], rel=5e-4)


def train_into_a_file(tmp_path, *options):
    """`kerasrnn-train classify --quick --epochs 2`, stdout and stderr to
    files, TF_CPP_MIN_LOG_LEVEL unset: (status, stdout, stderr, out)."""
    out = tmp_path / "run"
    environment = subprocess_env()
    environment.pop(LOG_LEVEL)
    with open(tmp_path / "stdout.txt", "w") as stdout, open(tmp_path / "stderr.txt", "w") as stderr:
        status = subprocess.run(
            [sys.executable, "-m", "kerasrnn_pipelines", "classify", "--quick", "--epochs", "2",
             "--out", str(out), *options],
            stdout=stdout, stderr=stderr, cwd=REPOSITORY, env=environment, timeout=600,
        ).returncode
    return status, (tmp_path / "stdout.txt").read_text(), (tmp_path / "stderr.txt").read_text(), out


def tensorflow_start_up_sources():
    """The `file.cc:line` of each C++ line TensorFlow prints as it starts."""
    environment = subprocess_env()
    environment.pop(LOG_LEVEL)
    completed = subprocess.run(
        [sys.executable, "-c", "import tensorflow as tf; tf.config.list_physical_devices()"],
        capture_output=True, text=True, env=environment, timeout=300,
    )
    return set(TENSORFLOW_LOG.findall(completed.stderr))


@pytest.mark.slow
def test_a_run_into_a_file_prints_plain_epoch_lines_and_a_summary(tmp_path):
    status, printed, errors, out = train_into_a_file(tmp_path)
    assert status == 0, errors
    assert "\x1b" not in printed and "\r" not in printed and "\b" not in printed
    assert "absl" not in errors and "oneDNN" not in errors and "XNNPACK" not in errors
    assert not TENSORFLOW_LOG.search(errors), errors

    lines = printed.splitlines()
    history = [row.split(",") for row in (out / "history.csv").read_text().splitlines()]
    columns = history[0]
    epochs = [line for line in lines if line.startswith("Epoch ")]
    assert len(epochs) == 2
    for line, row in zip(epochs, history[1:]):
        logged = dict(pair.split(" ") for pair in EPOCH_LINE.match(line).group(3).split(", "))
        assert list(logged)[:2] == ["loss", "val_loss"]
        assert set(logged) == set(columns) - {"epoch"}
        for name, value in logged.items():
            assert float(value) == pytest.approx(float(row[columns.index(name)]), rel=5e-4)

    metrics = json.loads((out / "metrics.json").read_text())
    record = json.loads((out / "run.json").read_text())
    done = [i for i, line in enumerate(lines) if line.startswith("kerasrnn-train classify: done")]
    headline, outputs, serve, litert = lines[done[0] + 1:]
    assert headline.startswith(
        f"  test_accuracy {metrics['test_accuracy']:.4g} against the baseline's "
        f"baseline_test_accuracy {metrics['baseline_test_accuracy']:.4g} (higher is better): "
    )
    shown = [name + "/" if (out / name).is_dir() else name for name in sorted(record["outputs"])]
    assert outputs == f"  outputs in {out}/: {', '.join(shown)}"
    # The printed command serves the SavedModel in a process without kerasrnn.
    python, dash_c, program = shlex.split(serve.partition(": ")[2])
    assert (python, dash_c) == ("python", "-c")
    served = run_without(PROJECT, program).stdout
    assert re.search(r"shape=\(1, 10\), dtype=float32", served), served
    # And the LiteRT one opens model.tflite without TensorFlow either.
    assert litert.startswith("  run the LiteRT model (ai-edge-litert only): python -c ")
    python, dash_c, program = shlex.split(litert.partition(": ")[2])
    signatures = run_without(PROJECT + ("tensorflow",), program).stdout
    assert "'serving_default'" in signatures, signatures


@pytest.mark.slow
def test_verbose_shows_what_tensorflow_prints_as_it_starts(tmp_path):
    expected = tensorflow_start_up_sources()
    status, _, errors, _ = train_into_a_file(tmp_path, "--epochs", "1", "--verbose")
    assert status == 0, errors
    assert expected <= set(TENSORFLOW_LOG.findall(errors)), errors


#: TensorFlow's oneDNN notice, printed once per process at the first graph
#: that transposes a tensor of a type the processor's oneDNN lacks.
ONEDNN_NOTICE = re.compile(r"util\.cc:\d+\] oneDNN supports DT_\w+ only on platforms with")

#: A graph that transposes a boolean tensor, as a masked recurrent layer's
#: first training step does; `held` first spends the notice held back.
TRANSPOSE_A_MASK = """
import sys
from kerasrnn_pipelines.console import hold_back_tensorflow
hold_back_tensorflow(False)
import tensorflow as tf
if sys.argv[1] == "held":
    from kerasrnn_pipelines.training import print_onednn_notice_held_back
    print_onednn_notice_held_back()
mask = tf.constant([[True, False, True], [True, True, False]])
print(tf.function(lambda mask: tf.transpose(mask))(mask).shape)
"""


@pytest.mark.slow
def test_tensorflows_onednn_notice_is_held_back_where_a_run_would_print_it():
    environment = subprocess_env()
    environment.pop(LOG_LEVEL)

    def stderr_of(mode):
        completed = subprocess.run(
            [sys.executable, "-c", TRANSPOSE_A_MASK, mode],
            capture_output=True, text=True, cwd=REPOSITORY, env=environment, timeout=300,
        )
        assert (completed.returncode, completed.stdout) == (0, "(3, 2)\n"), completed.stderr
        return completed.stderr

    if not ONEDNN_NOTICE.search(stderr_of("plain")):
        pytest.skip("this processor's oneDNN takes boolean tensors: TensorFlow prints no notice")
    assert not ONEDNN_NOTICE.search(stderr_of("held"))
