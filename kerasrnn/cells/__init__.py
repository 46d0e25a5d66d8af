"""Recurrent cells that plug into `keras.layers.RNN`."""

from kerasrnn.cells.elman import ElmanCell
from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.leaky import LeakyCell
from kerasrnn.cells.lstm import LSTMCell

__all__ = ["ElmanCell", "GRUCell", "LSTMCell", "LeakyCell"]
