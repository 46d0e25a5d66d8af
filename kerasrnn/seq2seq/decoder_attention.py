"""Where each kind of attention enters the decoder step: none, Bahdanau
(before the cell) or Luong (after it).

`Seq2Seq` holds one `DecoderAttention` chosen by its `attention` argument
and asks it, never the kind's name, what the kind changes: the size of the
cell's input, the extra decoder state (Luong's input feeding carries ã), the
memory read from the encoder, and the step itself (`eq:rnn-seq2seq` with
attention, as the `Seq2Seq` module doc writes it):

- none:      s_t, d_t = f(d_{t-1}, x_t);
- Bahdanau:  α_t, a_t from d_{t-1}, then s_t, d_t = f(d_{t-1}, [x_t; a_t]);
- Luong:     s_t, d_t = f(d_{t-1}, [x_t; ã_{t-1}]) (ã_{t-1} with input
             feeding only), then α_t, a_t from s_t and ã_t = tanh(W_c [s_t; a_t]).
             A decoder step computes W_c [s_t; a_t] as W_s s_t + Σ_j α_tj
             (W_a h_j), W_c = [W_s W_a], with W_a h_j projected once per
             source: it reads W_s (n × n) instead of W_c (n × (n + m)).

x_t is what the decoder reads without attention ([E y_{t-1}] and c for the
every-step context); the step's output (s_t, or ã_t for Luong) goes to the
output projection. The layers that score and weigh the memory are
`kerasrnn.seq2seq.attention`'s.
"""

import abc

import keras
import tensorflow as tf
from keras import ops

from kerasrnn.seq2seq.attention import ATTENTIONS, BahdanauAttention, LuongAttention
from kerasrnn.validation import check_bool, check_choice, check_positive_int

#: What every decoder step reads, as `Seq2Seq.encode` returns it.
Context = dict[str, tf.Tensor]


class DecoderAttention(abc.ABC):
    """One kind of attention as the decoder step sees it.

    Attributes:
        kind: The `attention` argument that chose it: None, `"bahdanau"` or
            `"luong"`.
        layer: The attention layer (None without attention); `Seq2Seq`
            tracks it as its `attention` attribute.
        has_attention: Whether the decoder attends (and so gives α_t).
        feeds_the_cell: Whether attention's result is part of the cell's
            input, so that a teacher-forced decoder must run its steps one
            at a time instead of in one `keras.layers.RNN`.
        attention_units: Bahdanau's `attention_units` argument (None for
            the default, and for the other kinds).
        input_feeding: Luong's input feeding, True or False (None for the
            other kinds).
    """

    kind: str | None
    layer: keras.layers.Layer | None
    has_attention: bool
    feeds_the_cell: bool
    attention_units: int | None = None
    input_feeding: bool | None = None

    def input_size(self, context_size: int) -> int:
        """What attention adds to the size of the cell's input, for
        memories of `context_size` per position."""
        return 0

    def state_sizes(self) -> list[int]:
        """The sizes of the decoder states attention adds after the cell's."""
        return []

    @abc.abstractmethod
    def build(self, first_state_size: int, context_size: int) -> None:
        """Create the layer's weights for the decoder's first state size and
        the memory's size per position."""

    def memory(self, top_output: tf.Tensor, mask: tf.Tensor) -> Context:
        """The context entries every step reads: `"memory"` H `(batch, S,
        m)`, its projection `"keys"` and `"mask"` `(batch, S)` bool for an
        attending kind; nothing otherwise."""
        return {}

    def initial_states(self, batch: tf.Tensor, dtype: str) -> list[tf.Tensor]:
        """The values of the states `state_sizes` lists at step 0."""
        return []

    @abc.abstractmethod
    def step(
        self,
        cell: keras.layers.Layer,
        pieces: list[tf.Tensor],
        states: list[tf.Tensor],
        context: Context,
        queries_per_source: int,
        training: bool | None,
    ) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor | None]:
        """Run the decoder cell once, with attention where this kind puts it.

        Args:
            cell: The decoder cell.
            pieces: The parts of the cell's input x_t without attention,
                `(batch, ·)` each.
            states: The decoder states, the cell's then this kind's.
            context: The dict `Seq2Seq.encode` returns.
            queries_per_source: Rows of `states` per example of the memory
                (see `Seq2Seq.decode_step`).
            training: Whether the cell's dropout applies.

        Returns:
            `(output, new_states, alignment)`: the step's output `(batch,
            n)` for the output projection, the new states in the order of
            `states`, and α_t `(batch, S)` float32 (None without attention).
        """

    def over_sequence(
        self, outputs: tf.Tensor, context: Context
    ) -> tuple[tf.Tensor, tf.Tensor | None]:
        """Attention for all T cell outputs at once, when it does not feed
        the cell (`feeds_the_cell` False): `(batch, T, n)` outputs ->
        `(outputs for the output projection, α (batch, T, S) or None)`."""
        return outputs, None

    def options(self) -> dict[str, str | int | bool | None]:
        """The `Seq2Seq` arguments that chose this attention, for its config."""
        return {
            "attention": self.kind,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
        }


def run_cell(
    cell: keras.layers.Layer,
    pieces: list[tf.Tensor],
    states: list[tf.Tensor],
    training: bool | None,
) -> tuple[tf.Tensor, list[tf.Tensor]]:
    """The cell on the concatenated `pieces`: `(output, new_states as a list)`."""
    x = pieces[0] if len(pieces) == 1 else ops.concatenate(pieces, axis=-1)
    output, new_states = cell(x, states, training=training)
    if not isinstance(new_states, (list, tuple)):
        new_states = [new_states]
    return output, list(new_states)


class NoAttention(DecoderAttention):
    """The fixed context only: the decoder reads no memory."""

    kind = None
    layer = None
    has_attention = False
    feeds_the_cell = False

    def build(self, first_state_size: int, context_size: int) -> None:
        """Nothing to build: without attention the decoder has no weights here."""

    def step(
        self,
        cell: keras.layers.Layer,
        pieces: list[tf.Tensor],
        states: list[tf.Tensor],
        context: Context,
        queries_per_source: int,
        training: bool | None,
    ) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor | None]:
        output, new_states = run_cell(cell, pieces, states, training)
        return output, new_states, None


class MemoryAttention(DecoderAttention):
    """What the attending kinds share: the memory and its scoring."""

    has_attention = True
    layer: BahdanauAttention | LuongAttention

    def memory(self, top_output: tf.Tensor, mask: tf.Tensor) -> Context:
        return {"memory": top_output, "keys": self.layer.keys(top_output), "mask": mask}

    def attend(
        self, query: tf.Tensor, context: Context, queries_per_source: int
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """a_t and α_t for `(batch, q)` queries, `queries_per_source` rows per
        memory: `(batch, m)` and `(batch, S)` float32."""
        arguments = (context["keys"], context["memory"], context["mask"])
        if queries_per_source == 1:
            return self.layer(query, *arguments)
        grouped = ops.reshape(query, (-1, queries_per_source, query.shape[-1]))
        attended, alignment = self.layer(grouped, *arguments)
        return (
            ops.reshape(attended, (-1, attended.shape[-1])),
            ops.reshape(alignment, (-1, ops.shape(alignment)[-1])),
        )


class BahdanauDecoderAttention(MemoryAttention):
    """Bahdanau: scored with d_{t-1} (the first state component), a_t joins
    the cell's input.

    Args:
        attention_units: u, the hidden size of the score, or None for
            `output_size`.
        output_size: The decoder cell's output size.
    """

    kind = "bahdanau"
    feeds_the_cell = True

    def __init__(self, attention_units: int | None, output_size: int) -> None:
        self.attention_units = attention_units
        self.layer = BahdanauAttention(attention_units or output_size, name="attention")

    def input_size(self, context_size: int) -> int:
        return context_size

    def build(self, first_state_size: int, context_size: int) -> None:
        self.layer.build_for(first_state_size, context_size)

    def step(
        self,
        cell: keras.layers.Layer,
        pieces: list[tf.Tensor],
        states: list[tf.Tensor],
        context: Context,
        queries_per_source: int,
        training: bool | None,
    ) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor | None]:
        attended, alignment = self.attend(states[0], context, queries_per_source)
        output, new_states = run_cell(cell, [*pieces, attended], states, training)
        return output, new_states, alignment

    def over_sequence(
        self, outputs: tf.Tensor, context: Context
    ) -> tuple[tf.Tensor, tf.Tensor | None]:
        raise ValueError(
            "Bahdanau attention scores with the previous decoder state, so it "
            "runs inside the decoder's steps, not over its outputs."
        )


class LuongDecoderAttention(MemoryAttention):
    """Luong: scored with the cell's output s_t, the logits read ã_t; with
    input feeding ã_{t-1} joins the cell's input and is carried as the last
    decoder state (ã_0 = 0).

    Args:
        output_size: n, the cell's output size (the size of ã).
        input_feeding: Whether ã_{t-1} joins the cell's input; None for
            True.
    """

    kind = "luong"
    layer: LuongAttention

    def __init__(self, output_size: int, input_feeding: bool | None) -> None:
        self.input_feeding = True if input_feeding is None else input_feeding
        self.feeds_the_cell = self.input_feeding
        self.layer = LuongAttention(output_size, name="attention")

    def input_size(self, context_size: int) -> int:
        return self.layer.units if self.input_feeding else 0

    def state_sizes(self) -> list[int]:
        return [self.layer.units] if self.input_feeding else []

    def build(self, first_state_size: int, context_size: int) -> None:
        self.layer.build_for(self.layer.units, context_size)

    def initial_states(self, batch: tf.Tensor, dtype: str) -> list[tf.Tensor]:
        return [ops.zeros((batch, self.layer.units), dtype)] if self.input_feeding else []

    def memory(self, top_output: tf.Tensor, mask: tf.Tensor) -> Context:
        context = super().memory(top_output, mask)
        if self.layer.attentional_projection.quantization_mode is None:
            context["projected_memory"] = self.layer.projected_memory(top_output)
        return context

    def step(
        self,
        cell: keras.layers.Layer,
        pieces: list[tf.Tensor],
        states: list[tf.Tensor],
        context: Context,
        queries_per_source: int,
        training: bool | None,
    ) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor | None]:
        cell_states = list(states)
        if self.input_feeding:
            pieces = [*pieces, cell_states.pop()]
        output, new_states = run_cell(cell, pieces, cell_states, training)
        if "projected_memory" in context:
            # a_t W_a = Σ_j α_tj (h_j W_a): the step reads W_s, not all of W_c.
            projected, alignment = self.attend(
                output, {**context, "memory": context["projected_memory"]}, queries_per_source
            )
            output = self.layer.attentional_from_projected(output, projected)
        else:
            attended, alignment = self.attend(output, context, queries_per_source)
            output = self.layer.attentional(output, attended)
        if self.input_feeding:
            new_states.append(output)
        return output, new_states, alignment

    def over_sequence(
        self, outputs: tf.Tensor, context: Context
    ) -> tuple[tf.Tensor, tf.Tensor | None]:
        attended, alignments = self.layer(
            outputs, context["keys"], context["memory"], context["mask"]
        )
        return self.layer.attentional(outputs, attended), alignments


def decoder_attention(
    attention: str | None,
    attention_units: int | None,
    input_feeding: bool | None,
    output_size: int,
) -> DecoderAttention:
    """The `DecoderAttention` of `Seq2Seq`'s attention arguments, checked.

    Each option belongs to one kind of attention; given with another it would
    silently do nothing, so it is refused.

    Args:
        attention: None, `"bahdanau"` or `"luong"`.
        attention_units: Bahdanau's u (default `output_size`), or None.
        input_feeding: Luong's input feeding (default True), or None.
        output_size: The decoder cell's output size n.
    """
    check_choice("attention", attention, (None, *ATTENTIONS))
    if attention_units is not None:
        if attention != "bahdanau":
            raise ValueError(
                "Argument `attention_units` sets the hidden size of "
                "Bahdanau's score and applies to attention='bahdanau' "
                f"only. Received: attention_units={attention_units!r} "
                f"with attention={attention!r}"
            )
        attention_units = check_positive_int("attention_units", attention_units)
    if input_feeding is not None:
        if attention != "luong":
            raise ValueError(
                "Argument `input_feeding` applies to attention='luong' "
                f"only. Received: input_feeding={input_feeding!r} with "
                f"attention={attention!r}"
            )
        input_feeding = check_bool("input_feeding", input_feeding)
    if attention == "bahdanau":
        return BahdanauDecoderAttention(attention_units, output_size)
    if attention == "luong":
        return LuongDecoderAttention(output_size, input_feeding)
    return NoAttention()
