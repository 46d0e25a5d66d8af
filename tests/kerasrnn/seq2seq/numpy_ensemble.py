"""A `Seq2SeqEnsemble` by hand: the members' NumPy references, mixed.

p(y_t | y_<t, x) = (1/N) Σ_k p_k(y_t | y_<t, x), each member stepping its own
states over its own encoding; greedy decoding, sequence log-probabilities,
exhaustive enumeration and beam search come from `NumpySeq2Seq`, which
reaches the model only through `encode` and `log_probs`.
"""

import numpy as np

from tests.kerasrnn.seq2seq.numpy_seq2seq import NumpySeq2Seq


class NumpyEnsemble(NumpySeq2Seq):
    def __init__(self, members):
        """`members`: one NumPy reference per member, in the ensemble's order."""
        self.members = members

    def encode(self, source_row):
        encoded = [member.encode(source_row) for member in self.members]
        return (
            tuple(states for states, _ in encoded),
            tuple(context for _, context in encoded),
        )

    def log_probs(self, states, token, context):
        log_probs, new_states = [], []
        for member, member_states, member_context in zip(self.members, states, context):
            lp, member_states = member.log_probs(member_states, token, member_context)
            log_probs.append(lp)
            new_states.append(member_states)
        # Pad and start are −inf in every member: exp gives 0, log gives −inf.
        with np.errstate(divide="ignore"):
            mixed = np.log(np.mean(np.exp(log_probs), axis=0))
        return mixed, tuple(new_states)

    def teacher_forced_alignments(self, source_row, decoder_input_row):
        """The members' mean α, `(T, L)` over the L real source tokens."""
        return np.mean(
            [
                member.teacher_forced_alignments(source_row, decoder_input_row)
                for member in self.members
            ],
            axis=0,
        )
