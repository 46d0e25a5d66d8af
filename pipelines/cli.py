"""The command line: `kerasrnn-train TASK [options]`.

Every option a user types passes through here once: it is parsed, checked,
merged with the task's defaults (see `pipelines.tasks` for the order) and
handed to `pipelines.training.run_task` as one `argparse.Namespace`.
"""

import argparse
import sys

from pipelines.tasks import TASKS, load_task

#: Cells `--cell` accepts; the names of `kerasrnn`'s cell classes, lower case.
CELLS = ("elman", "lstm", "gru", "leaky")

#: Distribution strategies `--strategy` accepts (see `pipelines.training`).
STRATEGIES = ("default", "mirrored", "multiworker")

#: Values of the shared options before a task sets its own.
SHARED_DEFAULTS = {
    "cell": "lstm",
    "units": 64,
    "layers": 1,
    "bidirectional": False,
    "dropout": 0.0,
    "epochs": 10,
    "batch_size": 32,
    "learning_rate": 1e-3,
    "clipnorm": None,
    "seed": 0,
    "shuffle": True,
    "data": "embedded",
    "out": "runs/TASK",
    "strategy": "default",
    "quick": False,
    "preset": None,
}


def positive_int(text):
    """`argparse` type: an integer > 0."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer; received {text!r}"
        )
    return value


def non_negative_int(text):
    """`argparse` type: an integer >= 0 (0 often meaning "all")."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a non-negative integer; received {text!r}"
        )
    return value


def positive_float(text):
    """`argparse` type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a positive number; received {text!r}"
        )
    return value


def dropout_rate(text):
    """`argparse` type: a float in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(
            f"must be a number in [0, 1); received {text!r}"
        )
    return value


def add_shared_arguments(parser, defaults, data_sources=None):
    """Add the options every task shares, showing `defaults` in `--help`.

    Args:
        parser: The `argparse.ArgumentParser` to extend.
        defaults: Option name -> default shown in `--help`.
        data_sources: The task's `DATA_SOURCES`, listed in `--data`'s help.
    """
    parser.add_argument(
        "--cell",
        choices=CELLS,
        default=defaults["cell"],
        help="recurrent cell from kerasrnn, run by keras.layers.RNN",
    )
    parser.add_argument(
        "--units",
        type=positive_int,
        default=defaults["units"],
        help="hidden units per recurrent layer",
    )
    parser.add_argument(
        "--layers",
        type=positive_int,
        default=defaults["layers"],
        help="number of stacked recurrent layers",
    )
    parser.add_argument(
        "--bidirectional",
        action=argparse.BooleanOptionalAction,
        default=defaults["bidirectional"],
        help="wrap each recurrent layer in keras.layers.Bidirectional",
    )
    parser.add_argument(
        "--dropout",
        type=dropout_rate,
        default=defaults["dropout"],
        help="dropout rate after each recurrent layer, in [0, 1)",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=defaults["epochs"],
        help="training epochs",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=defaults["batch_size"],
        help="global batch size (split across replicas)",
    )
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        default=defaults["learning_rate"],
        help="Adam learning rate",
    )
    parser.add_argument(
        "--clipnorm",
        type=positive_float,
        default=defaults["clipnorm"],
        help="clip each gradient to this L2 norm (eq:rnn-clip); "
        "no clipping if unset",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=defaults["seed"],
        help="seed of weights, dropout and data shuffling",
    )
    parser.add_argument(
        "--shuffle",
        action=argparse.BooleanOptionalAction,
        default=defaults["shuffle"],
        help="reshuffle the training examples every epoch, seeded by --seed "
        "(the same command gives the same batches); --no-shuffle keeps the "
        "data order, which reproduces a run across --strategy choices",
    )
    parser.add_argument(
        "--data",
        default=defaults["data"],
        help=(
            "one of: " + ", ".join(data_sources)
            if data_sources
            else "'embedded' (data inside an installed package, no network) "
            "or a TFDS dataset name the task reads"
        ),
    )
    parser.add_argument(
        "--out",
        default=defaults["out"],
        metavar="DIR",
        help="output directory; rerunning the same "
        "command resumes an interrupted run from its backup there",
    )
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=defaults["strategy"],
        help="tf.distribute strategy: one device, MirroredStrategy over the "
        "local devices, or MultiWorkerMirroredStrategy from TF_CONFIG",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        default=defaults["quick"],
        help="a tiny run (small model, little data, one or two epochs)",
    )


def build_parser(task_name=None, task_module=None):
    """The full parser; with a task, its defaults and its own options."""
    defaults = dict(SHARED_DEFAULTS, out="runs/TASK")
    description = "Train a kerasrnn recurrent model on one task."
    if task_module is not None:
        defaults.update(task_module.DEFAULTS, out=f"runs/{task_name}")
        description = task_module.DESCRIPTION
    parser = argparse.ArgumentParser(
        prog="kerasrnn-train",
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="tasks: "
        + ", ".join(TASKS)
        + ". `kerasrnn-train TASK --help` shows a task's defaults.",
    )
    parser.add_argument("task", choices=list(TASKS), help="what to train")
    add_shared_arguments(
        parser, defaults, getattr(task_module, "DATA_SOURCES", None)
    )
    if task_module is not None:
        presets = getattr(task_module, "PRESETS", {})
        if presets:
            parser.add_argument(
                "--preset",
                choices=sorted(presets),
                default=None,
                help="named configuration of this task",
            )
        add_task_arguments = getattr(task_module, "add_arguments", None)
        if add_task_arguments is not None:
            add_task_arguments(parser.add_argument_group("task options"))
    return parser


def find_task_name(argv):
    """The TASK positional of `argv`, or None, without failing on the rest."""
    scout = argparse.ArgumentParser(add_help=False)
    scout.add_argument("task", nargs="?")
    add_shared_arguments(scout, SHARED_DEFAULTS)
    try:
        known, _ = scout.parse_known_args(argv)
    except SystemExit:
        return None
    return known.task


def parse_config(argv):
    """Parse `argv` into the resolved config of one task.

    Returns:
        `(task_module, config)`: the task's module and an
        `argparse.Namespace` with every option resolved.

    Raises:
        SystemExit: `--help`, or an unknown task or option (argparse prints
            the valid choices).
    """
    task_name = find_task_name(argv)
    task_module = None
    if task_name in TASKS:
        try:
            task_module = load_task(task_name)
        except ModuleNotFoundError as error:
            if error.name != TASKS[task_name]:
                raise
            build_parser().error(
                f"task {task_name!r} is registered but its module "
                f"{TASKS[task_name]} is not in this installation"
            )
    parser = build_parser(task_name, task_module)
    # The first pass prints --help with the task's defaults and refuses
    # unknown tasks, options and values with the valid choices.
    parsed, unknown = parser.parse_known_args(argv)
    if unknown:
        options = sorted(
            option
            for action in parser._actions
            for option in action.option_strings
        )
        parser.error(
            f"unrecognized arguments: {' '.join(unknown)}. "
            f"Valid options: {', '.join(options)}"
        )
    # The second pass, with every default suppressed, tells what the user
    # typed, which must win over --preset and --quick.
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    typed = vars(parser.parse_args(argv))

    config = vars(parsed)
    if config.get("preset"):
        config.update(task_module.PRESETS[config["preset"]])
    if config["quick"]:
        config.update(task_module.QUICK)
    config.update(typed)
    if config["data"] not in task_module.DATA_SOURCES:
        parser.error(
            f"argument --data: invalid choice: {config['data']!r} "
            f"(choose from {', '.join(task_module.DATA_SOURCES)})"
        )
    return task_module, argparse.Namespace(**config)


def main(argv=None):
    """Run `kerasrnn-train TASK [options]`; return the exit status.

    Args:
        argv: The arguments after the program name; `sys.argv[1:]` if None.

    Returns:
        0 on success, 1 when training stopped on a fault it reports (a NaN
        loss, malformed data, a dataset not on disk).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    task_module, config = parse_config(argv)
    # Imported only now so that `kerasrnn-train --help` and an unknown task
    # answer without loading TensorFlow.
    from pipelines.training import RunFailed, run_task

    try:
        run_task(task_module, config)
    except RunFailed as failure:
        print(f"kerasrnn-train {config.task}: {failure}", file=sys.stderr)
        return 1
    return 0
