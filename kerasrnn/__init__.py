"""kerasrnn: textbook recurrent cells for Keras 3.

The public API; everything else is internal.
"""

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
from kerasrnn.gradients import gradient_flow, jacobian_bound, plot_gradient_flow
from kerasrnn.params import LayerParams, ParamReport, explain_params, param_count

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
    "explain_params",
    "from_keras",
    "gradient_flow",
    "jacobian_bound",
    "param_count",
    "plot_gradient_flow",
    "seq2seq",
    "to_keras",
]
