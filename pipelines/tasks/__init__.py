"""The task registry and the contract every task follows.

`kerasrnn-train TASK` looks TASK up here. Its configuration class
(`kerasrnn_pipelines.tasks.options.<task>`, no TensorFlow) is imported to parse and
check the command line; its module (TensorFlow) only once the run starts.
A task whose module is missing or broken never stops the others.

A task's configuration is a frozen dataclass derived from
`kerasrnn_pipelines.options.RunConfig`: the options, their types, defaults, help,
`QUICK` and `PRESETS`, `DESCRIPTION` and `DATA_SOURCES` (see there).

A task module provides:

- `HEADLINE_METRIC`: `(metric, baseline, better)`, the names of the metric
  that sums the run up and of the baseline measured in the same run, both
  keys of what `run` returns, and `"lower"` or `"higher"`, the direction in
  which the metric is better.
- `run(config, context) -> dict`: builds data and model, trains, evaluates
  and returns the final metrics (JSON-serialisable, names as the task
  documents them, e.g. `test_rmse`). `config` is the task's configuration;
  `context` a `kerasrnn_pipelines.training.RunContext` (the distribution strategy,
  the output directory and the shared training steps `compile`, `fit`,
  `save`).

Token ids, in every task that reads tokens, are those of
`kerasrnn.seq2seq.Vocabulary`, whose module documents the reserved ids.
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kerasrnn_pipelines.options import RunConfig

#: Task name -> its module; imported when the run starts.
TASKS = {
    "forecast": "kerasrnn_pipelines.tasks.forecast",
    "classify": "kerasrnn_pipelines.tasks.classify",
    "charlm": "kerasrnn_pipelines.tasks.charlm",
    "tag": "kerasrnn_pipelines.tasks.tag",
    "g2p": "kerasrnn_pipelines.tasks.g2p",
    "translate": "kerasrnn_pipelines.tasks.translate",
}

#: Task name -> `module:class` of its configuration; imported to parse.
CONFIGS = {
    "forecast": "kerasrnn_pipelines.tasks.options.forecast_config:ForecastConfig",
    "classify": "kerasrnn_pipelines.tasks.options.classify_config:ClassifyConfig",
    "charlm": "kerasrnn_pipelines.tasks.options.charlm_config:CharLMConfig",
    "tag": "kerasrnn_pipelines.tasks.options.tag_config:TagConfig",
    "g2p": "kerasrnn_pipelines.tasks.options.g2p_config:G2PConfig",
    "translate": "kerasrnn_pipelines.tasks.options.translate_config:TranslateConfig",
}


def check_task_name(name: str) -> None:
    """Refuse a task name that is not registered (ValueError)."""
    if name not in TASKS:
        raise ValueError(
            f"Argument `task` must be one of {sorted(TASKS)}. "
            f"Received: task={name!r}"
        )


def load_task(name: str) -> types.ModuleType:
    """Import and return the module of task `name` (this loads TensorFlow).

    Raises:
        ValueError: `name` is not a registered task.
    """
    check_task_name(name)
    return importlib.import_module(TASKS[name])


def load_config_class(name: str) -> type[RunConfig]:
    """The configuration class of task `name`, without loading TensorFlow.

    Raises:
        ValueError: `name` is not a registered task.
    """
    check_task_name(name)
    module, _, class_name = CONFIGS[name].partition(":")
    return getattr(importlib.import_module(module), class_name)
