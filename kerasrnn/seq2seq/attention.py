"""Attention over the encoder's outputs: Bahdanau (additive) and Luong (general).

The chapter's closing remark names the bottleneck of `eq:rnn-seq2seq`: one
fixed-size context c for the whole source. Attention lets every decoder step
look back at all encoder states. Symbols, the same in the code:

    H = [h_1 … h_S]   (batch, S, m)  the encoder's top-layer outputs, the memory
                                     ([h→_j; h←_j] for a bidirectional encoder)
    M                 (batch, S)     True at real source positions, False on padding
    s                 (batch, q)     the query (which state scores, see the layers)
    e_j = score(s, h_j)              one score per source position
    α = softmax_M(e)                 α_j = M_j exp(e_j) / Σ_k M_k exp(e_k)
    a = Σ_j α_j h_j   (batch, m)     the context the decoder reads at this step

Padding gets weight exactly 0 by masking, not by adding a large negative
constant to float16 scores (which leaks weight); a source that is all
padding gets α = 0 and a = 0, never NaN.

The memory projections W_h h_j (Bahdanau) and W h_j (Luong) do not depend on
the decoder step, so `keys(memory)` computes them once per source sequence
and every step only projects the query.

Keras's `Attention` and `AdditiveAttention` compute the same score forms
without the projections, but mask by subtracting a constant: an all-padding
row gets uniform weight over padding instead of 0. So the projections here are
Keras `Dense` layers and only the masked softmax and the weighted sum are
written out.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from kerasrnn.allowed import ATTENTIONS as ATTENTIONS
from kerasrnn.types import Config, TensorLike

#: The score padding enters the softmax with (float32's lowest is −3.4e38).
LOWEST_FLOAT32 = -3.0e38


def masked_softmax(scores: TensorLike, mask: TensorLike) -> TensorLike:
    """α = softmax over the positions where `mask` is True; 0 elsewhere.

    Args:
        scores: `(..., S)` scores e_j, any float dtype.
        mask: bool, broadcastable to `scores`, True at real positions.

    Returns:
        Float32 weights shaped like `scores`: each row sums to 1 over its real
        positions and is exactly 0 on the others (all 0 if it has none).
    """
    scores = ops.cast(scores, "float32")
    mask = ops.cast(mask, "bool")
    if scores.shape[-1] == 1:
        # One position (a one-token source): its weight is 1. Keras warns
        # of a softmax over an axis of size 1 ("did you mean a sigmoid?").
        return ops.where(mask, ops.ones_like(scores), 0.0)
    # Padding enters the softmax as the lowest float32 score: in a row with a
    # real position, whose score the softmax subtracts first, its exp()
    # underflows to exactly 0. A row of padding only would get uniform
    # weight, which the outer `where` turns into 0. Three operators (one
    # softmax) where a softmax written out takes nine: every decoder step of
    # an unrolled LiteRT graph runs them.
    weights = ops.softmax(ops.where(mask, scores, LOWEST_FLOAT32), axis=-1)
    return ops.where(mask, weights, 0.0)


def weighted_sum(weights: TensorLike, memory: TensorLike) -> TensorLike:
    """a = Σ_j α_j h_j: `(batch, S)` weights, `(batch, S, m)` memory -> `(batch, m)`."""
    weights = ops.cast(weights, memory.dtype)
    return ops.einsum("bs,bsm->bm", weights, memory)


def attend_for_each_query(
    scores: TensorLike, mask: TensorLike, memory: TensorLike
) -> tuple[TensorLike, TensorLike]:
    """α and a for T queries per example.

    Args:
        scores: `(batch, T, S)` e_tj.
        mask: `(batch, S)` bool M, the same for every query.
        memory: `(batch, S, m)` H.

    Returns:
        `(context (batch, T, m), weights (batch, T, S) float32)`.
    """
    weights = masked_softmax(scores, ops.expand_dims(mask, 1))
    context = ops.einsum("bts,bsm->btm", ops.cast(weights, memory.dtype), memory)
    return context, weights


@keras.saving.register_keras_serializable(package="kerasrnn")
class BahdanauAttention(keras.layers.Layer):
    """Additive attention (Bahdanau et al., 2015).

        e_j = vᵀ tanh(W_s s + W_h h_j)          W_s: (q, u), W_h: (m, u), v: (u,)
        α = softmax_M(e),   a = Σ_j α_j h_j

    In `Seq2Seq`, s is the previous decoder state d_{t-1} (its first
    component, h_{t-1}), and [E y_{t-1}; a_t] is the cell's input at step t.

    Args:
        units: u, the size of the hidden layer of the score.
        **kwargs: Passed to `keras.layers.Layer`.

    Weights: `query_projection` W_s and `memory_projection` W_h (`Dense`
    without bias), `score_vector` v (`Dense(1)` without bias):
    u·q + u·m + u parameters.
    """

    def __init__(self, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.query_projection = keras.layers.Dense(
            units, use_bias=False, name="query_projection"
        )
        self.memory_projection = keras.layers.Dense(
            units, use_bias=False, name="memory_projection"
        )
        self.score_vector = keras.layers.Dense(
            1, use_bias=False, name="score_vector"
        )

    def build_for(self, query_size: int, memory_size: int) -> None:
        """Create the weights for queries of size q and memories of size m."""
        self.query_projection.build((None, query_size))
        self.memory_projection.build((None, None, memory_size))
        self.score_vector.build((None, None, self.units))
        self.built = True

    def keys(self, memory: TensorLike) -> TensorLike:
        """W_h h_j for every j: `(batch, S, m)` -> `(batch, S, u)`."""
        return self.memory_projection(memory)

    def call(
        self, query: TensorLike, keys: TensorLike, memory: TensorLike, mask: TensorLike
    ) -> tuple[TensorLike, TensorLike]:
        """Attention for one query per example, or for T of them.

        Args:
            query: `(batch, q)` s, or `(batch, T, q)` (beam search's B
                hypotheses of an example score against its one memory).
            keys: `(batch, S, u)` from `keys(memory)`.
            memory: `(batch, S, m)` H.
            mask: `(batch, S)` bool M.

        Returns:
            `(context, weights)`: a `(batch, m)` and α `(batch, S)` float32
            for one query; `(batch, T, m)` and `(batch, T, S)` for T.
        """
        if len(query.shape) == 2:
            hidden = ops.tanh(self.query_projection(query)[:, None, :] + keys)
            scores = ops.squeeze(self.score_vector(hidden), axis=-1)
            weights = masked_softmax(scores, mask)
            return weighted_sum(weights, memory), weights
        hidden = ops.tanh(
            self.query_projection(query)[:, :, None, :] + keys[:, None, :, :]
        )
        scores = ops.squeeze(self.score_vector(hidden), axis=-1)
        return attend_for_each_query(scores, mask, memory)

    def closed_form_params(self) -> tuple[str, list[tuple[str, int]], str]:
        """`(description, [(label, count)], formula)` for `explain_params`."""
        q = int(self.query_projection.kernel.shape[0])
        m = int(self.memory_projection.kernel.shape[0])
        u = self.units
        return (
            f"Bahdanau attention, u={u}, q={q}, m={m}",
            [
                (f"W_s q×u = {q}×{u}", q * u),
                (f"W_h m×u = {m}×{u}", m * u),
                (f"v u = {u}", u),
            ],
            "u×(q + m + 1)",
        )

    def get_config(self) -> Config:
        """The Layer's config and `units`."""
        return {**super().get_config(), "units": self.units}


@keras.saving.register_keras_serializable(package="kerasrnn")
class LuongAttention(keras.layers.Layer):
    """Multiplicative ("general") attention (Luong et al., 2015).

        e_j = sᵀ W h_j                          W: (n, m), stored as the (m, n)
                                                 kernel of `memory_projection`
        α = softmax_M(e),   a = Σ_j α_j h_j
        ã = tanh(W_c [s; a])                    W_c: (n + m, n), no bias

    In `Seq2Seq`, s is the decoder's current output s_t, the logits are
    predicted from the attentional vector ã_t, and with input feeding ã_t
    joins the cell's input at step t + 1 (ã_0 = 0).

    Args:
        units: n, the size of s and of ã (the decoder's output size).
        **kwargs: Passed to `keras.layers.Layer`.

    Weights: `memory_projection` W and `attentional_projection` W_c (`Dense`
    without bias): n·m + (n + m)·n parameters.
    """

    def __init__(self, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.memory_projection = keras.layers.Dense(
            units, use_bias=False, name="memory_projection"
        )
        self.attentional_projection = keras.layers.Dense(
            units, activation="tanh", use_bias=False, name="attentional_projection"
        )

    def build_for(self, query_size: int, memory_size: int) -> None:
        """Create the weights; `query_size` must equal `units`."""
        if query_size != self.units:
            raise ValueError(
                "Luong attention scores sᵀ W h_j with s of size `units`. "
                f"Received: query_size={query_size}, units={self.units}"
            )
        self.memory_projection.build((None, None, memory_size))
        self.attentional_projection.build((None, query_size + memory_size))
        self.built = True

    def keys(self, memory: TensorLike) -> TensorLike:
        """W h_j for every j: `(batch, S, m)` -> `(batch, S, n)`."""
        return self.memory_projection(memory)

    def call(
        self, query: TensorLike, keys: TensorLike, memory: TensorLike, mask: TensorLike
    ) -> tuple[TensorLike, TensorLike]:
        """Attention for one step, or for T steps at once.

        The score reads only s_t, so without input feeding a teacher-forced
        decoder can run its cell over all T steps first and attend for all
        of them in one batched product.

        Args:
            query: `(batch, n)` s_t, or `(batch, T, n)`: s_1 … s_T, or
                beam search's B hypotheses of an example.
            keys: `(batch, S, n)` from `keys(memory)`.
            memory: `(batch, S, m)` H.
            mask: `(batch, S)` bool M.

        Returns:
            `(context, weights)`: a `(batch, m)` and α `(batch, S)` float32
            for one step; `(batch, T, m)` and `(batch, T, S)` for T steps.
        """
        if len(query.shape) == 2:
            scores = ops.einsum("bn,bsn->bs", query, keys)
            weights = masked_softmax(scores, mask)
            return weighted_sum(weights, memory), weights
        # A matmul with the keys' last two axes swapped, not the einsum of the
        # same product: TensorFlow's einsum leaves a reshape after its batch
        # matmul, one more operator per decoder step in an unrolled LiteRT
        # graph; the swap of the keys, the same at every step, is one.
        return attend_for_each_query(
            ops.matmul(query, ops.swapaxes(keys, 1, 2)), mask, memory
        )

    def attentional(self, query: TensorLike, context: TensorLike) -> TensorLike:
        """ã = tanh(W_c [s; a]): `(..., n)`, `(..., m)` -> `(..., n)`."""
        return self.attentional_projection(ops.concatenate([query, context], axis=-1))

    def projected_memory(self, memory: TensorLike) -> TensorLike:
        """h_j W_a for every j, W_a the rows of W_c that multiply a:
        `(batch, S, m)` -> `(batch, S, n)`."""
        kernel = self.attentional_projection.kernel[self.units :]
        return ops.matmul(memory, ops.cast(kernel, memory.dtype))

    def attentional_from_projected(self, query: TensorLike, projected: TensorLike) -> TensorLike:
        """ã = tanh(s W_s + a W_a) from `projected` = a W_a = Σ_j α_j (h_j W_a)
        (`projected_memory` weighed by α): `(..., n)`, `(..., n)` -> `(..., n)`.
        The same ã as `attentional`, while a step reads the n × n W_s
        instead of the (n + m) × n W_c."""
        kernel = self.attentional_projection.kernel[: self.units]
        return ops.tanh(ops.matmul(query, ops.cast(kernel, query.dtype)) + projected)

    def closed_form_params(self) -> tuple[str, list[tuple[str, int]], str]:
        """`(description, [(label, count)], formula)` for `explain_params`."""
        m = int(self.memory_projection.kernel.shape[0])
        n = self.units
        return (
            f"Luong attention, n={n}, m={m}",
            [
                (f"W n×m = {n}×{m}", n * m),
                (f"W_c (n + m)×n = {n + m}×{n}", (n + m) * n),
            ],
            "n×m + (n + m)×n",
        )

    def get_config(self) -> Config:
        """The Layer's config and `units`."""
        return {**super().get_config(), "units": self.units}
