"""The options g2p and translate share: the encoder-decoder and its decoding.

`kerasrnn_pipelines.encoder_decoder` builds and trains the model these options
describe. An option both seq2seq tasks take is one field here.
"""

import dataclasses

from kerasrnn_pipelines.options import (
    ConfigError,
    LiteRTConfig,
    allowed,
    fraction,
    non_negative_int,
    number_type,
    one_of,
    option,
    positive_int,
    switch,
)

#: `--attention` values: "none" or one of `kerasrnn.allowed.ATTENTIONS`.
ATTENTIONS = ("none", *allowed.ATTENTIONS)

#: Decays of the teacher-forcing probability ε (`--scheduled-sampling`).
SCHEDULES = ("none", "linear", "exponential", "inverse_sigmoid")

#: `--length-penalty`: the α the decoders take, refused here rather than
#: after training.
length_penalty_value = number_type(
    f"a number in [0, {allowed.MAX_LENGTH_PENALTY:g}]", float,
    lambda v: 0.0 <= v <= allowed.MAX_LENGTH_PENALTY,
)


@dataclasses.dataclass(frozen=True)
class Seq2SeqConfig(LiteRTConfig):
    """An encoder-decoder (`kerasrnn.seq2seq.Seq2Seq`) decoded by beam search.

    `--dropout` (after each layer of a stack) does not exist here: the
    encoder-decoder's only dropout is the cells' own, `--cell-dropout`.
    """

    bidirectional: bool = True
    embedding: int = option(
        64, positive_int, "size of the source and target token embeddings"
    )
    context: str = option(
        "initial_state",
        one_of(*allowed.CONTEXTS),
        "how the decoder receives the encoder's context",
    )
    attention: str = option(
        "luong",
        one_of(*ATTENTIONS),
        "attention over the encoder outputs: bahdanau (additive, scored "
        "with the previous decoder state), luong (general, scored with the "
        "current output; its attentional vector fed to the next step only "
        "with --input-feeding) or none (the fixed context only)",
    )
    input_feeding: bool = option(
        False,
        switch,
        "with --attention luong (refused with the others), feed the "
        "previous attentional vector into the decoder's next input (off by "
        "default: teacher forcing then runs the decoder over all steps at "
        "once, a third faster per step, and g2p measured no loss)",
    )
    ensemble: int = option(
        1,
        non_negative_int,
        "train N encoder-decoders side by side (each its own initial "
        "weights, the same batches) and decode with the mean of their "
        "next-token probabilities; N times the training time (0 with "
        "--right-to-left 1: one encoder-decoder that reads the target right "
        "to left)",
    )
    right_to_left: int = option(
        0,
        non_negative_int,
        "also train N encoder-decoders that read the target right to left; "
        "they rescore the beam's hypotheses: score plus 0.5 times their "
        "log-probability (so N > 0 needs --beam-width 2 or more, except with "
        "--ensemble 0, where the one model reads right to left and decodes)",
    )
    label_smoothing: float = option(
        0.0,
        fraction,
        "label smoothing epsilon in [0, 1): each target token is scored "
        "against (1 - epsilon) on it plus epsilon spread over the target "
        "vocabulary",
    )
    scheduled_sampling: str = option(
        "none",
        one_of(*SCHEDULES),
        "decay of the teacher-forcing probability epsilon (none: always 1)",
    )
    sampling_midpoint: int = option(
        2000, positive_int, "training step at which epsilon reaches 1/2"
    )
    beam_width: int = option(
        4,
        positive_int,
        "beam search width B (1 is greedy decoding) of the test decoding "
        "and the SavedModel",
        training=False,
        outputs=True,
    )
    length_penalty: float = option(
        0.0,
        length_penalty_value,
        "GNMT length penalty alpha of the beam search",
        training=False,
        outputs=True,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # Both would train without a word and change nothing: Bahdanau and
        # no attention have no attentional vector to feed, and one
        # hypothesis leaves a rescorer nothing to re-rank.
        if self.input_feeding and self.attention != "luong":
            raise ConfigError(
                "argument --input-feeding: only --attention luong has an "
                "attentional vector to feed to the next step; received "
                f"--input-feeding with --attention {self.attention} (pass "
                "--attention luong or drop --input-feeding)"
            )
        if self.ensemble == 0 and self.right_to_left != 1:
            raise ConfigError(
                "argument --ensemble: 0 left-to-right encoder-decoders makes a "
                "run of one that reads the target right to left, with "
                "--right-to-left 1; received --ensemble 0 with --right-to-left "
                f"{self.right_to_left} (pass --ensemble 1 or more, or "
                "--right-to-left 1)"
            )
        if self.ensemble and self.right_to_left and self.beam_width == 1:
            raise ConfigError(
                "argument --right-to-left: its members re-rank the beam's "
                "hypotheses, and --beam-width 1 keeps only one; received "
                f"--right-to-left {self.right_to_left} with --beam-width 1 "
                "(pass --beam-width 2 or more, or --right-to-left 0)"
            )
