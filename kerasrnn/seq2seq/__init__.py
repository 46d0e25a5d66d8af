"""Sequence-to-sequence learning with kerasrnn (or Keras) cells.

- `Seq2Seq`: the encoder–decoder of `eq:rnn-seq2seq`, three ways of giving
  the decoder its context, Bahdanau or Luong attention (`BahdanauAttention`,
  `LuongAttention`), teacher forcing or scheduled sampling;
  `SequenceCrossEntropy` and `teacher_forcing_pair` to train it with `fit`.
- `LinearSamplingSchedule`, `ExponentialSamplingSchedule`,
  `InverseSigmoidSamplingSchedule`: ε of scheduled sampling.
- `Seq2SeqEnsemble`: N encoder–decoders trained side by side, decoded with
  the mean of their next-token distributions; members built with
  `target_order="right_to_left"` read the target backwards and rescore beam
  search's hypotheses (`kerasrnn.seq2seq.target_order`).
- `Distiller`, `distillation_loss`, `teacher_logits`: a small student
  trained on a teacher's next-token distributions (token-level knowledge
  distillation); `teacher_targets`: a teacher's beam answers as training
  targets (sequence-level) (`kerasrnn.seq2seq.distillation`).
- `greedy_decode`, `sample_decode`, `beam_search_decode`: compiled decoders,
  each returning a `DecodeResult`; they decode any `DecodableModel` (the
  protocol `Seq2Seq` and `Seq2SeqEnsemble` implement), whose `decode_step`
  returns a `DecoderStep`.
- `Vocabulary` and the reserved ids `PAD_ID`, `START_ID`, `END_ID`,
  `UNKNOWN_ID`.
- `export_serving`, `StringSeq2Seq`: a string-in, string-out SavedModel.
- `export_litert`: ids in, ids out, encoder and beam search in one LiteRT
  file, with `vocabulary.json` beside it (`kerasrnn.export.seq2seq_litert`).
- `DecodingSpec`, `TextSpec`: what both exports decode with (beam, length
  bounds) and how they read and write text, said once and recorded in
  each export (`kerasrnn.seq2seq.specs`).
"""

import importlib
from typing import TYPE_CHECKING, Any

from kerasrnn.optional_tensorflow import missing_tensorflow

# Every module below is written with TensorFlow: without it, one line says
# so instead of a traceback from whichever imports it first.
try:
    import tensorflow  # noqa: F401
except ImportError as error:
    raise missing_tensorflow("kerasrnn.seq2seq", error) from None

from kerasrnn.seq2seq.attention import (
    ATTENTIONS,
    BahdanauAttention,
    LuongAttention,
)
from kerasrnn.seq2seq.decoding import (
    DecodeResult,
    beam_search_decode,
    greedy_decode,
    sample_decode,
)
from kerasrnn.seq2seq.distillation import (
    Distiller,
    distillation_loss,
    teacher_logits,
    teacher_targets,
)
from kerasrnn.seq2seq.ensemble import Seq2SeqEnsemble
from kerasrnn.seq2seq.loss import SequenceCrossEntropy, next_token_log_probs
from kerasrnn.seq2seq.model import CONTEXTS, Seq2Seq
from kerasrnn.seq2seq.protocol import DecodableModel, DecoderStep
from kerasrnn.seq2seq.schedules import (
    ExponentialSamplingSchedule,
    InverseSigmoidSamplingSchedule,
    LinearSamplingSchedule,
    SamplingSchedule,
)
from kerasrnn.seq2seq.specs import DecodingSpec, TextSpec
from kerasrnn.seq2seq.teacher_forcing import teacher_forcing_pair
from kerasrnn.seq2seq.vocabulary import (
    END_ID,
    PAD_ID,
    START_ID,
    UNKNOWN_ID,
    Vocabulary,
)

if TYPE_CHECKING:
    from kerasrnn.export.seq2seq_litert import export_litert
    from kerasrnn.export.seq2seq_savedmodel import StringSeq2Seq, export_serving

#: The exports, name -> module: `kerasrnn.export` builds on this package,
#: so they are imported on first use, never as this package loads (which
#: the exporters' own imports of `kerasrnn.seq2seq.*` start).
_EXPORTS = {
    "StringSeq2Seq": "kerasrnn.export.seq2seq_savedmodel",
    "export_litert": "kerasrnn.export.seq2seq_litert",
    "export_serving": "kerasrnn.export.seq2seq_savedmodel",
}

__all__ = [
    "ATTENTIONS",
    "BahdanauAttention",
    "CONTEXTS",
    "DecodableModel",
    "DecodeResult",
    "DecodingSpec",
    "DecoderStep",
    "Distiller",
    "LuongAttention",
    "END_ID",
    "ExponentialSamplingSchedule",
    "InverseSigmoidSamplingSchedule",
    "LinearSamplingSchedule",
    "PAD_ID",
    "START_ID",
    "SamplingSchedule",
    "Seq2Seq",
    "Seq2SeqEnsemble",
    "SequenceCrossEntropy",
    "StringSeq2Seq",
    "TextSpec",
    "UNKNOWN_ID",
    "Vocabulary",
    "beam_search_decode",
    "distillation_loss",
    "export_litert",
    "export_serving",
    "greedy_decode",
    "next_token_log_probs",
    "sample_decode",
    "teacher_forcing_pair",
    "teacher_logits",
    "teacher_targets",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'kerasrnn.seq2seq' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    # Later lookups find it without coming back here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
