"""What kerasrnn's arguments allow: the names they choose from and the
bounds of their numbers, each defined here once.

`kerasrnn.seq2seq` and `kerasrnn.export` import these, and so does
`kerasrnn-train`, which refuses a value its run could not use before
TensorFlow loads (one line, exit status 2). This module therefore imports
nothing, not even from kerasrnn, and neither does the package's `__init__`
import Keras or TensorFlow: `import kerasrnn.allowed` loads neither.
"""

#: `Seq2Seq(context=...)`: how the decoder receives the encoder's context
#: (see `kerasrnn.seq2seq.model`).
CONTEXTS = ("initial_state", "every_step", "both")

#: `Seq2Seq(attention=...)` besides None: additive (Bahdanau) and general
#: (Luong) attention over the encoder's outputs.
ATTENTIONS = ("bahdanau", "luong")

#: The most steps a decoder runs (`max_target_length`): an int32 index with
#: room to spare, and outputs of (batch, [B,] max_target_length) ids
#: (sampling's noise: (max_target_length, batch, V) floats) that are
#: allocated before the first step.
MAX_DECODE_LENGTH = 2**16

#: The longest source a seq2seq LiteRT export reads (`max_source_length`),
#: and the longest answer of a model whose right-to-left members rescore
#: the beam (`max_target_length`). The file unrolls the encoder over every
#: source step, and a rescorer's teacher-forced decoder over every target
#: step, each step's operators held in the file; the converter's time grows
#: faster than the steps, about four times per doubling at these lengths:
#: minutes at this bound on two CPU cores (Deploying's "Lengths" section
#: gives the measurements). The beam search's own loop is not unrolled: a
#: model without rescorers takes any `max_target_length` up to
#: `MAX_DECODE_LENGTH`.
MAX_LITERT_UNROLLED_LENGTH = 128

#: The largest GNMT length penalty α of beam search: ((5 + L)/6)^α stays
#: below 2.1e32 for every length L up to the decoders' most steps (65536,
#: `MAX_DECODE_LENGTH`), so that scores neither
#: overflow float32 (3.4e38) nor collapse to 0 and lose their order.
MAX_LENGTH_PENALTY = 8.0

#: What `quantize` accepts: `None` keeps float32 weights; `"float16"`
#: stores the weights as float16 (half the size, computed in float32);
#: `"dynamic_int8"` stores weight matrices of 1024 elements or more as int8
#: with float scales and quantizes activations on the fly (the converter's
#: dynamic-range mode; smaller weights stay float32).
QUANTIZE_OPTIONS = (None, "float16", "dynamic_int8")

#: The largest distillation temperature τ (`Distiller`, `distillation_loss`):
#: float32 rounds each log-probability to about 6e-8 of its size, and the
#: KL term multiplies that rounding by τ², so that beyond 100 it is no
#: longer small beside the term (τ = 10^6 turns a loss near 9 into
#: thousands); and by a few tens τ²·KL has reached its limit (matching the
#: logits), so a larger τ would add rounding and nothing else.
MAX_DISTILLATION_TEMPERATURE = 100.0
