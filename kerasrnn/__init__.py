"""kerasrnn: textbook recurrent cells for Keras 3.

The public API; everything else is internal.

`import kerasrnn` loads neither Keras nor TensorFlow: each public name is
imported on first use (`kerasrnn.LSTMCell`, `from kerasrnn import
LSTMCell`). The cells, parameter accounting, BPTT, gradient diagnostics and
conversion run on any Keras backend without TensorFlow; the names that
need it, `seq2seq`, `export_litert` and the operator counts, say so in one
line (an `ImportError`) where it cannot be imported.

Keras finds kerasrnn's saved classes after a plain `import kerasrnn`:
they are registered with Keras as soon as Keras is loaded (at once if it
is loaded already), and on the TensorFlow backend the
sequence-to-sequence classes with them. Only a program that imports one
of kerasrnn's modules directly (`from kerasrnn.cells import LSTMCell`)
before Keras registers that module's classes alone.
"""

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kerasrnn.first_import import around_first_import
from kerasrnn.native_output import hold_back_tensorflow_start_up
from kerasrnn.optional_tensorflow import import_tensorflow
from kerasrnn.versions import warn_if_untested

if TYPE_CHECKING:
    from kerasrnn import bptt, seq2seq
    from kerasrnn.cells import (
        DeepTransitionCell,
        ElmanCell,
        GRUCell,
        LeakyCell,
        LSTMBias,
        LSTMCell,
        MultiScaleCell,
        SkipStackedCells,
        TemporalSkipCell,
    )
    from kerasrnn.convert import from_keras, to_keras
    from kerasrnn.export.cell_litert import export_litert
    from kerasrnn.export.converter import count_litert_loop_operators, count_litert_operators
    from kerasrnn.gradients import gradient_flow, jacobian_bound, plot_gradient_flow
    from kerasrnn.params import LayerParams, ParamReport, explain_params, param_count

# Loading TensorFlow prints its start-up lines from C++ (oneDNN, the CUDA
# stub, absl's notice, a failed cuInit on a machine without a GPU) before
# any log level applies. When TensorFlow loads after `import kerasrnn`
# (kerasrnn's first use, or `import keras` on its default backend), they
# are held back, as `kerasrnn-train` holds them back, and shown only if
# loading fails. Nothing is held back from a program that loaded
# TensorFlow first or set `TF_CPP_MIN_LOG_LEVEL` (it chose what TensorFlow
# shows), and TensorFlow's log level is left as it is
# (`kerasrnn.native_output`).
hold_back_tensorflow_start_up()
warn_if_untested()

#: Module -> the public names it defines.
_DEFINED_IN = {
    "kerasrnn.cells": (
        "DeepTransitionCell",
        "ElmanCell",
        "GRUCell",
        "LSTMBias",
        "LSTMCell",
        "LeakyCell",
        "MultiScaleCell",
        "SkipStackedCells",
        "TemporalSkipCell",
    ),
    "kerasrnn.convert": ("from_keras", "to_keras"),
    "kerasrnn.export.cell_litert": ("export_litert",),
    "kerasrnn.export.converter": ("count_litert_loop_operators", "count_litert_operators"),
    "kerasrnn.gradients": ("gradient_flow", "jacobian_bound", "plot_gradient_flow"),
    "kerasrnn.params": ("LayerParams", "ParamReport", "explain_params", "param_count"),
}

#: Public name -> (module, attribute of it, or None for the module itself).
_PUBLIC: dict[str, tuple[str, str | None]] = {
    "bptt": ("kerasrnn.bptt", None),
    "seq2seq": ("kerasrnn.seq2seq", None),
    **{name: (module, name) for module, names in _DEFINED_IN.items() for name in names},
}

#: The public names written with TensorFlow.
_NEEDS_TENSORFLOW = frozenset(
    {"seq2seq", "export_litert", "count_litert_operators", "count_litert_loop_operators"}
)

__all__ = [
    "DeepTransitionCell",
    "ElmanCell",
    "GRUCell",
    "LSTMBias",
    "LSTMCell",
    "LayerParams",
    "LeakyCell",
    "MultiScaleCell",
    "ParamReport",
    "SkipStackedCells",
    "TemporalSkipCell",
    "bptt",
    "count_litert_loop_operators",
    "count_litert_operators",
    "explain_params",
    "export_litert",
    "from_keras",
    "gradient_flow",
    "jacobian_bound",
    "param_count",
    "plot_gradient_flow",
    "seq2seq",
    "to_keras",
]


def _register_keras_classes() -> None:
    """Import the modules whose classes Keras must find to load a saved
    model: the cells, and on the TensorFlow backend the
    sequence-to-sequence models (Keras's TensorFlow backend has loaded
    TensorFlow already). Call only with Keras loaded."""
    importlib.import_module("kerasrnn.cells")
    if sys.modules["keras"].backend.backend() == "tensorflow":
        importlib.import_module("kerasrnn.seq2seq")


def _importing_kerasrnn_modules() -> bool:
    """Whether one of kerasrnn's modules (the package's `__init__` aside)
    is being imported: the import of Keras it started registers its
    classes as it goes, and importing others now could meet it half done."""
    return any(
        name.startswith("kerasrnn.") and getattr(module.__spec__, "_initializing", False)
        for name, module in list(sys.modules.items())
    )


@contextlib.contextmanager
def _registering_keras_classes() -> Iterator[None]:
    """Around Keras's first import: kerasrnn's classes registered after."""
    started_by_kerasrnn = _importing_kerasrnn_modules()
    yield
    if not started_by_kerasrnn:
        _register_keras_classes()


if "keras" in sys.modules:
    _register_keras_classes()
else:
    around_first_import("keras", _registering_keras_classes)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'kerasrnn' has no attribute {name!r}")
    module_name, attribute = _PUBLIC[name]
    if name in _NEEDS_TENSORFLOW:
        import_tensorflow(f"kerasrnn.{name}")
    value = importlib.import_module(module_name)
    if attribute is not None:
        value = getattr(value, attribute)
    # A first use that loaded Keras itself registers the rest now.
    _register_keras_classes()
    # Later lookups find it without coming back here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
