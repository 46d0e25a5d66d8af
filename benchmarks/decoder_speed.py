"""Decoding throughput: the compiled decoders against a per-step Python loop.

`kerasrnn.seq2seq.greedy_decode` and `beam_search_decode` run the whole
decode in one `tf.function` (a `tf.while_loop`). The baseline is what one
writes without them: a Python loop that calls the same model's
`decode_step` eagerly once per step and picks tokens (and, for beam search,
the surviving hypotheses) in NumPy. Both decode the same batch with the same
weights; sequences/s are measured side by side.
"""

import numpy as np
import tensorflow as tf

import kerasrnn
from benchmarks.timing import interleaved_medians
from kerasrnn import seq2seq


def build_model(units, source_vocabulary, target_vocabulary, source_length, seed=0):
    """An untrained G2P-shaped model: bidirectional LSTM encoder, LSTM decoder.

    `seed` picks the ids it is built on and its scheduled sampling; its
    weights follow Keras's global seed (`keras.utils.set_random_seed`).
    """
    model = seq2seq.Seq2Seq(
        source_vocabulary,
        target_vocabulary,
        kerasrnn.LSTMCell(units),
        embedding_dim=64,
        bidirectional=True,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    source = rng.integers(seq2seq.END_ID + 1, source_vocabulary, size=(2, source_length))
    model((source, np.full((2, 3), seq2seq.START_ID)))
    return model


def python_greedy(model, source_ids, max_length):
    """Greedy decoding, one eager `decode_step` per step."""
    states, context = model.encode(source_ids)
    batch = source_ids.shape[0]
    previous = np.full(batch, seq2seq.START_ID, np.int32)
    finished = np.zeros(batch, bool)
    sequences = np.zeros((batch, max_length), np.int32)
    for t in range(max_length):
        step = model.decode_step(previous, states, context)
        states = step.states
        log_probs = seq2seq.next_token_log_probs(step.logits).numpy()
        tokens = np.where(finished, seq2seq.PAD_ID, log_probs.argmax(-1))
        sequences[:, t] = tokens
        finished |= tokens == seq2seq.END_ID
        previous = tokens.astype(np.int32)
        if finished.all():
            break
    return sequences


def python_beam_search(model, source_ids, beam_width, max_length):
    """Beam search (no length penalty), one eager `decode_step` per step."""
    states, context = model.encode(source_ids)
    batch = source_ids.shape[0]
    rows = np.repeat(np.arange(batch), beam_width)
    states = [tf.gather(s, rows) for s in states]
    context = tf.nest.map_structure(lambda c: tf.gather(c, rows), context)
    previous = np.full(batch * beam_width, seq2seq.START_ID, np.int32)
    scores = np.tile([0.0] + [-np.inf] * (beam_width - 1), batch)
    finished = np.zeros(batch * beam_width, bool)
    sequences = np.zeros((batch * beam_width, max_length), np.int32)
    for t in range(max_length):
        step = model.decode_step(previous, states, context)
        states = step.states
        log_probs = seq2seq.next_token_log_probs(step.logits).numpy()
        vocabulary = log_probs.shape[-1]
        # An ended hypothesis carries over once, by a padding "token".
        log_probs[finished] = -np.inf
        log_probs[finished, seq2seq.PAD_ID] = 0.0
        candidates = (scores[:, None] + log_probs).reshape(batch, beam_width * vocabulary)
        # Stable, as top-k is: of equal candidates the first comes first.
        best = np.argsort(-candidates, axis=-1, kind="stable")[:, :beam_width]
        parents = (best // vocabulary + np.arange(batch)[:, None] * beam_width).reshape(-1)
        tokens = (best % vocabulary).reshape(-1)
        scores = np.take_along_axis(candidates, best, axis=-1).reshape(-1)
        sequences = sequences[parents]
        sequences[:, t] = tokens
        finished = finished[parents] | (tokens == seq2seq.END_ID)
        states = [tf.gather(s, parents) for s in states]
        previous = tokens.astype(np.int32)
        if finished.all():
            break
    return sequences.reshape(batch, beam_width, max_length)


def _xla(decoder, model, decoding):
    """`decoder` compiled whole by XLA (`jit_compile=True`) for `decoding`."""

    def decode(source_ids):
        return decoder(model, source_ids, decoding=decoding)

    return tf.function(decode, jit_compile=True)


def decoding_rows(quick, repeats):
    """Sequences/s for greedy and beam search (B = 5): the compiled decoder
    (as shipped, and with XLA) against the Python loop, at a small batch
    (where per-step overhead dominates) and a large one (where the matmuls
    do)."""
    if quick:
        units, batches, source_length, max_length = 16, (4,), 6, 8
    else:
        units, batches, source_length, max_length = 128, (8, 256), 10, 20
    model = build_model(units, 30, 72, source_length)
    rng = np.random.default_rng(1)
    width = 5
    decoding = seq2seq.DecodingSpec(beam_width=width, max_target_length=max_length)
    greedy_xla = _xla(seq2seq.greedy_decode, model, decoding)
    beam_xla = _xla(seq2seq.beam_search_decode, model, decoding)

    def contenders(source):
        """The six ways of decoding `source`, each a call to time."""
        return {
            "greedy graph": lambda: seq2seq.greedy_decode(
                model, source, decoding=decoding
            ).sequences.numpy(),
            "greedy xla": lambda: greedy_xla(source).sequences.numpy(),
            "greedy python": lambda: python_greedy(model, source, max_length),
            "beam graph": lambda: seq2seq.beam_search_decode(
                model, source, decoding=decoding
            ).sequences.numpy(),
            "beam xla": lambda: beam_xla(source).sequences.numpy(),
            "beam python": lambda: python_beam_search(model, source, width, max_length),
        }

    rows = []
    for batch in batches:
        source = tf.constant(
            rng.integers(seq2seq.END_ID + 1, 30, size=(batch, source_length)), tf.int32
        )
        times = interleaved_medians(contenders(source), repeats)
        for method in ("greedy", "beam"):
            graph, xla, python = (
                times[f"{method} {kind}"] for kind in ("graph", "xla", "python")
            )
            rows.append(
                {
                    "method": method if method == "greedy" else f"beam B={width}",
                    "batch": batch,
                    "max_length": max_length,
                    "graph_seq_per_s": batch / graph,
                    "xla_seq_per_s": batch / xla,
                    "python_loop_seq_per_s": batch / python,
                    "graph_speedup": python / graph,
                    "xla_speedup": python / xla,
                }
            )
    return rows
