"""The run directory (`kerasrnn_pipelines.run_directory`): the lock, the fingerprint,
`--restart` and `--overwrite`, the commit of the final outputs, and real
`kerasrnn-train` processes contending for one `--out`."""

import dataclasses
import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kerasrnn_pipelines import cli
from kerasrnn_pipelines.options import flag, option_spec
from kerasrnn_pipelines.run_directory import (
    OutputInTheWay,
    RunDirectoryError,
    claim_run_directory,
)
from kerasrnn_pipelines.tasks import CONFIGS, load_config_class
from kerasrnn_pipelines.tasks.options.forecast_config import ForecastConfig
from tests.isolated import REPOSITORY, subprocess_env
from tests.pipelines.conftest import read_metrics

FINGERPRINT = {"units": 8, "learning_rate": 0.001, "seed": 0}


def claim(path, task="forecast", fingerprint=FINGERPRINT, *, start=True, **flags):
    """A claim of `path`; with `start`, the run begun too, as its first
    write (`start_staging`) begins it."""
    directory = claim_run_directory(
        path,
        task,
        fingerprint,
        restart=flags.get("restart", False),
        overwrite=flags.get("overwrite", False),
        strategy=flags.get("strategy", "default"),
        outputs=flags.get("outputs"),
    )
    if start and not directory.complete:
        directory.start_staging()
    return directory


def snapshot(path):
    """Every entry below `path` with its size and modification time."""
    return {
        str(entry.relative_to(path)): (
            entry.stat().st_size,
            entry.stat().st_mtime_ns,
        )
        for entry in sorted(path.rglob("*"))
    }


def contents(path):
    """Every entry below `path`: a file's bytes, None for a folder."""
    return {
        str(entry.relative_to(path)): (
            None if entry.is_dir() else entry.read_bytes()
        )
        for entry in sorted(path.rglob("*"))
    }

def refusal(path, **kwargs):
    """The message with which a claim is refused; the directory untouched."""
    before = snapshot(path)
    with pytest.raises(RunDirectoryError) as error:
        claim(path, **kwargs)
    assert snapshot(path) == before
    message = str(error.value)
    assert "\n" not in message
    return message


def unfinished_run(path, task="forecast", fingerprint=FINGERPRINT):
    """What a run killed after two epochs leaves, beside a user's file."""
    claim(path, task, fingerprint).release()
    generation = path / "backup" / "epoch-000002"
    generation.mkdir(parents=True)
    (generation / "model.weights.h5").write_bytes(b"weights")
    (path / "history_raw.csv").write_text("epoch,loss\n0,1.0\n1,0.5\n")
    (path / "notes.txt").write_text("the user's own file")


def finished_run(path, task="forecast", fingerprint=FINGERPRINT):
    """A run that committed `model.keras`, `saved_model/` and metrics."""
    directory = claim(path, task, fingerprint)
    staging = directory.start_staging()
    (staging / "model.keras").write_bytes(b"model")
    (staging / "saved_model").mkdir()
    (staging / "saved_model" / "saved_model.pb").write_bytes(b"graph")
    directory.backup_dir.mkdir(exist_ok=True)
    directory.commit(json.dumps({"task": task}))
    directory.release()


def test_a_new_directory_is_created_locked_and_recorded(tmp_path):
    out = tmp_path / "runs" / "first"
    directory = claim(out)
    assert (out / ".lock").read_text() == f"{os.getpid()}\n"
    # A data file like any other: readable and writable as the umask allows,
    # never executable.
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(out / ".lock").st_mode & 0o777 == 0o666 & ~umask
    assert json.loads((out / "run.json").read_text()) == {
        "task": "forecast",
        "fingerprint": FINGERPRINT,
        "outputs": [],
    }
    assert not directory.complete and directory.chief
    assert directory.work_dir == out
    directory.release()
    with claim(out) as again:  # the same run, resumable
        assert not again.complete


HOLD_THE_DIRECTORY = textwrap.dedent(
    """
    import sys, time
    from kerasrnn_pipelines.run_directory import claim_run_directory

    held = claim_run_directory(
        sys.argv[1], "forecast", {"units": 8, "learning_rate": 0.001,
        "seed": 0}, restart=False, overwrite=False,
    )
    print("claimed", flush=True)
    time.sleep(600)
    """
)


def test_a_held_directory_is_refused_naming_the_holder_until_it_dies(
    tmp_path,
):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_DIRECTORY, str(out)],
        cwd=REPOSITORY,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "claimed\n"
        message = refusal(out)
        assert message == (
            f"--out {out} is in use by another run (process {holder.pid}); "
            "wait for it to finish or pass another --out"
        )
        # Even --restart and --overwrite may not take a held directory.
        refusal(out, restart=True, overwrite=True)
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the lock of the killed holder.
    directory = claim(out)
    assert (out / ".lock").read_text() == f"{os.getpid()}\n"
    directory.release()


def test_other_options_are_refused_with_what_differs_and_restart_discards(
    tmp_path,
):
    unfinished_run(tmp_path)
    changed = dict(FINGERPRINT, seed=1, learning_rate=0.01)
    message = refusal(tmp_path, fingerprint=changed)
    assert message == (
        f"--out {tmp_path} holds an unfinished forecast run with other "
        "options: --learning-rate 0.001 there, 0.01 now; --seed 0 there, "
        "1 now. Rerun with its options to resume it, or start fresh: "
        "another --out, or --restart (discards that run)"
    )
    assert "damaged" not in message
    directory = claim(tmp_path, fingerprint=changed, restart=True)
    assert not directory.backup_dir.exists()
    assert not (tmp_path / "history_raw.csv").exists()
    assert (tmp_path / "notes.txt").exists()
    assert json.loads((tmp_path / "run.json").read_text())["fingerprint"] == (
        changed
    )


def test_another_tasks_run_is_refused_and_never_offered_for_deletion(
    tmp_path,
):
    finished = tmp_path / "finished"
    finished_run(finished, task="g2p")
    for flags in ({}, {"restart": True}):
        message = refusal(finished, **flags)
        assert message == (
            f"--out {finished} holds a finished g2p run, not this forecast "
            "run; pass another --out"
        )
    unfinished = tmp_path / "unfinished"
    unfinished_run(unfinished, task="g2p")
    message = refusal(unfinished)
    assert "holds an unfinished g2p run" in message
    for word in ("damaged", "delete", "--restart", "--overwrite"):
        assert word not in message


def test_overwrite_removes_what_another_tasks_run_wrote_and_keeps_other_files(
    tmp_path,
):
    finished_run(tmp_path, task="g2p")
    (tmp_path / "notes.txt").write_text("the user's own file")
    directory = claim(tmp_path, overwrite=True)
    assert not directory.complete
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [
        ".lock",
        ".outputs.partial",
        "notes.txt",
        "run.json",
    ]
    assert json.loads((tmp_path / "run.json").read_text())["task"] == (
        "forecast"
    )


def test_a_directory_without_a_run_needs_overwrite(tmp_path):
    (tmp_path / "notes.txt").write_text("the user's own file")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.keras").write_bytes(b"\x00mine")
    users = contents(tmp_path)
    message = refusal(tmp_path)
    assert message == (
        f"--out {tmp_path} is not empty (model, notes.txt) and holds no "
        "kerasrnn run; pass a new or empty --out, or --overwrite to write "
        "this run beside those files (it removes none of them)"
    )
    claim(tmp_path, overwrite=True).release()
    assert {name: contents(tmp_path)[name] for name in users} == users
    with claim(tmp_path) as directory:  # now this run's
        assert directory.fingerprint == FINGERPRINT


@pytest.mark.parametrize(
    "flags", [{}, {"overwrite": True}, {"restart": True},
              {"overwrite": True, "restart": True}],
)
def test_a_users_entries_under_a_runs_names_are_never_removed(tmp_path, flags):
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "important.txt").write_text("mine\n")
    (tmp_path / "metrics.json").write_text('{"mine": 1}')
    (tmp_path / "notes.txt").write_text("keep\n")
    before = contents(tmp_path)
    message = refusal(tmp_path, **flags)
    assert message == (
        f"--out {tmp_path} holds no kerasrnn run (no run.json), and backup/, "
        "metrics.json in it take names a run writes; nothing was changed "
        "(--overwrite removes only what a run wrote): move them out of --out "
        "or pass another --out"
    )
    assert contents(tmp_path) == before


@pytest.mark.parametrize("text", ["{not json", '{"outputs": ["notes.txt"]}', "[]"])
def test_a_run_json_no_run_wrote_is_never_replaced(tmp_path, text):
    (tmp_path / "run.json").write_text(text)
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "important.txt").write_text("mine\n")
    (tmp_path / "notes.txt").write_text("keep\n")
    before = contents(tmp_path)
    for flags in ({}, {"overwrite": True}, {"restart": True}):
        assert refusal(tmp_path, **flags) == (
            f"--out {tmp_path} holds a run.json that no kerasrnn run wrote, "
            "not this forecast run; pass another --out (--overwrite never "
            "replaces it)"
        )
    assert contents(tmp_path) == before


def test_a_record_still_in_flight_is_not_someone_elses_file(tmp_path, monkeypatch):
    # What a chief in the middle of writing run.json shows a worker that
    # starts beside it, and what a kill at that moment leaves for the rerun.
    (tmp_path / ".partial-run.json").write_text('{"task": "forec')
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}),
    )
    worker = claim(tmp_path, strategy="multiworker")
    assert not worker.chief
    monkeypatch.delenv("TF_CONFIG")
    with claim(tmp_path) as directory:
        assert directory.chief and not directory.complete
    assert json.loads((tmp_path / "run.json").read_text())["task"] == "forecast"


def test_a_refused_claim_waits_for_the_holder_to_write_its_process_id(tmp_path):
    claim(tmp_path).release()
    # Hold the lock the way a claim does before it has written its id.
    with open(tmp_path / ".lock", "r+") as held:
        held.truncate()
        fcntl.flock(held, fcntl.LOCK_EX)
        writer = threading.Timer(0.2, lambda: (held.write("4242\n"), held.flush()))
        writer.start()
        try:
            with pytest.raises(RunDirectoryError, match=r"\(process 4242\)"):
                claim(tmp_path)
        finally:
            writer.join()


def test_overwrite_never_discards_a_run_of_this_task_and_restart_does(tmp_path):
    unfinished_run(tmp_path)
    changed = dict(FINGERPRINT, seed=1)
    assert refusal(tmp_path, overwrite=True) == (
        f"--out {tmp_path} holds an unfinished forecast run with these "
        "options; --overwrite never discards a run of this task: rerun "
        "without --overwrite to resume it, or --restart to discard it and "
        "start over"
    )
    assert refusal(tmp_path, fingerprint=changed, overwrite=True) == (
        f"--out {tmp_path} holds an unfinished forecast run with other "
        "options: --seed 0 there, 1 now; --overwrite never discards a run of "
        "this task: rerun with its options (without --overwrite) to resume "
        "it, pass another --out, or --restart to discard it and start over"
    )
    # --restart discards it whatever the options, the user's file kept.
    for fingerprint in (FINGERPRINT, changed):
        if fingerprint is changed:
            unfinished_run(tmp_path)
        claim(
            tmp_path, fingerprint=fingerprint, restart=True, overwrite=True
        ).release()
        assert sorted(entry.name for entry in tmp_path.iterdir()) == [
            ".lock",
            ".outputs.partial",
            "notes.txt",
            "run.json",
        ]
        assert (tmp_path / "notes.txt").read_text() == "the user's own file"


@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_out_is_refused(out, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDirectoryError, match="^--out is empty; pass"):
        claim(out)
    assert list(tmp_path.iterdir()) == []


def test_an_out_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirectoryError) as error:
        claim(tmp_path / "file" / "run")
    assert str(error.value) == (
        f"--out {tmp_path / 'file' / 'run'} cannot be used: Not a directory"
    )


def test_a_commit_puts_every_output_in_place_before_the_backup_goes(
    tmp_path,
):
    finished_run(tmp_path)
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [
        ".lock",
        "metrics.json",
        "model.keras",
        "run.json",
        "saved_model",
    ]
    assert (tmp_path / "saved_model" / "saved_model.pb").read_bytes() == (
        b"graph"
    )
    assert json.loads((tmp_path / "run.json").read_text())["outputs"] == [
        "metrics.json",
        "model.keras",
        "saved_model",
    ]
    directory = claim(tmp_path)
    assert directory.complete
    directory.release()
    # --restart removes every output the record lists, not just the usual.
    directory = claim(tmp_path, restart=True)
    assert not directory.complete
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [
        ".lock",
        ".outputs.partial",
        "run.json",
    ]


def test_a_discard_removes_only_entries_of_the_directory(tmp_path):
    out = tmp_path / "run"
    finished_run(out)
    (tmp_path / "precious").write_text("kept")
    record = json.loads((out / "run.json").read_text())
    record["outputs"] += ["", ".", "..", "../precious", str(tmp_path), 7]
    (out / "run.json").write_text(json.dumps(record))
    claim(out, restart=True).release()
    assert (tmp_path / "precious").read_text() == "kept"
    assert sorted(entry.name for entry in out.iterdir()) == [
        ".lock",
        ".outputs.partial",
        "run.json",
    ]


def test_a_commit_never_replaces_an_entry_no_run_wrote(tmp_path):
    (tmp_path / "model.keras").write_bytes(b"the user's model")
    directory = claim(tmp_path, overwrite=True)
    staging = directory.start_staging()
    (staging / "model.keras").write_bytes(b"model")
    (staging / "history.csv").write_text("epoch,loss\n1,0.5\n")
    directory.backup_dir.mkdir()
    before = contents(tmp_path)
    with pytest.raises(OutputInTheWay) as error:
        directory.commit(json.dumps({"task": "forecast"}))
    assert str(error.value) == (
        f"--out {tmp_path} holds model.keras, which no kerasrnn run wrote, "
        "where this run puts its outputs; nothing was replaced: the outputs "
        f"wait in {staging} and the training state in {tmp_path / 'backup'}. "
        "Move it out of --out and rerun with the same options (without "
        "--overwrite) to put the outputs in place"
    )
    assert contents(tmp_path) == before
    directory.release()
    (tmp_path / "model.keras").rename(tmp_path.parent / "users.keras")
    finished_run(tmp_path)  # the rerun resumes and commits
    assert (tmp_path / "model.keras").read_bytes() == b"model"


def test_a_run_killed_while_committing_keeps_its_outputs_listed(tmp_path):
    directory = claim(tmp_path)
    staging = directory.start_staging()
    (staging / "model.keras").write_bytes(b"model")
    (staging / "history.csv").write_text("epoch,loss\n1,0.5\n")
    directory.backup_dir.mkdir()
    # What a kill after the record and the first rename leaves.
    outputs = ["history.csv", "metrics.json", "model.keras"]
    (tmp_path / "run.json").write_text(
        json.dumps({**directory.record(outputs)})
    )
    (staging / "model.keras").rename(tmp_path / "model.keras")
    directory.release()
    with claim(tmp_path) as resumed:  # the same command, run again
        assert not resumed.complete
    assert json.loads((tmp_path / "run.json").read_text())["outputs"] == outputs
    finished_run(tmp_path)  # its commit may replace its own model.keras
    claim(tmp_path, restart=True).release()
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [
        ".lock",
        ".outputs.partial",
        "run.json",
    ]


def test_a_kill_right_after_metrics_leaves_a_complete_run(tmp_path):
    finished_run(tmp_path)
    # What a kill between metrics.json and the backup's removal leaves.
    (tmp_path / "backup" / "epoch-000002").mkdir(parents=True)
    (tmp_path / ".outputs.partial").mkdir()
    # ...and a kill while an earlier removal of the backup was under way.
    (tmp_path / "backup.retired" / "epoch-000001").mkdir(parents=True)
    directory = claim(tmp_path)
    assert directory.complete
    for leftover in ("backup", ".outputs.partial", "backup.retired"):
        assert not (tmp_path / leftover).exists()


def test_workers_other_than_the_chief_neither_lock_nor_write(
    tmp_path, monkeypatch
):
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}}),
    )
    chief = claim(tmp_path, strategy="multiworker")
    assert chief.chief
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}),
    )
    before = snapshot(tmp_path)
    worker = claim(tmp_path, strategy="multiworker")
    assert not worker.chief and worker.lock is None
    assert worker.work_dir != tmp_path and worker.work_dir.is_dir()
    assert snapshot(tmp_path) == before
    chief.release()


def test_a_worker_follows_its_chiefs_overwrite_and_its_refusals(
    tmp_path, monkeypatch
):
    finished_run(tmp_path, task="g2p")
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}

    def as_worker(index):
        task = {"type": "worker", "index": index}
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))

    as_worker(0)
    chief = claim(tmp_path, overwrite=True, strategy="multiworker")
    as_worker(1)
    # The chief already put this run's record where the g2p run's was.
    worker = claim(tmp_path, overwrite=True, strategy="multiworker")
    assert not worker.chief
    chief.release()
    user = tmp_path / "user"
    (user / "tensorboard").mkdir(parents=True)
    with pytest.raises(
        RunDirectoryError,
        match="tensorboard/ in it takes a name a run writes; .* move it out",
    ):
        claim(user, overwrite=True, strategy="multiworker")


def train_process(out, *options):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kerasrnn_pipelines",
            "forecast",
            "--quick",
            *options,
            "--out",
            str(out),
        ],
        cwd=REPOSITORY,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def in_use_line(out, holder):
    return (
        f"kerasrnn-train forecast: --out {out} is in use by another run "
        f"(process {holder}); wait for it to finish or pass another --out"
    )


@pytest.mark.slow
def test_two_runs_started_together_one_trains_and_the_other_stops_at_once(
    tmp_path,
):
    out = tmp_path / "run"
    first, second = train_process(out), train_process(out)
    results = {}
    for process in (first, second):
        stdout, stderr = process.communicate(timeout=600)
        results[process.pid] = (process.returncode, stdout, stderr)
    codes = sorted(code for code, _, _ in results.values())
    assert codes == [0, 2], results
    (winner,) = [pid for pid, result in results.items() if result[0] == 0]
    (loser,) = [pid for pid, result in results.items() if result[0] == 2]
    assert results[loser][2].splitlines() == [in_use_line(out, winner)]
    assert results[loser][1] == ""
    metrics = read_metrics(out)
    assert metrics["task"] == "forecast"
    assert (out / "model.keras").exists() and (out / "saved_model").is_dir()
    with open(out / "history.csv") as handle:
        assert [line.split(",")[0] for line in handle][1:] == [
            str(epoch) for epoch in range(1, ForecastConfig.QUICK["epochs"] + 1)
        ]


@pytest.mark.slow
def test_a_second_run_changes_nothing_in_a_directory_in_use(tmp_path):
    out = tmp_path / "run"
    first = train_process(out, "--epochs", "30")
    try:
        # Only a hang guard: importing TensorFlow on two busy cores is slow.
        deadline = time.monotonic() + 600
        while not (out / "history_raw.csv").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run made no progress"
            time.sleep(0.05)
        # Frozen mid-training, so that any change is the second run's.
        first.send_signal(signal.SIGSTOP)
        before = snapshot(out)
        started = time.monotonic()
        second = train_process(out)
        stdout, stderr = second.communicate(timeout=600)
        assert second.returncode == 2
        assert stderr.splitlines() == [in_use_line(out, first.pid)]
        assert stdout == ""
        assert snapshot(out) == before
        # Refused before TensorFlow loads.
        assert time.monotonic() - started < 20
    finally:
        first.send_signal(signal.SIGCONT)
    stdout, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr[-3000:]
    assert read_metrics(out)["args"]["epochs"] == 30


@pytest.mark.slow
def test_the_command_line_resumes_refuses_and_restarts_by_the_rules(
    train, capsys
):
    code, out = train("forecast", "--quick")
    assert code == 0
    trained = read_metrics(out)
    capsys.readouterr()

    code, _ = train("forecast", "--quick", out=out)
    assert code == 0
    printed = capsys.readouterr().out
    assert f"the run in {out} is already complete" in printed
    first_epoch = f"Epoch 1/{ForecastConfig.QUICK['epochs']}:"
    assert first_epoch not in printed
    assert read_metrics(out) == trained

    code, _ = train("forecast", "--quick", "--seed", "1", out=out)
    assert code == 2
    error = capsys.readouterr().err
    assert error.splitlines() == [
        f"kerasrnn-train forecast: --out {out} holds a finished forecast run "
        "with other options: --seed 0 there, 1 now. Rerun with its options "
        "to keep it, or start fresh: another --out, or --restart (discards "
        "that run)"
    ]

    code, _ = train("forecast", "--quick", "--seed", "1", "--restart", out=out)
    assert code == 0
    assert first_epoch in capsys.readouterr().out
    assert read_metrics(out)["args"]["seed"] == 1

    code, _ = train("g2p", "--quick", out=out)
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"kerasrnn-train g2p: --out {out} holds a finished forecast run, not "
        "this g2p run; pass another --out"
    ]



@pytest.mark.slow
def test_overwrite_never_removes_a_users_folders_that_share_a_runs_names(
    tmp_path,
):
    out = tmp_path / "D"
    (out / "backup").mkdir(parents=True)
    (out / "tensorboard").mkdir()
    (out / "backup" / "important.txt").write_text("mine\n")
    (out / "tensorboard" / "events.mine").write_bytes(b"mine\x00\xff\n")
    (out / "notes.txt").write_text("keep\n")
    before = contents(out)
    process = train_process(out, "--epochs", "1", "--overwrite")
    stdout, stderr = process.communicate(timeout=600)
    assert (process.returncode, stdout) == (2, ""), stderr[-3000:]
    assert stderr.splitlines() == [
        f"kerasrnn-train forecast: --out {out} holds no kerasrnn run (no "
        "run.json), and backup/, tensorboard/ in it take names a run writes; "
        "nothing was changed (--overwrite removes only what a run wrote): "
        "move them out of --out or pass another --out"
    ]
    assert contents(out) == before


@pytest.mark.slow
def test_overwrite_never_discards_a_run_of_the_same_task(tmp_path):
    out = tmp_path / "F"
    out.mkdir()
    (out / "notes.txt").write_text("keep\n")
    (out / "mine").mkdir()
    (out / "mine" / "data.bin").write_bytes(bytes(range(256)))
    users = contents(out)
    # Written beside the user's own files, which it leaves as they were.
    first = train_process(out, "--epochs", "1", "--overwrite")
    stdout, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr[-3000:]
    finished = contents(out)
    assert {name: finished[name] for name in users} == users
    assert read_metrics(out)["args"]["seed"] == 0
    for options, what in [
        (
            ["--seed", "1"],
            "with other options: --seed 0 there, 1 now; --overwrite never "
            "discards a run of this task: rerun with its options (without "
            "--overwrite) to keep it, pass another --out, or --restart to "
            "discard it and start over",
        ),
        (
            [],
            "with these options; --overwrite never discards a run of this "
            "task: rerun without --overwrite to keep it, or --restart to "
            "discard it and start over",
        ),
    ]:
        second = train_process(out, "--epochs", "1", *options, "--overwrite")
        stdout, stderr = second.communicate(timeout=600)
        assert (second.returncode, stdout) == (2, ""), stderr[-3000:]
        assert stderr.splitlines() == [
            f"kerasrnn-train forecast: --out {out} holds a finished forecast "
            f"run {what}"
        ]
        assert contents(out) == finished


#: The options no task's training reads that say where and how a run goes,
#: not what it writes.
RUN_HANDLING = {"out", "strategy", "quick", "preset", "verbose", "restart", "overwrite"}

#: Each task's options that change only what a run writes after training.
OUTPUT_OPTIONS = {
    "charlm": {"sample_chars"},
    "classify": {"litert_quantize"},
    "forecast": {"litert_quantize"},
    "tag": {"litert_quantize"},
    "g2p": {"litert_quantize", "beam_width", "length_penalty"},
    "translate": {"litert_quantize", "beam_width", "length_penalty"},
}

#: g2p's options that its fingerprint holds only when given (a teacher
#: and its distillation, an assembly's members, another precision), so
#: that runs recorded before they existed keep their fingerprint.
G2P_WHEN_GIVEN = {
    "teacher": ("teacher-run",),
    "distillation_weight": 0.3,
    "distillation_temperature": 3.0,
    "unlabelled_words": 10,
    "members": ("one-run", "another-run"),
    "precision": "mixed_bfloat16",
}


def test_every_option_left_out_of_training_is_run_handling_or_an_output_option():
    assert set(OUTPUT_OPTIONS) == set(CONFIGS)
    for task in CONFIGS:
        config_class = load_config_class(task)
        not_training = {
            field.name
            for field in dataclasses.fields(config_class)
            if not option_spec(config_class, field.name)["training"]
        }
        when_given = set(G2P_WHEN_GIVEN) if task == "g2p" else set()
        assert not_training == RUN_HANDLING | OUTPUT_OPTIONS[task] | when_given, task
        assert set(config_class().output_options()) == OUTPUT_OPTIONS[task], task
    g2p = load_config_class("g2p")
    for given in (
        {name: G2P_WHEN_GIVEN[name] for name in ("teacher", "distillation_weight",
                                                 "distillation_temperature", "unlabelled_words")},
        {"members": G2P_WHEN_GIVEN["members"]},
        {"precision": G2P_WHEN_GIVEN["precision"]},
    ):
        assert set(given) <= set(g2p(**given).fingerprint())


def another_value(config_class, name, value):
    """A value of option `name` other than `value` that it allows."""
    kind = option_spec(config_class, name)["kind"]
    if kind.choices:
        candidates = list(kind.choices)
    else:
        candidates = [value + 1, value / 2, value + 0.25]
    return next(
        candidate for candidate in candidates
        if candidate != value and kind.admits(candidate)
    )


def decoded_run(path, config):
    """A run of `config` that committed its outputs and a `metrics.json`
    whose `args` are the resolved options, as `run_task` writes them."""
    directory = claim(
        path, config.task, config.fingerprint(), outputs=config.output_options()
    )
    staging = directory.start_staging()
    (staging / "model.keras").write_bytes(b"model")
    (staging / "model.tflite").write_bytes(b"decoder")
    directory.commit(
        json.dumps({"task": config.task, "args": dataclasses.asdict(config)})
    )
    directory.release()


@pytest.mark.parametrize(
    "task, name",
    [(task, name) for task, names in OUTPUT_OPTIONS.items() for name in sorted(names)],
)
def test_a_finished_run_is_refused_another_output_option_and_an_unfinished_one_resumes(
    tmp_path, task, name
):
    finished, unfinished = tmp_path / "finished", tmp_path / "unfinished"
    config = cli.parse_config([task, "--quick", "--out", str(finished)])
    value = getattr(config, name)
    changed = dataclasses.replace(config, **{name: another_value(type(config), name, value)})
    decoded_run(finished, config)
    message = refusal(
        finished, task=task, fingerprint=changed.fingerprint(),
        outputs=changed.output_options(),
    )
    assert message.startswith(f"--out {finished} holds a finished {task} run with other options: ")
    there_now = (
        f"{flag(name)} {json.dumps(value)} there, {json.dumps(getattr(changed, name))} now"
    )
    assert there_now in message
    assert message.endswith(
        ". Rerun with its options to keep it, or start fresh: another --out, or --restart "
        "(discards that run)"
    )
    with claim(
        finished, task, config.fingerprint(), outputs=config.output_options()
    ) as same:
        assert same.complete

    # An unfinished run writes its outputs at its end, with the values
    # given then; a precision other than float32 is in the fingerprint as
    # well, and an unfinished run resumes only at its own.
    claim(unfinished, task, config.fingerprint(), outputs=config.output_options()).release()
    if name == "litert_quantize":
        message = refusal(
            unfinished, task=task, fingerprint=changed.fingerprint(),
            outputs=changed.output_options(),
        )
        assert f'{flag(name)} unset there, "{changed.litert_quantize}" now' in message
        return
    with claim(
        unfinished, task, changed.fingerprint(), outputs=changed.output_options()
    ) as resumed:
        assert not resumed.complete


def test_a_finished_run_whose_metrics_lack_an_output_option_is_refused(tmp_path):
    finished_run(tmp_path)  # its metrics.json records no args
    message = refusal(tmp_path, outputs={"litert_quantize": "float32"})
    assert '--litert-quantize unset there, "float32" now' in message


#: The smallest g2p run that decodes and exports: a minute of CPU.
TINY_G2P = [
    "g2p", "--quick", "--limit", "300", "--epochs", "1", "--units", "16", "--embedding", "8",
]


@pytest.mark.slow
def test_a_finished_g2p_run_asked_for_another_decoding_is_refused_and_kept(tmp_path, capsys):
    out = tmp_path / "g2p"
    environment = subprocess_env()
    environment.pop("TF_CPP_MIN_LOG_LEVEL")
    first = subprocess.run(
        [sys.executable, "-m", "kerasrnn_pipelines", *TINY_G2P, "--out", str(out)],
        capture_output=True, text=True, cwd=REPOSITORY, env=environment, timeout=600,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    # TensorFlow's oneDNN notice of the first training step is held back.
    assert "oneDNN" not in first.stderr, first.stderr
    finished = contents(out)
    args = read_metrics(out)["args"]
    assert (args["beam_width"], args["length_penalty"], args["litert_quantize"]) == (
        2, 0.0, "float32"
    )
    for option, value, there, now in [
        ("--beam-width", "3", "2", "3"),
        ("--length-penalty", "0.5", "0.0", "0.5"),
        ("--litert-quantize", "float16", '"float32"', '"float16"'),
    ]:
        assert cli.main([*TINY_G2P, option, value, "--out", str(out)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"kerasrnn-train g2p: --out {out} holds a finished g2p run with other options: "
            f"{option} {there} there, {now} now. Rerun with its options to keep it, or start "
            "fresh: another --out, or --restart (discards that run)"
        ]
        assert contents(out) == finished
    assert cli.main([*TINY_G2P, "--beam-width", "2", "--out", str(out)]) == 0
    assert f"the run in {out} is already complete" in capsys.readouterr().out


def test_a_run_that_stops_before_its_first_write_leaves_the_directory_as_it_was(tmp_path):
    # A new --out, folders and all, is gone again.
    new = tmp_path / "new" / "run"
    claim(new, start=False).release()
    assert list(tmp_path.iterdir()) == []
    # Another task's run under --overwrite, and this task's under
    # --restart, are discarded only when the run starts.
    for task, flags in (("g2p", {"overwrite": True}), ("forecast", {"restart": True})):
        out = tmp_path / task
        finished_run(out, task=task)
        (out / "notes.txt").write_text("the user's own file")
        before = contents(out)
        directory = claim(out, start=False, **flags)
        assert contents(out) == {**before, ".lock": f"{os.getpid()}\n".encode()}
        directory.release()
        assert contents(out) == before
    # The same holds for an unfinished run of this task, resumed.
    out = tmp_path / "unfinished"
    unfinished_run(out)
    before = contents(out)
    claim(out, start=False).release()
    assert contents(out) == before
