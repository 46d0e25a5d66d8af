"""Attention decoders by hand in NumPy, from a model's weights: the reference.

`NumpyAttentionSeq2Seq(model)` extends the plain reference of
`eq:rnn-seq2seq` (`NumpySeq2Seq`) with the two score functions and decoder
steps written from their equations, one example at a time, over the real
source tokens only (padding is simply not there):

    Bahdanau: e_j = vᵀ tanh(W_s d_{t-1} + W_h h_j), α = softmax(e),
              a = Σ_j α_j h_j, d_t = f(d_{t-1}, [E y_{t-1}; c; a]),
              logits = W_o h_t + b_o
    Luong:    d_t = f(d_{t-1}, [E y_{t-1}; c; ã_{t-1}]), e_j = h_tᵀ W h_j,
              α = softmax(e), a = Σ_j α_j h_j, ã_t = tanh(W_c [h_t; a]),
              logits = W_o ã_t + b_o

(c only where the context mode feeds it at every step; ã_{t-1} only with
input feeding.) Greedy decoding, exhaustive enumeration and beam search come
from `NumpySeq2Seq`, which calls `step`.
"""

import numpy as np

from tests.kerasrnn.seq2seq.numpy_seq2seq import PAD, NumpySeq2Seq


def softmax(scores):
    shifted = np.exp(scores - scores.max())
    return shifted / shifted.sum()


def additive_scores(query, memory, query_kernel, memory_kernel, vector):
    """e_j = vᵀ tanh(W_s s + W_h h_j) for each row h_j of `memory`."""
    return np.array(
        [vector @ np.tanh(query @ query_kernel + h @ memory_kernel) for h in memory]
    )


def general_scores(query, memory, kernel):
    """e_j = sᵀ W h_j, W stored as the (m, n) kernel: sᵀ (h_j kernel)."""
    return np.array([query @ (h @ kernel) for h in memory])


class NumpyAttentionSeq2Seq(NumpySeq2Seq):
    def __init__(self, model):
        super().__init__(model)
        self.kind = model.attention_kind
        self.input_feeding = bool(model.input_feeding)
        weights = {
            w.path.split("/")[-2]: np.asarray(w, np.float64)
            for w in model.attention.weights
        }
        if self.kind == "bahdanau":
            self.query_kernel = weights["query_projection"]
            self.memory_kernel = weights["memory_projection"]
            self.vector = weights["score_vector"][:, 0]
        else:
            self.memory_kernel = weights["memory_projection"]
            self.attentional_kernel = weights["attentional_projection"]

    def memory(self, source_row):
        """h_1 … h_L of the top encoder layer over the L real tokens."""
        xs = [self.source_embedding[t] for t in source_row if t != PAD]
        for cells in self.layers:
            outputs, _ = cells[0].run(xs)
            if len(cells) == 2:
                backward, _ = cells[1].run(xs[::-1])
                outputs = [np.concatenate([f, b]) for f, b in zip(outputs, backward[::-1])]
            xs = outputs
        return np.array(xs).reshape(len(xs), -1)

    def encode(self, source_row):
        states, context = super().encode(source_row)
        if self.input_feeding:
            units = self.projection[0].shape[0]
            states = tuple(states) + (np.zeros(units),)
        return states, (context, self.memory(source_row))

    def attend(self, query, memory):
        """(α over the real tokens, a); α = a = 0 without real tokens."""
        if len(memory) == 0:
            return np.zeros(0), np.zeros(self.memory_kernel.shape[0])
        if self.kind == "bahdanau":
            scores = additive_scores(
                query, memory, self.query_kernel, self.memory_kernel, self.vector
            )
        else:
            scores = general_scores(query, memory, self.memory_kernel)
        weights = softmax(scores)
        return weights, weights @ memory

    def step_with_alignment(self, token, states, context_and_memory):
        context, memory = context_and_memory
        pieces = [self.target_embedding[token]]
        if context is not None:
            pieces.append(context)
        alignment = None
        if self.kind == "bahdanau":
            alignment, attended = self.attend(states[0], memory)
            pieces.append(attended)
        if self.input_feeding:
            pieces.append(states[-1])
            states = states[:-1]
        output, states = self.decoder.step(np.concatenate(pieces), states)
        if self.kind == "luong":
            alignment, attended = self.attend(output, memory)
            output = np.tanh(np.concatenate([output, attended]) @ self.attentional_kernel)
            if self.input_feeding:
                states = tuple(states) + (output,)
        kernel, bias = self.projection
        return output @ kernel + bias, states, alignment

    def step(self, token, states, context_and_memory):
        logits, states, _ = self.step_with_alignment(token, states, context_and_memory)
        return logits, states

    def teacher_forced_alignments(self, source_row, decoder_input_row):
        """(T, L) α of each step over the L real source tokens."""
        states, context = self.encode(source_row)
        rows = []
        for token in decoder_input_row:
            _, states, alignment = self.step_with_alignment(token, states, context)
            rows.append(alignment)
        return np.stack(rows)
