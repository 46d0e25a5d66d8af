"""tf.distribute: MirroredStrategy over two logical CPUs, and two workers.

With the data order fixed (`--no-shuffle`), no dropout, and batches that
split evenly across the replicas, data-parallel training computes the same
mean gradient as one device, so both strategies must end with the weights
of a single-device run of the same command (the reference). g2p's loss is a
mean over the real target tokens of the global batch, so its replicas may
hold different numbers of tokens and still follow one device.
"""

import json
import random
import socket
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest

from kerasrnn_pipelines.distributed import make_strategy
from kerasrnn_pipelines.options import ConfigError, read_tf_config
from kerasrnn_pipelines.run_directory import RunDirectoryError, is_chief_process
from tests.isolated import REPOSITORY, subprocess_env
from tests.pipelines.conftest import read_metrics

# 216 training windows (1705-1920) in 9 batches of 24: 12 per replica, for
# two epochs of 8 units. The runs end with the moving average of the
# weights, which every strategy's loop must hand over to the model.
COMMAND = [
    "forecast",
    "--quick",
    "--epochs",
    "2",
    "--units",
    "8",
    "--dropout",
    "0",
    "--window",
    "5",
    "--batch-size",
    "24",
    "--no-shuffle",
    "--ema-momentum",
    "0.9",
]

TWO_LOGICAL_CPUS = textwrap.dedent(
    """
    import sys
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from kerasrnn_pipelines.cli import main

    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.fixture(scope="module")
def single_device(tmp_path_factory):
    from kerasrnn_pipelines.cli import main

    out = tmp_path_factory.mktemp("single")
    assert main([*COMMAND, "--out", str(out)]) == 0
    return keras.saving.load_model(out / "model.keras").get_weights()


def run_python(*arguments, timeout=600):
    """Run the interpreter on `arguments` in the repository; return its stdout."""
    completed = subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=subprocess_env(),
        timeout=timeout,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def assert_same_weights(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_mirrored_over_two_logical_cpus_matches_one_device(
    tmp_path, single_device
):
    out = tmp_path / "mirrored"
    run_python(
        "-c", TWO_LOGICAL_CPUS, *COMMAND, "--strategy", "mirrored", "--out", str(out)
    )
    assert read_metrics(out)["replicas"] == 2
    assert_same_weights(
        keras.saving.load_model(out / "model.keras").get_weights(),
        single_device,
    )


def free_ports(count):
    """`count` ports to serve the workers on, below the kernel's ephemeral
    range: a port from that range (what binding port 0 returns) can be handed
    to a worker's outgoing connection before the other worker binds it, and
    the worker that cannot bind leaves its peer waiting for it."""
    ports = []
    for port in random.Random().sample(range(20000, 32000), 1000):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise RuntimeError("no free ports between 20000 and 32000")


def run_two_workers(tmp_path, command, timeout=600):
    """Run `command` as workers 0 and 1 of a localhost cluster; return its
    `--out`. Each worker's scratch directory is `tmp_path / scratchN`.

    Both workers share one deadline. If either fails or the deadline
    passes, both are stopped and the failure shows both workers' output
    (a worker that dies leaves its peer waiting in a collective).
    """
    out = tmp_path / "multiworker"
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    processes, logs = [], []
    for index in range(2):
        scratch = tmp_path / f"scratch{index}"
        scratch.mkdir()
        env = subprocess_env()
        env["TMPDIR"] = str(scratch)
        env["PYTHONUNBUFFERED"] = "1"
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}
        )
        logs.append(tmp_path / f"worker{index}.log")
        with open(logs[-1], "w") as log:
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "kerasrnn_pipelines",
                        *command,
                        "--strategy",
                        "multiworker",
                        "--out",
                        str(out),
                    ],
                    cwd=REPOSITORY,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [process.poll() for process in processes]
        if None not in codes or any(code not in (None, 0) for code in codes):
            break
        time.sleep(0.5)
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()
    codes = [process.returncode for process in processes]
    if codes != [0, 0]:
        report = "\n".join(
            f"--- worker {index} (exit {code}):\n{log.read_text()[-3000:]}"
            for index, (code, log) in enumerate(zip(codes, logs))
        )
        pytest.fail(f"workers did not both finish within {timeout} s\n{report}")
    assert read_metrics(out)["replicas"] == 2
    return out


WORKERS = {"worker": ["host0:1", "host1:1"]}


@pytest.mark.parametrize(
    "tf_config, place, chief",
    [
        ({"cluster": WORKERS, "task": {"type": "worker", "index": 0}}, ("worker", 0), True),
        ({"cluster": WORKERS, "task": {"type": "worker", "index": 1}}, ("worker", 1), False),
        # TensorFlow's default index is 0; a cluster with a chief makes it the
        # chief, and worker 0 then one of the others.
        ({"cluster": {"chief": ["host0:1"], **WORKERS}, "task": {"type": "chief"}},
         ("chief", 0), True),
        ({"cluster": {"chief": ["host0:1"], **WORKERS}, "task": {"type": "worker"}},
         ("worker", 0), False),
    ],
)
def test_tf_config_names_this_process_and_whether_it_writes(monkeypatch, tf_config, place, chief):
    value = json.dumps(tf_config)
    read = read_tf_config(value)
    assert (read.kind, read.index) == place and read.cluster == tf_config["cluster"]
    monkeypatch.setenv("TF_CONFIG", value)
    assert is_chief_process("multiworker") is chief
    assert is_chief_process("default") is True


@pytest.mark.parametrize(
    "value",
    [
        "workers",
        "[1, 2]",
        json.dumps({"cluster": WORKERS}),
        json.dumps({"task": {"type": "worker", "index": 0}}),
        json.dumps({"cluster": ["host0:1"], "task": {"type": "worker"}}),
        json.dumps({"cluster": WORKERS, "task": {"type": "worker", "index": "first"}}),
        json.dumps({"cluster": WORKERS, "task": {"index": 0}}),
    ],
)
def test_an_unreadable_tf_config_is_refused_in_one_line_everywhere(monkeypatch, value):
    message = (
        "argument --strategy: 'multiworker' needs TF_CONFIG to be a JSON object "
        "with a \"cluster\" and this process's \"task\" (its \"type\" and \"index\"); "
        f"received TF_CONFIG={value!r}"
    )
    with pytest.raises(ConfigError) as error:
        read_tf_config(value)
    assert str(error.value) == message
    monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(RunDirectoryError) as error:
        is_chief_process("multiworker")
    assert str(error.value) == message
    with pytest.raises(ValueError) as error:
        make_strategy("multiworker")
    assert str(error.value) == message


def test_multiworker_without_tf_config_is_refused(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG is not set"):
        make_strategy("multiworker")
    with pytest.raises(ValueError, match="Received: strategy='tpu'"):
        make_strategy("tpu")


# g2p's step decay over three epochs and its per-token loss: 400 words in
# unevenly filled length buckets, so replicas see different token counts;
# and a moving average of the weights, which fit copies into the model at
# the end. The model and rate are spelled out: --quick's own train a larger
# model.
G2P_COMMAND = [
    "g2p",
    "--quick",
    "--units",
    "32",
    "--embedding",
    "16",
    "--learning-rate",
    "3e-3",
    "--epochs",
    "3",
    "--limit",
    "400",
    "--batch-size",
    "32",
    "--no-shuffle",
    "--ema-momentum",
    "0.9",
]


def learning_rates(out):
    with open(out / "history.csv") as handle:
        header, *rows = [line.strip().split(",") for line in handle]
    return [float(row[header.index("learning_rate")]) for row in rows]


@pytest.mark.slow
def test_g2p_on_two_workers_keeps_its_schedule_and_matches_one_device(tmp_path):
    from kerasrnn_pipelines.cli import main

    single = tmp_path / "single"
    assert main([*G2P_COMMAND, "--out", str(single)]) == 0
    out = run_two_workers(tmp_path, G2P_COMMAND)
    # Held two epochs, then halved: the task's callback ran on the workers.
    np.testing.assert_allclose(learning_rates(out), [3e-3, 3e-3, 1.5e-3], rtol=1e-6)
    assert learning_rates(out) == learning_rates(single)
    assert_same_weights(
        keras.saving.load_model(out / "model.keras").get_weights(),
        keras.saving.load_model(single / "model.keras").get_weights(),
    )
    # Worker 1 wrote only to its scratch directory, never to --out.
    (worker_dir,) = (tmp_path / "scratch1").glob("kerasrnn-worker-*")
    assert not (worker_dir / "metrics.json").exists()
    # Both workers' last epochs ended with the same weights (before the
    # average replaced them in the model).
    worker, chief_last_epoch = (keras.saving.load_model(out / "model.keras") for _ in range(2))
    worker.load_weights(worker_dir / "last_good.weights.h5")
    chief_last_epoch.load_weights(out / "last_good.weights.h5")
    for a, b in zip(worker.get_weights(), chief_last_epoch.get_weights()):
        np.testing.assert_array_equal(a, b)
    with open(out / "history.csv") as handle:
        assert [line.split(",")[0] for line in handle][1:] == ["1", "2", "3"]


UNEVEN_TOKENS_STEP = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras
    import kerasrnn
    from kerasrnn import seq2seq

    # Replica 0 gets rows 0-1 (5 real target tokens), replica 1 rows 2-3 (2).
    source = np.array([[3, 4, 5], [4, 5, 0], [5, 3, 0], [3, 0, 0]], np.int32)
    target = np.array([[3, 4, 5], [4, 5, 0], [5, 0, 0], [3, 0, 0]], np.int32)
    data = tf.data.Dataset.from_tensor_slices((source, target)).batch(4).map(
        seq2seq.teacher_forcing_pair
    )

    def one_step(strategy):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = seq2seq.Seq2Seq(6, 6, kerasrnn.GRUCell(3), embedding_dim=2)
            model.compile(keras.optimizers.SGD(1.0), seq2seq.SequenceCrossEntropy())
        model.fit(data, epochs=1, verbose=0)
        return model.get_weights()

    single = one_step(tf.distribute.get_strategy())
    mirrored = one_step(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    print(max(float(np.max(np.abs(a - b))) for a, b in zip(single, mirrored)))
    """
)


@pytest.mark.slow
def test_sequence_loss_averages_over_the_global_batch_tokens():
    # Averaging each replica's own tokens would weight replica 1's two
    # tokens like replica 0's five: a different gradient from one device.
    largest_difference = run_python("-c", UNEVEN_TOKENS_STEP).split()[-1]
    assert float(largest_difference) < 1e-6
