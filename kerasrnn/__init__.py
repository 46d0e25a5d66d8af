"""kerasrnn: textbook recurrent cells for Keras 3.

The public API; everything else is internal.
"""

from kerasrnn.cells import ElmanCell, GRUCell, LeakyCell, LSTMCell
from kerasrnn.convert import from_keras, to_keras
from kerasrnn.params import LayerParams, ParamReport, explain_params, param_count

__all__ = [
    "ElmanCell",
    "GRUCell",
    "LSTMCell",
    "LayerParams",
    "LeakyCell",
    "ParamReport",
    "explain_params",
    "from_keras",
    "param_count",
    "to_keras",
]
