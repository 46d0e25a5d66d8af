"""One shared harness for the cell tests: every cell × option, and its reference.

`SPECS` lists each configuration once: how to build the kerasrnn cell, and
the NumPy step of the seed equations it must reproduce. Tests parameterise
over it instead of copying blocks per cell.
"""

import dataclasses
import functools

import numpy as np

import kerasrnn
from tests.kerasrnn import numpy_reference as ref


@dataclasses.dataclass(frozen=True)
class CellSpec:
    id: str
    cls: type
    kwargs: dict
    gates: int
    states: int
    step: callable  # step(w, x, states) with w the gate blocks

    def make(self, units, **extra):
        return self.cls(units, **{**self.kwargs, **extra})


def _leaky(w, x, states, alpha, act="tanh"):
    return ref.leaky_step(w, x, states, alpha, act)


SPECS = [
    CellSpec("elman", kerasrnn.ElmanCell, {}, 1, 1, ref.elman_step),
    CellSpec(
        "elman-softsign-nobias",
        kerasrnn.ElmanCell,
        {"activation": "softsign", "use_bias": False},
        1,
        1,
        functools.partial(ref.elman_step, act="softsign"),
    ),
    CellSpec(
        "leaky-0.3",
        kerasrnn.LeakyCell,
        {"alpha": 0.3},
        1,
        1,
        functools.partial(_leaky, alpha=0.3),
    ),
    CellSpec(
        "leaky-learned",
        kerasrnn.LeakyCell,
        {"alpha": 0.4, "learn_alpha": True},
        1,
        1,
        functools.partial(_leaky, alpha=0.4),
    ),
    CellSpec("lstm", kerasrnn.LSTMCell, {}, 4, 2, ref.lstm_step),
    CellSpec(
        "lstm-softsign-hardsigmoid-nobias",
        kerasrnn.LSTMCell,
        {
            "activation": "softsign",
            "recurrent_activation": "hard_sigmoid",
            "use_bias": False,
        },
        4,
        2,
        functools.partial(ref.lstm_step, act="softsign", gate="hard_sigmoid"),
    ),
    CellSpec("gru", kerasrnn.GRUCell, {}, 3, 1, ref.gru_step),
    CellSpec(
        "gru-reset-after",
        kerasrnn.GRUCell,
        {"reset_after": True},
        3,
        1,
        functools.partial(ref.gru_step, reset_after=True),
    ),
    CellSpec(
        "gru-softsign-hardsigmoid",
        kerasrnn.GRUCell,
        {"activation": "softsign", "recurrent_activation": "hard_sigmoid"},
        3,
        1,
        functools.partial(ref.gru_step, act="softsign", gate="hard_sigmoid"),
    ),
]

SPEC_IDS = [spec.id for spec in SPECS]


def randomize(cell, rng, scale=0.6):
    """Give every weight of a built cell random, non-constant values.

    Constant initialisers cannot tell gate blocks apart; random ones catch
    a swapped gate order or a transposed kernel.
    """
    for weight in cell.weights:
        if weight.name == "alpha":
            weight.assign(rng.uniform(0.1, 0.9, size=weight.shape))
        else:
            weight.assign(rng.normal(scale=scale, size=weight.shape))


def reference_step(spec, cell):
    """The NumPy step for `cell`'s current weights."""
    bias = None if cell.bias is None else np.asarray(cell.bias, np.float64)
    blocks = ref.gate_blocks(
        np.asarray(cell.kernel, np.float64),
        np.asarray(cell.recurrent_kernel, np.float64),
        bias,
        spec.gates,
    )
    if getattr(cell, "learn_alpha", False):
        alpha = np.asarray(cell.alpha_weight, np.float64)
        return functools.partial(ref.leaky_step, blocks, alpha=alpha)
    return functools.partial(spec.step, blocks)


def zero_states(spec, batch, units):
    return [np.zeros((batch, units)) for _ in range(spec.states)]
