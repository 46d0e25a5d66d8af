"""The command line: help, one-line refusals before TensorFlow loads, precedence,
the typed configurations and the import layering of `kerasrnn_pipelines`."""

import ast
import dataclasses
import json
import re
import subprocess
import sys

import pytest

from kerasrnn_pipelines import cli, options
from kerasrnn_pipelines.options import ConfigError
from kerasrnn_pipelines.tasks import CONFIGS, TASKS, load_config_class, load_task
from kerasrnn_pipelines.tasks.options.forecast_config import ForecastConfig
from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig
from tests.isolated import REPOSITORY, subprocess_env

# The options every task's command line has.
SHARED_OPTIONS = (
    "--cell",
    "--units",
    "--layers",
    "--bidirectional",
    "--dropout",
    "--epochs",
    "--batch-size",
    "--learning-rate",
    "--clipnorm",
    "--seed",
    "--data",
    "--out",
    "--strategy",
    "--quick",
)


def run_command(*argv, env=None):
    """`python -X importtime -m kerasrnn_pipelines ARGV`: (status, stderr lines, modules).

    The import-time report (on stderr) names every module the command
    imported; the other stderr lines are what the command printed.
    """
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kerasrnn_pipelines", *argv],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=env or subprocess_env(),
        timeout=120,
    )
    lines = completed.stderr.splitlines()
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in lines
        if line.startswith("import time:")
    }
    said = [line for line in lines if not line.startswith("import time:")]
    return completed.returncode, said, imported


def test_python_dash_m_help_documents_every_option():
    completed = subprocess.run(
        [sys.executable, "-m", "kerasrnn_pipelines", "--help"],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=subprocess_env(),
        timeout=120,
    )
    assert completed.returncode == 0
    for option in (*SHARED_OPTIONS, "--cell-dropout", "--restart", "--overwrite"):
        assert option in completed.stdout
    for task in TASKS:
        assert f"{task}: " in completed.stdout


def test_task_help_shows_the_task_defaults(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["forecast", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    # The lecture notes' model: Elman cells, 50 units, dropout 0.2.
    assert "(default: elman)" in text
    assert "(default: 50)" in text
    assert "after each recurrent layer" in text and "(default: 0.2)" in text
    assert "--window" in text and "(default: runs/forecast)" in text
    assert "embedded: statsmodels.datasets.sunspots" in text


def test_seq2seq_help_has_cell_dropout_and_no_layer_dropout(capsys):
    with pytest.raises(SystemExit):
        cli.main(["g2p", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--cell-dropout" in text and "the cells' input dropout" in text
    assert "--dropout " not in text
    assert "--preset {full}" in text


@pytest.mark.parametrize(
    "task, listed",
    [
        ("forecast", "embedded"),
        ("classify", "embedded or imdb_reviews"),
        ("charlm", "embedded or tiny_shakespeare"),
        ("tag", "embedded or conll2003"),
        ("g2p", "embedded"),
        ("translate", "ted_hrlr_translate/pt_to_en, ted_hrlr_translate/az_to_en, "),
        ("translate", "ted_hrlr_translate/ru_to_pt or ted_hrlr_translate/tr_to_en, described"),
    ],
)
def test_data_help_names_the_task_sources_the_epilog_describes(task, listed, capsys):
    with pytest.raises(SystemExit):
        cli.main([task, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    help_text = text.partition("where the data come from: ")[2].partition(" (default: ")[0]
    assert listed in help_text and help_text.endswith(", described under 'data sources' below")
    epilog = text.partition("data sources (--data): ")[2]
    names = [name for name in re.split(r", | or ", listed.removesuffix(", described")) if name]
    assert names and all(f"{name}: " in epilog for name in names)


def test_data_help_without_a_task_points_to_the_tasks_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "where the data come from; each task has its own sources, listed by "
        "kerasrnn-train TASK --help" in text
    )
    assert "listed below" not in text and "data sources (--data)" not in text


def test_luong_help_says_input_feeding_is_an_option(capsys):
    with pytest.raises(SystemExit):
        cli.main(["g2p", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "luong (general, scored with the current output; its attentional vector fed to "
        "the next step only with --input-feeding)" in text
    )
    # Input feeding is off unless asked for, as the help of --input-feeding says.
    assert G2PConfig().input_feeding is False
    assert "with --attention luong (refused with the others), feed the previous" in text


def test_unknown_task_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["nonsense"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1
    assert "invalid choice: 'nonsense'" in error
    for task in TASKS:
        assert task in error


def test_unknown_option_is_refused_with_the_valid_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["forecast", "--unitz", "3"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("kerasrnn-train forecast: unrecognized arguments: --unitz 3;")
    assert "--units" in error and "--window" in error


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--units", "0"], "argument --units: must be a positive integer; received '0'"),
        (["--units", "2.5"], "argument --units: must be a positive integer; received '2.5'"),
        (["--dropout", "1.5"], "argument --dropout: must be a number in [0, 1); received '1.5'"),
        (["--cell-dropout", "-0.1"],
         "argument --cell-dropout: must be a number in [0, 1); received '-0.1'"),
        (["--learning-rate", "nan"],
         "argument --learning-rate: must be a positive number; received 'nan'"),
        (["--window", "0"], "argument --window: must be a positive integer; received '0'"),
        (["--cell", "rnn"],
         "argument --cell: must be one of elman, lstm, gru, leaky; received 'rnn'"),
        (["--strategy", "tpu"],
         "argument --strategy: must be one of default, mirrored, multiworker; received 'tpu'"),
        (["--data", "mnist"], "argument --data: must be one of embedded; received 'mnist'"),
        (["--litert-quantize", "int8"],
         "argument --litert-quantize: must be one of float32, float16, dynamic_int8; "
         "received 'int8'"),
    ],
)
def test_bad_values_are_refused_naming_the_option(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_config(["forecast", *argv])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1
    assert fragment in error


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


# Each case: the command after the task, the option and the value the one
# line must name.
BEFORE_TENSORFLOW = {
    "g2p beam width 0": (["g2p", "--beam-width", "0"], "--beam-width", "'0'"),
    "g2p negative embedding": (["g2p", "--embedding", "-3"], "--embedding", "'-3'"),
    "g2p negative limit": (["g2p", "--limit", "-5"], "--limit", "'-5'"),
    "g2p negative length penalty": (
        ["g2p", "--length-penalty", "-0.5"], "--length-penalty", "'-0.5'"
    ),
    "g2p length penalty above 8": (
        ["g2p", "--length-penalty", "8.5"], "--length-penalty", "'8.5'"
    ),
    "g2p label smoothing 1": (
        ["g2p", "--label-smoothing", "1"], "--label-smoothing", "'1'"
    ),
    "g2p sampling midpoint 0": (
        ["g2p", "--sampling-midpoint", "0"], "--sampling-midpoint", "'0'"
    ),
    "translate beam width 0": (["translate", "--beam-width", "0"], "--beam-width", "'0'"),
    "g2p layer dropout": (["g2p", "--dropout", "0.2"], "--dropout", "--cell-dropout"),
    "window longer than the series": (["forecast", "--window", "300"], "--window", "300"),
    "negative seed": (["forecast", "--seed", "-1"], "--seed", "'-1'"),
    "seed of 2**32": (["forecast", "--seed", str(2**32)], "--seed", str(2**32)),
    "empty out": (["forecast", "--out", ""], "--out", "''"),
    "out names a file": (["forecast", "--out", "{file}"], "--out", "{file}"),
    "out under a file": (["forecast", "--out", "{file}/run"], "--out", "{file}/run"),
    # /proc takes no new files, whoever asks (os.access would say yes to root).
    "out unwritable": (["forecast", "--out", "/proc/kerasrnn/run"], "--out", "/proc/kerasrnn/run"),
    "multiworker without TF_CONFIG": (
        ["forecast", "--strategy", "multiworker"], "--strategy", "'multiworker'"
    ),
    "multiworker with unreadable TF_CONFIG": (
        ["forecast", "--strategy", "multiworker", "TF_CONFIG=workers"], "--strategy", "workers"
    ),
    "charlm distributed": (["charlm", "--strategy", "mirrored"], "--strategy", "'mirrored'"),
    "g2p input feeding with bahdanau": (
        ["g2p", "--attention", "bahdanau", "--input-feeding"],
        "--input-feeding", "--attention bahdanau",
    ),
    "translate input feeding without attention": (
        ["translate", "--attention", "none", "--input-feeding"],
        "--input-feeding", "--attention none",
    ),
    "g2p right-to-left with beam width 1": (
        ["g2p", "--right-to-left", "2", "--beam-width", "1"],
        "--right-to-left", "--right-to-left 2 with --beam-width 1",
    ),
    "g2p full preset with beam width 1": (
        ["g2p", "--preset", "full", "--beam-width", "1"],
        "--right-to-left", "--right-to-left 1 with --beam-width 1",
    ),
    "translate right-to-left with beam width 1": (
        ["translate", "--quick", "--right-to-left", "1", "--beam-width", "1"],
        "--right-to-left", "--right-to-left 1 with --beam-width 1",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", BEFORE_TENSORFLOW)
def test_refusals_are_one_line_before_tensorflow_loads(case, a_file, tmp_path):
    argv, option, value = BEFORE_TENSORFLOW[case]
    env = subprocess_env()
    env.pop("TF_CONFIG", None)
    argv = [arg.replace("{file}", str(a_file)) for arg in argv]
    value = value.replace("{file}", str(a_file))
    for arg in list(argv):
        if arg.startswith("TF_CONFIG="):
            env["TF_CONFIG"] = arg.partition("=")[2]
            argv.remove(arg)
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "run")]
    status, said, imported = run_command(*argv, env=env)
    assert status == 2, said
    assert len(said) == 1, said
    assert said[0].startswith(f"kerasrnn-train {argv[0]}: ")
    assert option in said[0] and value in said[0]
    assert "tensorflow" not in imported and "keras" not in imported
    assert not (tmp_path / "run").exists()


INPUT_FEEDING_REFUSED = (
    "argument --input-feeding: only --attention luong has an attentional "
    "vector to feed to the next step; received --input-feeding with "
    "--attention {attention} (pass --attention luong or drop --input-feeding)"
)
RIGHT_TO_LEFT_REFUSED = (
    "argument --right-to-left: its members re-rank the beam's hypotheses, "
    "and --beam-width 1 keeps only one; received --right-to-left {members} "
    "with --beam-width 1 (pass --beam-width 2 or more, or --right-to-left 0)"
)


@pytest.mark.parametrize(
    "argv, refused",
    [
        (["g2p", "--attention", "bahdanau", "--input-feeding"],
         INPUT_FEEDING_REFUSED.format(attention="bahdanau")),
        (["translate", "--input-feeding", "--attention", "none"],
         INPUT_FEEDING_REFUSED.format(attention="none")),
        (["g2p", "--quick", "--right-to-left", "1", "--beam-width", "1"],
         RIGHT_TO_LEFT_REFUSED.format(members=1)),
        (["translate", "--right-to-left", "3", "--beam-width", "1"],
         RIGHT_TO_LEFT_REFUSED.format(members=3)),
        (["g2p", "--preset", "full", "--beam-width", "1"],
         RIGHT_TO_LEFT_REFUSED.format(members=1)),
    ],
)
def test_options_that_cannot_have_an_effect_are_refused(argv, refused, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_config(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"kerasrnn-train {argv[0]}: {refused} (see kerasrnn-train {argv[0]} --help)"
    ]


@pytest.mark.parametrize(
    "argv, values",
    [
        (["g2p", "--attention", "luong", "--input-feeding"], ("luong", True, 0, 2)),
        (["g2p", "--attention", "bahdanau", "--no-input-feeding"],
         ("bahdanau", False, 0, 2)),
        (["translate", "--attention", "none"], ("none", False, 0, 4)),
        (["g2p", "--beam-width", "1"], ("luong", False, 0, 1)),
        (["g2p", "--right-to-left", "1"], ("luong", False, 1, 2)),
        # --quick's beam of 2 still has two hypotheses to re-rank.
        (["g2p", "--preset", "full", "--quick"], ("luong", False, 1, 2)),
    ],
)
def test_options_that_take_effect_together_are_accepted(argv, values):
    config = cli.parse_config(argv)
    assert (
        config.attention, config.input_feeding, config.right_to_left,
        config.beam_width,
    ) == values


def test_the_configurations_refuse_what_the_command_line_refuses():
    with pytest.raises(ConfigError, match=r"^argument --input-feeding: .* --attention none "):
        G2PConfig(attention="none", input_feeding=True)
    with pytest.raises(ConfigError, match=r"^argument --right-to-left: .* --right-to-left 2 "):
        G2PConfig(right_to_left=2, beam_width=1)


def test_precedence_defaults_then_preset_then_quick_then_typed():
    plain = cli.parse_config(["forecast"])
    assert isinstance(plain, ForecastConfig)
    assert plain == ForecastConfig()
    assert (plain.units, plain.cell, plain.window, plain.dropout) == (50, "elman", 12, 0.2)
    assert plain.clipnorm is None and plain.shuffle is True
    assert plain.out == "runs/forecast"

    quick = cli.parse_config(["forecast", "--quick"])
    assert quick.units == ForecastConfig.QUICK["units"] == 16
    assert quick.window == ForecastConfig.QUICK["window"]

    # What the user types wins even over --quick, in any order.
    typed = cli.parse_config(
        ["forecast", "--units", "5", "--quick", "--window", "3", "--cell", "gru"]
    )
    assert (typed.units, typed.window, typed.cell, typed.quick) == (5, 3, "gru", True)
    assert typed.epochs == ForecastConfig.QUICK["epochs"]

    # --quick wins over --preset, which wins over the defaults.
    full = cli.parse_config(["g2p", "--preset", "full"])
    assert (full.units, full.epochs, full.cell_dropout) == (256, 14, 0.3)
    assert (full.beam_width, full.right_to_left) == (4, 1)
    assert G2PConfig().beam_width == 2
    both = cli.parse_config(["g2p", "--preset", "full", "--quick", "--epochs", "3"])
    assert (both.units, both.epochs, both.cell_dropout) == (128, 3, 0.3)
    assert both.beam_width == G2PConfig.QUICK["beam_width"] == 2


def test_configurations_are_frozen_and_check_every_value():
    config = G2PConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.units = 3
    with pytest.raises(
        ConfigError, match=r"^argument --units: must be a positive integer; received True$"
    ):
        ForecastConfig(units=True)
    with pytest.raises(ConfigError, match=r"argument --learning-rate: .*received '0.1'"):
        ForecastConfig(learning_rate="0.1")
    with pytest.raises(
        ConfigError, match=r"argument --preset: must be one of full; received 'huge'"
    ):
        G2PConfig(preset="huge")
    with pytest.raises(
        ConfigError, match=r"argument --out: must be a directory path; received ' '"
    ):
        G2PConfig(out=" ")
    assert ForecastConfig(window=220).window == 220
    with pytest.raises(ConfigError, match="--window: must be at most 220"):
        ForecastConfig(window=221)
    assert G2PConfig(clipnorm=None).clipnorm is None


@pytest.mark.parametrize("name", list(CONFIGS))
def test_quick_and_presets_name_real_options_with_valid_values(name):
    config_class = load_config_class(name)
    assert config_class.task == name
    fields = {field.name for field in dataclasses.fields(config_class)}
    for overrides in (config_class.QUICK, *config_class.PRESETS.values()):
        assert set(overrides) <= fields
        config_class(**overrides)  # every value passes the checks


def test_fingerprint_holds_the_training_options_only():
    config = cli.parse_config(["g2p", "--quick", "--out", "elsewhere", "--restart"])
    fingerprint = config.fingerprint()
    json.dumps(fingerprint)
    # --litert-quantize at its default, float32, is left out, and so are the
    # distillation options without --teacher, --members unset and
    # --precision float32: a run recorded before the options existed keeps
    # its fingerprint.
    left_out = {"out", "restart", "overwrite", "strategy", "quick", "preset",
                "verbose", "beam_width", "length_penalty", "litert_quantize",
                "teacher", "distillation_weight", "distillation_temperature",
                "unlabelled_words", "members", "precision"}
    fields = {field.name for field in dataclasses.fields(config)}
    assert set(fingerprint) == fields - left_out
    assert fingerprint["limit"] == 6000 and fingerprint["learning_rate"] == 1e-2
    # Another precision is in it: a finished run does not export again.
    for precision in ("float16", "dynamic_int8"):
        quantized = cli.parse_config(["g2p", "--quick", "--litert-quantize", precision])
        assert quantized.fingerprint() == {**fingerprint, "litert_quantize": precision}

    # The same training, asked for differently, has the same fingerprint.
    spelled_out = cli.parse_config(
        ["g2p", "--units", "128", "--embedding", "64", "--epochs", "8", "--batch-size",
         "64", "--learning-rate", "0.01", "--limit", "6000", "--beam-width", "1",
         "--overwrite"]
    )
    assert spelled_out.fingerprint() == fingerprint
    assert cli.parse_config(["g2p", "--quick", "--seed", "1"]).fingerprint() != fingerprint
    assert "sample_chars" not in cli.parse_config(["charlm"]).fingerprint()


def test_cell_names_are_those_of_kerasrnn():
    import keras

    import kerasrnn

    for class_name in options.CELLS.values():
        assert issubclass(getattr(kerasrnn, class_name), keras.layers.Layer)


def test_the_values_kerasrnn_allows_reach_the_command_line_without_keras():
    # Imported and used as the command line does, in a fresh interpreter:
    # this one has loaded TensorFlow already.
    program = """
import json
import sys

from kerasrnn_pipelines import cli
from kerasrnn_pipelines.options import allowed

config = cli.parse_config(
    ["g2p", "--context", "both", "--length-penalty", "8", "--litert-quantize", "float16"]
)
print(json.dumps({
    "file": allowed.__file__,
    "values": [config.context, config.length_penalty, config.litert_quantize],
    "imported": sorted({"kerasrnn", "keras", "tensorflow"} & set(sys.modules)),
}))
"""
    completed = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=subprocess_env(),
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.splitlines()[-1])
    # kerasrnn's `__init__`, which imports neither Keras nor TensorFlow.
    assert result["imported"] == ["kerasrnn"]
    assert result["file"] == str(REPOSITORY / "kerasrnn" / "allowed.py")
    assert result["values"] == ["both", 8.0, "float16"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_task_that_writes_model_tflite_takes_litert_quantize(name):
    fields = {field.name for field in dataclasses.fields(load_config_class(name))}
    # charlm writes no LiteRT file.
    assert ("litert_quantize" in fields) is (name != "charlm")


def test_the_two_dropouts_reach_their_layers():
    import keras

    from kerasrnn_pipelines.recurrent import recurrent_stack

    config = ForecastConfig(cell="gru", units=4, layers=2, dropout=0.25, cell_dropout=0.1)
    inputs = keras.Input((None, 3))
    model = keras.Model(inputs, recurrent_stack(inputs, config, return_sequences=False))
    rnns = [layer for layer in model.layers if isinstance(layer, keras.layers.RNN)]
    dropouts = [layer for layer in model.layers if isinstance(layer, keras.layers.Dropout)]
    assert [rnn.cell.dropout for rnn in rnns] == [0.1, 0.1]
    assert [layer.rate for layer in dropouts] == [0.25, 0.25]


@pytest.mark.parametrize("name", list(TASKS))
def test_task_modules_follow_the_contract(name):
    task = load_task(name)
    config_class = load_config_class(name)
    assert isinstance(config_class.DESCRIPTION, str) and config_class.DESCRIPTION
    assert next(iter(config_class.DATA_SOURCES)) == config_class().data
    metric, baseline, better = task.HEADLINE_METRIC
    assert metric.startswith(("test_", "val_")) and better in ("lower", "higher")
    assert baseline.startswith(("baseline_", "persistence_", "unigram_"))
    assert callable(task.run)


def test_a_registered_task_without_its_options_module_is_reported(monkeypatch, capsys):
    monkeypatch.setitem(TASKS, "ghost", "kerasrnn_pipelines.tasks.ghost")
    monkeypatch.setitem(CONFIGS, "ghost", "kerasrnn_pipelines.tasks.options.ghost:GhostConfig")
    with pytest.raises(SystemExit):
        cli.parse_config(["ghost"])
    assert (
        "task 'ghost' is registered but its options module "
        "kerasrnn_pipelines.tasks.options.ghost is not in this installation"
        in capsys.readouterr().err
    )


def test_load_task_refuses_unknown_names():
    with pytest.raises(ValueError, match=r"Argument `task` must be one of .*Received: task='x'"):
        load_task("x")


def imported_modules(path):
    """Every module a source file imports, as dotted names."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_imports_run_one_way_cli_tasks_options():
    package = REPOSITORY / "pipelines"
    task_modules = set(TASKS.values())
    for path in (package / "tasks").rglob("*.py"):
        module = ".".join(
            ("kerasrnn_pipelines", *path.relative_to(package).with_suffix("").parts)
        )
        for name in imported_modules(path):
            assert not name.startswith("kerasrnn_pipelines.cli"), (module, name)
            assert name == module or name not in task_modules, (module, name)
    # Of kerasrnn, only the values its arguments allow.
    assert {
        name for name in imported_modules(package / "options.py")
        if name.split(".")[0]
        in ("kerasrnn_pipelines", "tensorflow", "keras", "kerasrnn")
    } == {"kerasrnn", "kerasrnn.allowed"}
    for path in (package / "tasks" / "options").glob("*.py"):
        assert not {
            name for name in imported_modules(path)
            if name.split(".")[0] in ("tensorflow", "keras", "kerasrnn", "numpy")
        }, path
