"""`eq:rnn-seq2seq` by hand in NumPy, from a model's weights: the reference.

`NumpySeq2Seq(model)` copies the weights of a `Seq2Seq` model and recomputes
everything from the seed equations with plain loops, one example at a time:
the encoder (`eq:rnn-hidden`, the leaky unit, `eq:rnn-lstm-*` or
`eq:rnn-gru-*`; `eq:rnn-bidir` over the real tokens only), the bridge, the
decoder step, teacher-forced logits, free-running logits, greedy decoding,
exhaustive enumeration of every output sequence and a list-based beam search.
Only the weights (and the cells' options) come from kerasrnn.
"""

import functools
import itertools

import numpy as np

from tests.kerasrnn import numpy_reference as ref

PAD, START, END = 0, 1, 2


def trimmed(row):
    """A decoded row's ids up to and including <end>; the rest must be padding."""
    row = list(np.asarray(row))
    length = row.index(END) + 1 if END in row else len(row)
    assert all(t == 0 for t in row[length:])
    return row[:length]


def assert_exhaustive_best(reference, source, sequences, log_probs, vocabulary_size,
                           max_length, top):
    """Each row's first `top` beams are the `top` best of every possible
    output, ranked by the reference's log-probabilities (`all_hypotheses`)."""
    for row in range(len(source)):
        best = sorted(
            reference.all_hypotheses(source[row], vocabulary_size, max_length),
            key=lambda h: -h[1],
        )[:top]
        assert [trimmed(s) for s in np.asarray(sequences[row, :top])] == [h[0] for h in best]
        np.testing.assert_allclose(log_probs[row, :top], [h[1] for h in best], rtol=1e-4)


def log_softmax(logits):
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


class NumpyCell:
    """One recurrent cell's step, from its fused Keras-layout weights.

    The kerasrnn Elman, leaky (fixed or learned α), LSTM and GRU (either
    `reset_after` form) cells; the options come from the cell's config, the
    numbers from its weights.
    """

    def __init__(self, cell):
        kernel = np.asarray(cell.kernel, np.float64)
        recurrent = np.asarray(cell.recurrent_kernel, np.float64)
        bias = None if cell.bias is None else np.asarray(cell.bias, np.float64)
        self.units = recurrent.shape[0]
        gates = kernel.shape[1] // self.units
        self.blocks = ref.gate_blocks(kernel, recurrent, bias, gates)
        config = cell.get_config()
        act = config["activation"]
        if gates == 4:
            self.step_fn = functools.partial(
                ref.lstm_step, act=act, gate=config["recurrent_activation"]
            )
        elif gates == 3:
            self.step_fn = functools.partial(
                ref.gru_step,
                act=act,
                gate=config["recurrent_activation"],
                reset_after=config["reset_after"],
            )
        elif "alpha" in config:
            alpha = (
                np.asarray(cell.alpha_weight, np.float64)
                if config["learn_alpha"]
                else config["alpha"]
            )
            self.step_fn = functools.partial(ref.leaky_step, alpha=alpha, act=act)
        else:
            self.step_fn = functools.partial(ref.elman_step, act=act)
        self.state_count = 2 if gates == 4 else 1

    def zeros(self):
        return tuple(np.zeros(self.units) for _ in range(self.state_count))

    def step(self, x, states):
        return self.step_fn(self.blocks, x, states)

    def run(self, xs):
        states, outputs = self.zeros(), []
        for x in xs:
            output, states = self.step(x, states)
            outputs.append(output)
        return outputs, states


class NumpySeq2Seq:
    def __init__(self, model):
        self.source_embedding = np.asarray(model.source_embedding.embeddings, np.float64)
        self.target_embedding = np.asarray(model.target_embedding.embeddings, np.float64)
        self.bidirectional = model.bidirectional
        self.context_mode = model.context
        self.layers = []
        for layer in model.encoder:
            if self.bidirectional:
                self.layers.append(
                    (NumpyCell(layer.forward_layer.cell), NumpyCell(layer.backward_layer.cell))
                )
            else:
                self.layers.append((NumpyCell(layer.cell),))
        self.bridge = [
            (np.asarray(d.kernel, np.float64), np.asarray(d.bias, np.float64))
            for d in model.bridge
        ]
        self.decoder = NumpyCell(model.decoder.cell)
        self.projection = (
            np.asarray(model.output_projection.kernel, np.float64),
            np.asarray(model.output_projection.bias, np.float64),
        )

    # ------------------------------------------------------------ encoder
    def encode(self, source_row):
        """One example's ids (padded) -> (decoder initial states, context)."""
        xs = [self.source_embedding[t] for t in source_row if t != PAD]
        final_states = None
        for cells in self.layers:
            if len(cells) == 1:
                outputs, final_states = cells[0].run(xs)
                xs, final_output = outputs, outputs[-1]
                forward = final_states
            else:
                forward_out, forward = cells[0].run(xs)
                backward_out, backward = cells[1].run(xs[::-1])
                backward_out = backward_out[::-1]
                xs = [np.concatenate([f, b]) for f, b in zip(forward_out, backward_out)]
                # eq:rnn-bidir: the last forward output and the backward
                # output after reading x_1.
                final_output = np.concatenate([forward_out[-1], backward_out[0]])
                final_states = (forward, backward)
        context = final_output if self.context_mode in ("every_step", "both") else None
        if self.context_mode == "every_step":
            return self.decoder.zeros(), context
        if self.bidirectional:
            forward, backward = final_states
            states = tuple(
                np.concatenate([f, b]) @ kernel + bias
                for (kernel, bias), f, b in zip(self.bridge, forward, backward)
            )
            return states, context
        return tuple(forward), context

    # ------------------------------------------------------------ decoder
    def step(self, token, states, context):
        """(y_{t-1}, d_{t-1}) -> (log p(· | y_<t, c) with pad/start excluded, d_t)."""
        x = self.target_embedding[token]
        if context is not None:
            x = np.concatenate([x, context])
        output, states = self.decoder.step(x, states)
        kernel, bias = self.projection
        return output @ kernel + bias, states

    def teacher_forced_logits(self, source_row, decoder_input_row):
        states, context = self.encode(source_row)
        logits = []
        for token in decoder_input_row:
            step_logits, states = self.step(token, states, context)
            logits.append(step_logits)
        return np.stack(logits)

    def free_running_logits(self, source_row, steps):
        """Logits when each step is fed the previous step's argmax (ε = 0)."""
        states, context = self.encode(source_row)
        token, logits = START, []
        for _ in range(steps):
            step_logits, states = self.step(token, states, context)
            logits.append(step_logits)
            allowed = log_softmax(step_logits)
            allowed[[PAD, START]] = -np.inf
            token = int(np.argmax(allowed))
        return np.stack(logits)

    def log_probs(self, states, token, context):
        step_logits, states = self.step(token, states, context)
        lp = log_softmax(step_logits)
        lp[[PAD, START]] = -np.inf
        return lp, states

    def greedy(self, source_row, max_length):
        states, context = self.encode(source_row)
        token, sequence, total = START, [], 0.0
        for _ in range(max_length):
            lp, states = self.log_probs(states, token, context)
            token = int(np.argmax(lp))
            sequence.append(token)
            total += lp[token]
            if token == END:
                break
        return sequence, total

    def sequence_log_prob(self, source_row, sequence):
        states, context = self.encode(source_row)
        token, total = START, 0.0
        for next_token in sequence:
            lp, states = self.log_probs(states, token, context)
            total += lp[next_token]
            token = next_token
        return total

    def all_hypotheses(self, source_row, vocabulary_size, max_length):
        """Every output a decoder can produce: (sequence, log-prob) pairs.

        A hypothesis is a string of emittable tokens ending at its first
        `<end>`, or cut at `max_length` tokens without one.
        """
        words = [t for t in range(vocabulary_size) if t not in (PAD, START, END)]
        sequences = [
            list(body) + [END]
            for length in range(max_length)
            for body in itertools.product(words, repeat=length)
        ] + [list(body) for body in itertools.product(words, repeat=max_length)]
        return [(s, self.sequence_log_prob(source_row, s)) for s in sequences]

    def beam_search(self, source_row, beam_width, max_length, alpha):
        """Textbook beam search with the GNMT length penalty, on lists."""

        def score(hypothesis):
            sequence, log_prob, _, _ = hypothesis
            return log_prob / ((5.0 + len(sequence)) / 6.0) ** alpha

        states, context = self.encode(source_row)
        beam = [([], 0.0, states, False)]
        for _ in range(max_length):
            if all(done for *_, done in beam):
                break
            candidates = []
            for sequence, log_prob, states, done in beam:
                if done:
                    candidates.append((sequence, log_prob, states, True))
                    continue
                token = sequence[-1] if sequence else START
                lp, new_states = self.log_probs(states, token, context)
                for next_token in range(len(lp)):
                    if np.isfinite(lp[next_token]):
                        candidates.append(
                            (
                                sequence + [next_token],
                                log_prob + lp[next_token],
                                new_states,
                                next_token == END,
                            )
                        )
            candidates.sort(key=score, reverse=True)
            beam = candidates[:beam_width]
        return [(h[0], h[1], score(h)) for h in beam]
