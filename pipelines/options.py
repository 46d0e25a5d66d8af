"""What `kerasrnn-train` accepts: option types and the options every task shares.

A leaf module: it imports nothing of `kerasrnn_pipelines.tasks`, of the command line,
of Keras or of TensorFlow, so that every value is checked before TensorFlow loads. The
values kerasrnn's own arguments allow come from `kerasrnn.allowed`, which imports
neither (nor does `import kerasrnn`).

A task's configuration is a frozen dataclass derived from `RunConfig`
(`kerasrnn_pipelines.tasks.options.<task>`). Each field is one option, defined once
with `option(default, type, help)`: the command line reads `--field-name`
with that type, `--help` shows the help and the default, and the
dataclass checks the value whenever a configuration is made, typed or
not. A task sets its own default of a shared option by redefining the
field with a plain default (`units: int = 50`); type and help stay those
of the one definition here.

Values are resolved, lowest precedence first: the dataclass defaults, the
chosen `--preset` (`PRESETS`), `--quick` (`QUICK`), then what was typed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pathlib
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

# `allowed` is read by the tasks' options modules through this one.
from kerasrnn import allowed as allowed

#: `--cell` name -> the kerasrnn cell class it builds.
CELLS = {
    "elman": "ElmanCell",
    "lstm": "LSTMCell",
    "gru": "GRUCell",
    "leaky": "LeakyCell",
}

#: Distribution strategies `--strategy` accepts (see `kerasrnn_pipelines.distributed`).
STRATEGIES = ("default", "mirrored", "multiworker")

#: `--litert-quantize` values: the exporters' `quantize` options
#: (`kerasrnn.allowed.QUANTIZE_OPTIONS`) with None spelled float32.
LITERT_QUANTIZE = tuple(
    "float32" if name is None else name for name in allowed.QUANTIZE_OPTIONS
)

#: `--seed` seeds NumPy, whose seeds are unsigned 32-bit integers.
SEED_LIMIT = 2**32

#: The environment variable `--strategy multiworker` reads its cluster from.
TF_CONFIG = "TF_CONFIG"


class ConfigError(ValueError):
    """A value a run cannot use; the message is one line that names the
    option, the value received and what is allowed."""


def flag(name: str) -> str:
    """The command-line spelling of a configuration field: `--batch-size`."""
    return "--" + name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class OptionType:
    """What one option accepts.

    Called with the text typed on the command line, it is an `argparse`
    type: it returns the value or raises `argparse.ArgumentTypeError`.

    Attributes:
        allowed: What is allowed, completing "must be ...".
        convert: Text -> value; raises `ValueError` on text it cannot read.
        accepts: Value -> whether it is allowed.
        kinds: The Python types a value must have (`bool` never counts as
            a number).
        choices: The allowed values when they are a short list.
        several: The option takes one or more values (`--name A B`), a
            tuple of values each of which this type allows.
    """

    allowed: str
    convert: Callable[[str], Any]
    accepts: Callable[[Any], bool]
    kinds: tuple[type, ...]
    choices: tuple[str, ...] | None = None
    several: bool = False

    def __call__(self, text: str) -> Any:
        try:
            value = self.convert(text)
        except ValueError:
            value = None
        if value is None or not self.accepts(value):
            raise argparse.ArgumentTypeError(
                f"must be {self.allowed}; received {text!r}"
            )
        return value

    def admits(self, value: object) -> bool:
        """Whether `value`, already converted, is one this option takes."""
        if self.several:
            values = value if isinstance(value, (list, tuple)) else (value,)
            one = dataclasses.replace(self, several=False)
            return bool(values) and all(one.admits(item) for item in values)
        if isinstance(value, bool) and bool not in self.kinds:
            return False
        return isinstance(value, self.kinds) and self.accepts(value)


def number_type(
    allowed: str,
    convert: Callable[[str], int] | Callable[[str], float],
    accepts: Callable[[Any], bool],
) -> OptionType:
    kinds = (int,) if convert is int else (int, float)
    return OptionType(allowed, convert, accepts, kinds)


positive_int = number_type("a positive integer", int, lambda v: v > 0)
non_negative_int = number_type("a non-negative integer", int, lambda v: v >= 0)
positive_float = number_type(
    "a positive number", float, lambda v: 0.0 < v < math.inf
)
non_negative_float = number_type(
    "a number >= 0", float, lambda v: 0.0 <= v < math.inf
)
fraction = number_type(
    "a number in [0, 1)", float, lambda v: 0.0 <= v < 1.0
)
momentum = number_type(
    "a number in (0, 1)", float, lambda v: 0.0 < v < 1.0
)
seed_value = number_type(
    "an integer in [0, 2**32 - 1]", int, lambda v: 0 <= v < SEED_LIMIT
)
text = OptionType("a string", str, lambda v: True, (str,))

#: On/off options: `--name` and `--no-name`.
switch = OptionType("true or false", bool, lambda v: True, (bool,))

#: Options that are off unless given: `--name`.
present = OptionType("true or false", bool, lambda v: True, (bool,))


def one_of(*choices: str) -> OptionType:
    """The type of an option that takes one of a few names."""
    return OptionType(
        "one of " + ", ".join(choices), str, lambda v: v in choices, (str,),
        choices,
    )


def option(
    default: Any,
    kind: OptionType,
    help: str,
    *,
    unset: bool = False,
    training: bool = True,
    outputs: bool = False,
) -> Any:
    """One option: a dataclass field with its type and help.

    Args:
        default: The value when nothing sets it.
        kind: An `OptionType`.
        help: One phrase for `--help`.
        unset: `None` is allowed too (the option is off when unset).
        training: Whether the value changes what training computes; the
            others (where the run writes, how it reports) are left out of
            `RunConfig.fingerprint`.
        outputs: Whether the value changes what a run writes after
            training (its decoding, its exported files) though not the
            training itself: `RunConfig.output_options`, which a finished
            run must match. Such an option has `training=False`.
    """
    if outputs and training:
        raise ValueError("an option with outputs=True must have training=False")
    return dataclasses.field(
        default=default,
        metadata={
            "kind": kind, "help": help, "unset": unset, "training": training, "outputs": outputs,
        },
    )


def option_spec(config_class: type[RunConfig], name: str) -> Mapping[str, Any]:
    """The metadata of option `name`, from the class that defined it.

    A subclass that only changes a default redefines the field without
    metadata; the definition is then found further up the hierarchy.
    """
    for klass in config_class.__mro__:
        field = vars(klass).get("__dataclass_fields__", {}).get(name)
        if field is not None and field.metadata:
            return field.metadata
    raise LookupError(f"{config_class.__name__}.{name} is not an option")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The options every task shares; each task's configuration derives from it.

    A task's configuration sets these class attributes.

    Attributes:
        task: Its name on the command line.
        DESCRIPTION: One line for `--help`.
        DATA_SOURCES: The values `--data` accepts, each mapped to a
            description of the source (package and licence, or TFDS name).
        QUICK: The overrides `--quick` applies (a tiny run for tests).
        PRESETS: Named overrides for `--preset`.

    Raises:
        ConfigError: on construction, for any value the run cannot use.
    """

    task: ClassVar[str] = "TASK"
    DESCRIPTION: ClassVar[str] = "Train a kerasrnn recurrent model on one task."
    DATA_SOURCES: ClassVar[dict[str, str]] = {
        "embedded": "data inside an installed package"
    }
    QUICK: ClassVar[dict[str, Any]] = {}
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}

    cell: str = option(
        "lstm", one_of(*CELLS), "recurrent cell from kerasrnn, run by keras.layers.RNN"
    )
    units: int = option(64, positive_int, "hidden units per recurrent layer")
    layers: int = option(1, positive_int, "number of stacked recurrent layers")
    bidirectional: bool = option(
        False, switch, "wrap each recurrent layer in keras.layers.Bidirectional"
    )
    cell_dropout: float = option(
        0.0,
        fraction,
        "the cells' input dropout: the fraction of each step's input units "
        "a cell drops (one mask per sequence), in [0, 1)",
    )
    epochs: int = option(10, positive_int, "training epochs")
    batch_size: int = option(
        32, positive_int, "global batch size (split across replicas)"
    )
    learning_rate: float = option(1e-3, positive_float, "Adam learning rate")
    clipnorm: float | None = option(
        None,
        positive_float,
        "clip each gradient to this L2 norm (eq:rnn-clip); no clipping if unset",
        unset=True,
    )
    ema_momentum: float | None = option(
        None,
        momentum,
        "keep an exponential moving average of the weights with this "
        "momentum m (about the last 1/(1 - m) steps) and end training with "
        "it (Polyak averaging); off if unset",
        unset=True,
    )
    seed: int = option(
        0, seed_value, "seed of weights, dropout and data shuffling"
    )
    shuffle: bool = option(
        True,
        switch,
        "reshuffle the training examples every epoch, seeded by --seed (the "
        "same command gives the same batches); --no-shuffle keeps the data "
        "order, which reproduces a run across --strategy choices",
    )
    # The command line's help adds the task's sources (`cli.data_help`).
    data: str = option("embedded", text, "where the data come from")
    # None (unset) becomes `runs/<task>` in `__post_init__`: a configuration's
    # `out` is always a path.
    out: str = option(
        None,
        text,
        "output directory; rerunning the same command resumes an "
        "interrupted run from its backup there",
        unset=True,
        training=False,
    )
    strategy: str = option(
        "default",
        one_of(*STRATEGIES),
        "tf.distribute strategy: one device, MirroredStrategy over the local "
        "devices, or MultiWorkerMirroredStrategy from TF_CONFIG",
        training=False,
    )
    quick: bool = option(
        False,
        present,
        "a short run on little data, to try the task or as a smoke test",
        training=False,
    )
    preset: str | None = option(
        None, text, "named configuration of this task", unset=True, training=False
    )
    verbose: bool = option(
        False,
        present,
        "show TensorFlow's start-up messages (oneDNN, CUDA, absl), which are "
        "otherwise held back unless TF_CPP_MIN_LOG_LEVEL is set",
        training=False,
    )
    restart: bool = option(
        False,
        present,
        "discard the run of this task in --out, finished or not, whatever "
        "its options (the files its run.json lists and its backup), and "
        "start over: the one way to discard a run of this task",
        training=False,
    )
    overwrite: bool = option(
        False,
        present,
        "write into a non-empty --out that holds no run of this task: "
        "another task's run there is removed (the files its run.json lists "
        "and its backup), every other file is kept; refused, changing "
        "nothing, where --out holds a run of this task (see --restart) or "
        "an entry no run wrote under a name a run writes (backup/, "
        "tensorboard/, run.json, ...)",
        training=False,
    )

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            spec = option_spec(type(self), field.name)
            value = getattr(self, field.name)
            if value is None and spec["unset"]:
                continue
            if not spec["kind"].admits(value):
                raise ConfigError(
                    f"argument {flag(field.name)}: must be "
                    f"{spec['kind'].allowed}; received {value!r}"
                )
        self.check_choice("data", self.DATA_SOURCES)
        if self.preset is not None:
            self.check_choice("preset", self.PRESETS)
        if self.out is None:
            # A frozen dataclass sets a derived default only this way.
            object.__setattr__(self, "out", f"runs/{self.task}")
        if not self.out.strip():
            raise ConfigError(
                f"argument --out: must be a directory path; received {self.out!r}"
            )

    def check_choice(self, name: str, allowed: Mapping[str, Any]) -> None:
        value = getattr(self, name)
        if value not in allowed:
            raise ConfigError(
                f"argument {flag(name)}: must be one of {', '.join(allowed)}; "
                f"received {value!r}"
            )

    def fingerprint(self) -> dict[str, Any]:
        """The options that change what training computes, name -> value.

        Two runs with the same fingerprint train the same model the same
        way; a backup may be resumed only by a run with its fingerprint.
        Where the run writes (`out`, `restart`, `overwrite`), how it is
        distributed (`strategy`), how it was resolved (`quick`, `preset`),
        what it prints (`verbose`) and what it reports after training are
        left out.
        """
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if option_spec(type(self), field.name)["training"]
        }

    def output_options(self) -> dict[str, Any]:
        """The options that change only what the run writes after training
        (declared `option(..., outputs=True)`), name -> value.

        An unfinished run resumes whatever their values, since its outputs
        are written at its end; a finished run's outputs were made with the
        values its `metrics.json` records (`args`), and a rerun asking for
        others is refused, naming them, rather than reported complete with
        outputs of another option.
        """
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if option_spec(type(self), field.name)["outputs"]
        }

    def check_environment(self, environ: Mapping[str, str] | None = None) -> None:
        """Check what the run needs outside itself: `--out`, `TF_CONFIG`.

        Args:
            environ: The environment variables; `os.environ` if None.

        Raises:
            ConfigError: `--out` names a file, lies under a file, or cannot
                be created or written; `--strategy multiworker` without a
                readable `TF_CONFIG`.
        """
        environ = os.environ if environ is None else environ
        check_output_directory(self.out)
        if self.strategy == "multiworker":
            read_tf_config(environ.get(TF_CONFIG))


def check_output_directory(out: str) -> None:
    """Refuse an `--out` that is not, and cannot become, a writable directory."""
    path = pathlib.Path(out)
    existing = path
    try:
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        is_directory = existing.is_dir()
    except OSError as error:
        raise ConfigError(
            f"argument --out: {out!r} cannot be used: {error.strerror}"
        ) from None
    if not is_directory:
        where = "is a file" if existing == path else f"lies under the file {str(existing)!r}"
        raise ConfigError(
            f"argument --out: {out!r} {where}; must be a directory that "
            "exists or can be created"
        )
    try:
        # Creating a file is the only test that holds for every user and
        # file system (os.access says yes to root on a read-only mount).
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise ConfigError(
            f"argument --out: {out!r} cannot be written: {str(existing)!r} "
            f"refuses new files ({error.strerror}); must be a directory this "
            "user can write"
        ) from None


class ClusterTask(NamedTuple):
    """This process's place in a multi-worker cluster, from `TF_CONFIG`.

    Attributes:
        cluster: Role -> addresses, e.g. `{"worker": ["host0:1", "host1:1"]}`.
        kind: This process's role (`"worker"`, `"chief"`, ...).
        index: Its index among the processes of that role.
    """

    cluster: dict[str, Any]
    kind: str
    # TF_CONFIG's name for it, though it shadows `tuple.index`.
    index: int  # type: ignore[assignment]


def read_tf_config(value: str | None) -> ClusterTask:
    """Read `TF_CONFIG` as `tf.distribute.MultiWorkerMirroredStrategy` does.

    Args:
        value: The variable's text, or None when it is not set.

    Returns:
        A `ClusterTask`; the index defaults to 0, as TensorFlow's does.

    Raises:
        ConfigError: `value` is None, or not a JSON object with a
            `"cluster"` object and a `"task"` with a `"type"` (and an
            integer `"index"`).
    """
    if value is None:
        raise ConfigError(
            "argument --strategy: 'multiworker' reads its cluster from the "
            "environment variable TF_CONFIG, and TF_CONFIG is not set; set it "
            "(python -m pydoc kerasrnn_pipelines.distributed shows an example) "
            "or choose default or mirrored"
        )
    try:
        parsed = json.loads(value)
        cluster, task = parsed["cluster"], parsed["task"]
        place = ClusterTask(cluster, task["type"], int(task.get("index", 0)))
    except (ValueError, TypeError, KeyError, AttributeError):
        place = None
    if place is None or not isinstance(place.cluster, dict) or not isinstance(place.kind, str):
        raise ConfigError(
            "argument --strategy: 'multiworker' needs TF_CONFIG to be a JSON "
            'object with a "cluster" and this process\'s "task" (its "type" '
            f'and "index"); received TF_CONFIG={value!r}'
        )
    return place


@dataclasses.dataclass(frozen=True)
class RecurrentStackConfig(RunConfig):
    """The options of tasks built on `kerasrnn_pipelines.recurrent`'s layer stack."""

    dropout: float = option(
        0.0,
        fraction,
        "dropout after each recurrent layer (keras.layers.Dropout on its "
        "outputs), in [0, 1); see --cell-dropout for the cells' own",
    )


@dataclasses.dataclass(frozen=True)
class LiteRTConfig(RunConfig):
    """The options of tasks that write `model.tflite` (every task but charlm)."""

    litert_quantize: str = option(
        "float32",
        one_of(*LITERT_QUANTIZE),
        "the weights of model.tflite: float32 (the reference: the SavedModel's "
        "answers), float16 (half the bytes) or dynamic_int8 (weight matrices "
        "of 1024 elements or more as int8: smaller and faster, some answers "
        "differ); metrics.json scores the file through the interpreter",
        training=False,
        outputs=True,
    )

    def fingerprint(self) -> dict[str, Any]:
        """`RunConfig.fingerprint`, and `litert_quantize` unless it is float32.

        The precision changes no weight, only `model.tflite`, and is one of
        the `output_options` a finished run must match. It is in the
        fingerprint too, where runs have recorded it since the option came
        (so an unfinished run resumes only at its precision); float32 is
        left out so that runs recorded before the option existed keep
        their fingerprint and still resume.
        """
        fingerprint = super().fingerprint()
        if self.litert_quantize != "float32":
            fingerprint["litert_quantize"] = self.litert_quantize
        return fingerprint
