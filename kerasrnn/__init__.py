"""kerasrnn: textbook recurrent cells for Keras 3.

The public API; everything else is internal.

The cells, parameter accounting, BPTT, gradient diagnostics and conversion
are imported here and run on any Keras backend without TensorFlow. The
names that need TensorFlow, `seq2seq` and `export_litert`, are imported on
first use instead (`seq2seq` at once on the TensorFlow backend, which has
loaded TensorFlow anyway), so that `import kerasrnn` under
`KERAS_BACKEND=jax` never loads TensorFlow; without it, using one of them
raises an `ImportError` that says so in one line.
"""

import importlib
import os
import sys
from typing import Any

from kerasrnn.native_output import held_back_stderr

# Importing Keras loads TensorFlow on its default backend, which prints its
# start-up lines from C++ (oneDNN, the CUDA stub, absl's notice, a failed
# cuInit on a machine without a GPU) before any log level applies. When
# importing kerasrnn is what loads TensorFlow, they are held back, as
# `kerasrnn-train` holds them back, and shown only if loading fails; the
# devices are listed inside, since that is when cuInit reports (listing
# leaves the runtime unconfigured). Nothing is held back from a program
# that loaded TensorFlow first or set `TF_CPP_MIN_LOG_LEVEL` (it chose what
# TensorFlow shows), and TensorFlow's log level is left as it is: setting
# it here would quiet TensorFlow's later warnings in the whole process.
_LOADS_TENSORFLOW = "tensorflow" not in sys.modules and "TF_CPP_MIN_LOG_LEVEL" not in os.environ
with held_back_stderr(_LOADS_TENSORFLOW):
    import keras

    from kerasrnn import bptt
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
    from kerasrnn.gradients import gradient_flow, jacobian_bound, plot_gradient_flow
    from kerasrnn.optional_tensorflow import import_tensorflow
    from kerasrnn.params import LayerParams, ParamReport, explain_params, param_count

    if _LOADS_TENSORFLOW and "tensorflow" in sys.modules:
        sys.modules["tensorflow"].config.list_physical_devices()

#: Public name -> (module, attribute of it, or None for the module itself).
_NEEDS_TENSORFLOW = {
    "seq2seq": ("kerasrnn.seq2seq", None),
    "export_litert": ("kerasrnn.export.cell_litert", "export_litert"),
    "count_litert_operators": ("kerasrnn.export.converter", "count_litert_operators"),
    "count_litert_loop_operators": ("kerasrnn.export.converter", "count_litert_loop_operators"),
}

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


# Keras's TensorFlow backend has loaded TensorFlow already. Importing the
# sequence-to-sequence models now registers their classes, so that
# `keras.saving.load_model` finds them after a plain `import kerasrnn`.
if keras.backend.backend() == "tensorflow":
    from kerasrnn import seq2seq


def __getattr__(name: str) -> Any:
    if name not in _NEEDS_TENSORFLOW:
        raise AttributeError(f"module 'kerasrnn' has no attribute {name!r}")
    module_name, attribute = _NEEDS_TENSORFLOW[name]
    import_tensorflow(f"kerasrnn.{name}")
    value = importlib.import_module(module_name)
    if attribute is not None:
        value = getattr(value, attribute)
    # Later lookups find it without coming back here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NEEDS_TENSORFLOW))
