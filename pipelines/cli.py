"""The command line: `kerasrnn-train TASK [options]`.

Every option a user types passes through here once: the task's
configuration class (`kerasrnn_pipelines.tasks.CONFIGS`) defines and checks it, the
run directory is claimed, and only then are TensorFlow and the task's
module loaded and the configuration handed to `kerasrnn_pipelines.training.run_task`.
Whatever can be found wrong before training is one line on stderr and exit
status 2. What the run prints is `kerasrnn_pipelines.console`'s: TensorFlow's
start-up held back unless `--verbose`, Keras's progress bar on a terminal
and one line per epoch elsewhere, and a closing summary.
"""

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from kerasrnn.native_output import held_back_stderr
from kerasrnn_pipelines.console import hold_back_tensorflow, start_tensorflow
from kerasrnn_pipelines.faults import DatasetNotOnDisk, RunFailed
from kerasrnn_pipelines.options import (
    ConfigError,
    RunConfig,
    flag,
    one_of,
    option_spec,
    present,
    switch,
)
from kerasrnn_pipelines.run_directory import RunDirectoryError, claim_run_directory
from kerasrnn_pipelines.tasks import CONFIGS, TASKS, load_config_class, load_task

PROGRAM = "kerasrnn-train"

SHARED_OPTIONS = {field.name for field in dataclasses.fields(RunConfig)}


class Parser(argparse.ArgumentParser):
    """An `argparse` parser whose refusals are one line, exit status 2.

    Attributes:
        task: The task whose options it parses, or None.
        options: Every option string it takes (`--help` and those
            `add_options` adds), for the message of an unknown one.
    """

    def __init__(self, task: str | None = None, **kwargs: Any) -> None:
        super().__init__(prog=PROGRAM, **kwargs)
        self.task = task
        self.options: list[str] = ["-h", "--help"] if self.add_help else []

    def error(self, message: str) -> NoReturn:
        where = f"{PROGRAM} {self.task}" if self.task else PROGRAM
        self.exit(2, f"{where}: {message} (see {PROGRAM} {self.task or 'TASK'} --help)\n")


def shown(value: object) -> object:
    """A default as `--help` shows it: `unset` for None."""
    return "unset" if value is None else value


def add_options(parser: Parser, config_class: type[RunConfig]) -> None:
    """One argument per field of `config_class`, typed, defaults in the help.

    Every default is `argparse.SUPPRESS`: the parsed namespace holds only
    what was typed, which then wins over `--preset` and `--quick`.
    """
    defaults = config_class()
    groups = {
        True: parser.add_argument_group("options of every task"),
        False: parser.add_argument_group(f"options of {config_class.task}"),
    }
    for field in dataclasses.fields(config_class):
        spec = option_spec(config_class, field.name)
        kind = spec["kind"]
        if field.name == "data":
            kind = one_of(*config_class.DATA_SOURCES)
        if field.name == "preset":
            if not config_class.PRESETS:
                continue
            kind = one_of(*config_class.PRESETS)
        help_text = spec["help"]
        if field.name == "data":
            help_text = data_help(config_class, help_text)
        help_text = f"{help_text} (default: {shown(getattr(defaults, field.name))})"
        arguments: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_text}
        if kind is switch:
            arguments["action"] = argparse.BooleanOptionalAction
        elif kind is present:
            arguments["action"] = "store_true"
        else:
            arguments["type"] = kind
            arguments["metavar"] = (
                "{" + ",".join(kind.choices) + "}" if kind.choices else field.name.upper()
            )
            if kind.several:
                arguments["nargs"] = "+"
        action = groups[field.name in SHARED_OPTIONS].add_argument(flag(field.name), **arguments)
        parser.options.extend(action.option_strings)


def data_help(config_class: type[RunConfig], help_text: str) -> str:
    """`--data`'s help: the task's sources by name, which the epilog
    describes; without a task, where each task's sources are listed."""
    if config_class is RunConfig:
        return f"{help_text}; each task has its own sources, listed by {PROGRAM} TASK --help"
    *others, last = config_class.DATA_SOURCES
    names = f"{', '.join(others)} or {last}" if others else last
    return f"{help_text}: {names}, described under 'data sources' below"


def task_summaries() -> str:
    """`--help` without a task: each task, what it does and its own options."""
    lines = ["tasks (`kerasrnn-train TASK --help` shows a task's options and defaults):"]
    for name in CONFIGS:
        config_class = load_config_class(name)
        own = [
            flag(field.name)
            for field in dataclasses.fields(config_class)
            if field.name not in SHARED_OPTIONS
        ]
        lines.append(f"  {name}: {config_class.DESCRIPTION}")
        lines.append(f"    its options: {', '.join(own)}")
    return "\n".join(lines)


def data_sources(config_class: type[RunConfig]) -> str:
    """The epilog of a task's `--help`: each `--data` source, described."""
    return "data sources (--data):\n" + "\n".join(
        f"  {name}: {description}"
        for name, description in config_class.DATA_SOURCES.items()
    )


def build_parser(config_class: type[RunConfig] | None = None) -> Parser:
    """The parser of one task's configuration, or of the shared options."""
    task = config_class.task if config_class else None
    parser = Parser(
        task=task,
        description=(config_class or RunConfig).DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=data_sources(config_class) if config_class else task_summaries(),
    )
    parser.add_argument("task", choices=list(TASKS), help="what to train")
    add_options(parser, config_class or RunConfig)
    return parser


def find_task_name(argv: Sequence[str]) -> str | None:
    """The TASK positional of `argv`, or None, without checking the rest."""
    scout = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    scout.add_argument("task", nargs="?")
    for field in dataclasses.fields(RunConfig):
        kind = option_spec(RunConfig, field.name)["kind"]
        if kind is switch:
            scout.add_argument(flag(field.name), action=argparse.BooleanOptionalAction)
        elif kind is present:
            scout.add_argument(flag(field.name), action="store_true")
        else:
            scout.add_argument(flag(field.name))
    try:
        known, _ = scout.parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    return known.task


def parse_config(argv: Sequence[str]) -> RunConfig:
    """Parse and check `argv` into the configuration of one task.

    Values are resolved, lowest precedence first: the configuration's
    defaults, `--preset`, `--quick`, what was typed. Every value, `--out`
    and the environment `--strategy` needs are checked here, before
    TensorFlow is imported.

    Returns:
        The task's configuration (a frozen dataclass, see
        `kerasrnn_pipelines.options.RunConfig`).

    Raises:
        SystemExit: `--help` (status 0), or anything refused (status 2,
            one line on stderr naming the option, the value and what is
            allowed).
    """
    task_name = find_task_name(argv)
    config_class = None
    if task_name in CONFIGS:
        try:
            config_class = load_config_class(task_name)
        except ModuleNotFoundError as error:
            module = CONFIGS[task_name].partition(":")[0]
            if error.name != module:
                raise
            Parser().error(
                f"task {task_name!r} is registered but its options module "
                f"{module} is not in this installation"
            )
    parser = build_parser(config_class)
    typed, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(
            f"unrecognized arguments: {' '.join(unknown)}; "
            f"valid options: {', '.join(sorted(parser.options))}"
        )
    # The parser accepts only the tasks of `TASKS`, each of which has a
    # configuration class in `CONFIGS`: a parse that got here found one.
    assert config_class is not None
    typed_values = vars(typed)
    del typed_values["task"]
    values: dict[str, Any] = {}
    if typed_values.get("preset"):
        values.update(config_class.PRESETS[typed_values["preset"]])
    if typed_values.get("quick"):
        values.update(config_class.QUICK)
    # An option of several values is a tuple, as a frozen configuration holds it.
    values.update(
        {name: tuple(value) if isinstance(value, list) else value
         for name, value in typed_values.items()}
    )
    try:
        config = config_class(**values)
        config.check_environment()
    except ConfigError as error:
        parser.error(str(error))
    return config


def main(argv: Sequence[str] | None = None) -> int:
    """Run `kerasrnn-train TASK [options]`; return the exit status.

    Args:
        argv: The arguments after the program name; `sys.argv[1:]` if None.

    Returns:
        0 on success; 1 when training stopped on a fault it reports (a NaN
        loss, malformed data, a dataset not on disk); 2 when `--out` cannot
        be claimed (bad values exit with 2 from `parse_config`).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    config = parse_config(argv)
    try:
        run_directory = claim_run_directory(
            config.out,
            config.task,
            config.fingerprint(),
            restart=config.restart,
            overwrite=config.overwrite,
            strategy=config.strategy,
            outputs=config.output_options(),
        )
    except RunDirectoryError as error:
        print(f"{PROGRAM} {config.task}: {error}", file=sys.stderr)
        return 2
    # Only now, with every check passed, are TensorFlow and the task loaded,
    # their start-up messages held back unless the user asked for them; the
    # seconds that takes are not silent.
    print(f"{PROGRAM} {config.task}: loading TensorFlow...", flush=True)
    with held_back_stderr(hold_back_tensorflow(config.verbose)):
        task_module = load_task(config.task)
        start_tensorflow()
    from kerasrnn_pipelines.training import run_task

    try:
        run_task(task_module, config, run_directory)
    except RunFailed as failure:
        message = f"{PROGRAM} {config.task}: {failure}"
        # Only a task with data of its own can run without TFDS.
        if isinstance(failure, DatasetNotOnDisk) and "embedded" in config.DATA_SOURCES:
            message += f" Offline, `{PROGRAM} {config.task} --data embedded` runs now."
        print(message, file=sys.stderr)
        return 1
    return 0
