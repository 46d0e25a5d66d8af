"""Recurrent cells that plug into `keras.layers.RNN`."""

from kerasrnn.cells.deep import DeepTransitionCell, SkipStackedCells
from kerasrnn.cells.elman import ElmanCell
from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.leaky import LeakyCell
from kerasrnn.cells.lstm import LSTMBias, LSTMCell
from kerasrnn.cells.multiscale import MultiScaleCell
from kerasrnn.cells.skip import TemporalSkipCell

__all__ = [
    "DeepTransitionCell",
    "ElmanCell",
    "GRUCell",
    "LSTMBias",
    "LSTMCell",
    "LeakyCell",
    "MultiScaleCell",
    "SkipStackedCells",
    "TemporalSkipCell",
]
