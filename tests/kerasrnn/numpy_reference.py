"""The seed equations stepped by hand in NumPy: the tests' independent reference.

Each step function takes one example's input x (d,) and its states, and the
weights in the chapter's column orientation, sliced out of the public fused
layout of `kerasrnn.cells.base` (kernel (d, g·n), recurrent_kernel (n, g·n)):
gate k has W_k = kernel[:, k·n:(k+1)·n]ᵀ (n, d) and U_k likewise from the
recurrent kernel. Nothing here calls kerasrnn.
"""

import numpy as np


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def hard_sigmoid(a):
    # Keras 3: relu6(a + 3) / 6.
    return np.clip((a + 3.0) / 6.0, 0.0, 1.0)


def softsign(a):
    return a / (1.0 + np.abs(a))


ACTIVATIONS = {
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "hard_sigmoid": hard_sigmoid,
    "softsign": softsign,
}


def gate_blocks(kernel, recurrent_kernel, bias, gates):
    """[(W_k (n, d), U_k (n, n), b_k (n,) or zeros)] for each gate block k."""
    n = recurrent_kernel.shape[0]
    blocks = []
    for k in range(gates):
        columns = slice(k * n, (k + 1) * n)
        b = np.zeros(n) if bias is None else bias[..., columns]
        blocks.append((kernel[:, columns].T, recurrent_kernel[:, columns].T, b))
    return blocks


def elman_step(w, x, states, act="tanh"):
    """eq:rnn-hidden: h_t = tanh(W_h h_{t-1} + W_x x_t + b)."""
    ((W_x, W_h, b),) = w
    (h,) = states
    h = ACTIVATIONS[act](W_h @ h + W_x @ x + b)
    return h, (h,)


def leaky_step(w, x, states, alpha, act="tanh"):
    """Lecture notes slide 55: h = (1 − α) h + α tanh(W h + U x + b)."""
    ((U, W, b),) = w
    (h,) = states
    h_tilde = ACTIVATIONS[act](W @ h + U @ x + b)
    h = (1.0 - alpha) * h + alpha * h_tilde
    return h, (h,)


def lstm_step(w, x, states, act="tanh", gate="sigmoid"):
    """eq:rnn-lstm-f … eq:rnn-lstm-h, blocks in the order i, f, c~, o."""
    (W_i, U_i, b_i), (W_f, U_f, b_f), (W_c, U_c, b_c), (W_o, U_o, b_o) = w
    h, c = states
    sig, tanh = ACTIVATIONS[gate], ACTIVATIONS[act]
    f = sig(W_f @ x + U_f @ h + b_f)
    i = sig(W_i @ x + U_i @ h + b_i)
    o = sig(W_o @ x + U_o @ h + b_o)
    c_tilde = tanh(W_c @ x + U_c @ h + b_c)
    c = f * c + i * c_tilde
    h = o * tanh(c)
    return h, (h, c)


def gru_step(w, x, states, act="tanh", gate="sigmoid", reset_after=False):
    """eq:rnn-gru-z … eq:rnn-gru-h, blocks z, r, h~; reset before U_h.

    With reset_after, each b_k is a (2, n) pair (input bias, recurrent bias)
    and the candidate is tanh(W_h x + b^x + r ⊙ (U_h h + b^h)).
    """
    (W_z, U_z, b_z), (W_r, U_r, b_r), (W_h, U_h, b_h) = w
    (h,) = states
    sig, tanh = ACTIVATIONS[gate], ACTIVATIONS[act]
    if reset_after:
        bz, br, bh = (np.broadcast_to(b, (2,) + b.shape[-1:]) for b in (b_z, b_r, b_h))
        z = sig(W_z @ x + bz[0] + U_z @ h + bz[1])
        r = sig(W_r @ x + br[0] + U_r @ h + br[1])
        h_tilde = tanh(W_h @ x + bh[0] + r * (U_h @ h + bh[1]))
    else:
        z = sig(W_z @ x + U_z @ h + b_z)
        r = sig(W_r @ x + U_r @ h + b_r)
        h_tilde = tanh(W_h @ x + U_h @ (r * h) + b_h)
    h = (1.0 - z) * h + z * h_tilde
    return h, (h,)


def run(step, xs, initial_states, mask=None, go_backwards=False):
    """Step a batch through time with keras.layers.RNN's semantics.

    Args:
        step: `step(x (d,), states) -> (output (n,), states)` for one example.
        xs: (B, T, d) inputs.
        initial_states: list of (B, n_s) arrays.
        mask: (B, T) booleans or None. A masked step keeps the states and
            repeats the previous output (zeros before the first).
        go_backwards: Process time in reverse; outputs come back in
            processing order, as Keras returns them.

    Returns:
        (outputs (B, T, n), final states: list of (B, n_s)).
    """
    batch, steps, _ = xs.shape
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, finals = [], []
    for b in range(batch):
        states = tuple(np.asarray(s[b], dtype=np.float64) for s in initial_states)
        previous = None
        sequence = []
        for t in order:
            if mask is not None and not mask[b, t]:
                output = previous if previous is not None else np.zeros_like(
                    sequence_zero(step, xs[b, t], states)
                )
            else:
                output, states = step(xs[b, t].astype(np.float64), states)
            previous = output
            sequence.append(output)
        outputs.append(np.stack(sequence))
        finals.append(states)
    final_states = [np.stack([f[k] for f in finals]) for k in range(len(finals[0]))]
    return np.stack(outputs), final_states


def sequence_zero(step, x, states):
    """The shape of a step's output, for a masked first step."""
    output, _ = step(x.astype(np.float64), states)
    return output
