"""The edits kerasrnn makes to every flatbuffer LiteRT's converter writes.

`REWRITES` names each edit, what it matches in a converted file and what
it buys; `rewritten(content, model)` parses the converter's bytes once,
makes every edit in that order and serializes once (only if one changed
something). An edit either makes the file compute what the Keras model
computes (without it the file answers otherwise) or makes it faster, and
then it is kept only while `python -m benchmarks.litert --rewrites`
measures it more than 5% faster side by side (the documentation's Design
notes give the figures); each has a test that it
still fires on the installed converter and that the file still answers as
`predict` does.

`rewrites_off(*names)` leaves named edits out while the block runs: how
the benchmark and the tests compare a file with and without one.
"""

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from kerasrnn.export.fused_lstm import without_cell_clip
from kerasrnn.export.fused_rnn import as_sequence_rnn, elman_kernels
from kerasrnn.export.identity_slices import without_identity_slices
from kerasrnn.export.projected_lookup import projected_lookups
from kerasrnn.export.static_loops import static_loop_shapes
from kerasrnn.export.variable_tensors import zeroed_on_every_call
from kerasrnn.litert_internals import parsed, serialized

__all__ = ["REWRITES", "Rewrite", "rewrites_off", "rewritten"]


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One edit of a converted file.

    Attributes:
        name: How `rewrites_off` and the benchmark name it.
        matches: What in a converted file it changes.
        buys: Why: the answer it makes right, or the time it saves.
        apply: `(parsed file, Keras model or None) -> whether it changed
            anything`; edits the parsed file (`schema.ModelT`) in place.
    """

    name: str
    matches: str
    buys: str
    apply: Callable[[Any, Any], bool]


REWRITES: tuple[Rewrite, ...] = (
    Rewrite(
        name="cell_clip",
        matches="UNIDIRECTIONAL_SEQUENCE_LSTM operators with a cell_clip (the converter writes 10)",
        buys="Keras's LSTM equations: the converter bounds c_t to [-10, 10], Keras never does",
        apply=lambda model, keras_model: without_cell_clip(model),
    ),
    Rewrite(
        name="sequence_rnn",
        matches=(
            "UNIDIRECTIONAL_SEQUENCE_LSTM operators whose gates are zero and whose candidate "
            "weights are an Elman layer's (the stand-in `fused=True` traces)"
        ),
        buys=(
            "the Elman layer as UNIDIRECTIONAL_SEQUENCE_RNN: the stand-in computes tanh(c~) "
            "gated by sigmoid(0) = 0.5 and a cell state, not eq:rnn-hidden"
        ),
        apply=lambda model, keras_model: keras_model is not None
        and as_sequence_rnn(model, elman_kernels(keras_model)),
    ),
    Rewrite(
        name="zeroed_states",
        matches="variable tensors a subgraph's operators read before writing (their states)",
        buys=(
            "calls that never depend on the call before: each starts from zero states, "
            "as the model was traced"
        ),
        apply=lambda model, keras_model: zeroed_on_every_call(model),
    ),
    Rewrite(
        name="projected_lookup",
        matches=(
            "a GATHER of a float32 constant table read by one FULLY_CONNECTED of constant "
            "weights (a decoder's embedding and its projection)"
        ),
        buys="one GATHER of the table E W + b: a step reads k floats instead of all of W",
        apply=lambda model, keras_model: projected_lookups(model),
    ),
    Rewrite(
        name="static_loops",
        matches="unknown dimensions in the shape signatures of WHILE bodies and conditions",
        buys="LiteRT's static WHILE mode: the body is prepared once per call, not every step",
        apply=lambda model, keras_model: static_loop_shapes(model),
    ),
    Rewrite(
        name="identity_slices",
        matches="STRIDED_SLICE operators that copy their whole input (from x[:, None])",
        buys="one copy less per such slice at every call or loop step",
        apply=lambda model, keras_model: without_identity_slices(model),
    ),
)

_off: set[str] = set()


@contextlib.contextmanager
def rewrites_off(*names: str) -> Iterator[None]:
    """Leave the rewrites `names` out of every file written in the block.

    Raises:
        ValueError: a name is not one of `REWRITES`.
    """
    known = [rewrite.name for rewrite in REWRITES]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"Unknown rewrites {unknown}; the rewrites are {known}")
    before = set(_off)
    _off.update(names)
    try:
        yield
    finally:
        _off.clear()
        _off.update(before)


def rewritten(content: bytes, model: Any) -> bytes:
    """The converter's flatbuffer `content` with every rewrite of
    `REWRITES` made (but those `rewrites_off` leaves out); `model`, the
    Keras model converted or None, tells `sequence_rnn` its Elman layers."""
    tree = parsed(content)
    changed = False
    for rewrite in REWRITES:
        if rewrite.name not in _off:
            changed |= rewrite.apply(tree, model)
    return serialized(tree) if changed else content
