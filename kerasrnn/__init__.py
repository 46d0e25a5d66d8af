"""kerasrnn: textbook recurrent cells for Keras 3."""

from kerasrnn.cells import ElmanCell, GRUCell, LeakyCell, LSTMCell

__all__ = ["ElmanCell", "GRUCell", "LSTMCell", "LeakyCell"]
