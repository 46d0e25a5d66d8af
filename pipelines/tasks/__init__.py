"""The task registry and the contract every task module follows.

`kerasrnn-train TASK` looks TASK up in `TASKS` and imports its module only
then, so a task whose module is missing or broken never stops the others.

A task module provides:

- `DESCRIPTION` (str): one line for `--help`.
- `DATA_SOURCES` (dict str -> str): the values `--data` accepts, mapped to a
  description of the source (package and license, or TFDS name). The key
  `"embedded"` comes first and is the default: data inside an installed
  package, no network. A task without embedded data (`translate`) lists
  only TFDS sources and sets `data` in `DEFAULTS` to one of them; offline
  it fails at once with `pipelines.faults.DatasetNotOnDisk`.
- `DEFAULTS` (dict): the task's values for the shared options (`cell`,
  `units`, `layers`, `bidirectional`, `dropout`, `epochs`, `batch_size`,
  `learning_rate`, `clipnorm`, `seed`, ...; see `pipelines.cli.SHARED_DEFAULTS`)
  and for its own options.
- `QUICK` (dict): the overrides `--quick` applies (a tiny run for tests).
- `PRESETS` (dict str -> dict, optional): named overrides for `--preset`.
- `add_arguments(parser)` (optional): adds the task's own options to the
  `argparse` parser; their defaults become task defaults like `DEFAULTS`.
- `run(config, context) -> dict`: builds data and model, trains, evaluates
  and returns the final metrics (JSON-serialisable, names as the task
  documents them, e.g. `test_rmse`).

`config` is an `argparse.Namespace` whose values are resolved, lowest
precedence first: shared defaults, `DEFAULTS`, the chosen preset, `QUICK`
(with `--quick`), then what was typed on the command line. `context` is a
`pipelines.training.RunContext`: the distribution strategy, the output
directory and the shared training steps (`compile`, `fit`, `save`).
`pipelines.training.run_task` times the run and writes `metrics.json` with
the returned metrics, the resolved arguments and the data source.
"""

import importlib

#: Task name -> module path; modules are imported on first use.
TASKS = {
    "forecast": "pipelines.tasks.forecast",
    "classify": "pipelines.tasks.classify",
    "charlm": "pipelines.tasks.charlm",
    "tag": "pipelines.tasks.tag",
    "g2p": "pipelines.tasks.g2p",
    "translate": "pipelines.tasks.translate",
}


def load_task(name):
    """Import and return the module of task `name`.

    Raises:
        ValueError: `name` is not a registered task.
    """
    if name not in TASKS:
        raise ValueError(
            f"Argument `task` must be one of {sorted(TASKS)}. "
            f"Received: task={name!r}"
        )
    return importlib.import_module(TASKS[name])
