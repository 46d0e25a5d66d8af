"""The encoder-decoder the seq2seq options describe, trained and decoded.

`kerasrnn_pipelines.tasks.options.seq2seq_config` defines the options g2p and translate
share; here they become a `kerasrnn.seq2seq.Seq2Seq`, its scheduled
sampling, its training (the learning rate held, then halved at each of the
last four epochs), its beam search, and its LiteRT export (`model.tflite`
and `vocabulary.json`, evaluated through the LiteRT interpreter).
"""

from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import keras
import numpy as np

from kerasrnn import seq2seq
from kerasrnn.export.seq2seq_buckets import bucket_calls
from kerasrnn.types import TensorLike
from kerasrnn_pipelines.console import held_back_native_output, progress
from kerasrnn_pipelines.litert_outputs import export_among_outputs, exporter_quantize
from kerasrnn_pipelines.recurrent import make_cell
from kerasrnn_pipelines.tasks.options.seq2seq_config import Seq2SeqConfig

if TYPE_CHECKING:
    import tensorflow as tf

    from kerasrnn_pipelines.training import RunContext


def sampling_schedule(kind: str, midpoint: int) -> seq2seq.SamplingSchedule | None:
    """The `--scheduled-sampling` schedule, ε = 1/2 at `--sampling-midpoint`.

    Args:
        kind: `--scheduled-sampling`: `"none"`, `"linear"`, `"exponential"`
            or `"inverse_sigmoid"`.
        midpoint: `--sampling-midpoint`, the training step where ε = 1/2.

    Returns:
        A `kerasrnn.seq2seq.SamplingSchedule`, or None for teacher forcing.
    """
    if kind == "none":
        return None
    if kind == "linear":
        return seq2seq.LinearSamplingSchedule(2 * midpoint)
    if kind == "exponential":
        return seq2seq.ExponentialSamplingSchedule(0.5 ** (1 / midpoint))
    # k ln k = midpoint, solved by bisection on [1, midpoint + 2].
    low, high = 1.0, midpoint + 2.0
    for _ in range(100):
        k = (low + high) / 2
        low, high = (k, high) if k * math.log(k) < midpoint else (low, k)
    return seq2seq.InverseSigmoidSamplingSchedule((low + high) / 2)


#: λ of the right-to-left rescoring: the best of 0, 0.25 … 1.5 on g2p's
#: validation words.
RESCORING_WEIGHT = 0.5


def build_model(
    config: Seq2SeqConfig,
    source_vocabulary: seq2seq.Vocabulary,
    target_vocabulary: seq2seq.Vocabulary,
) -> seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble:
    """`Seq2Seq` over two vocabularies: `--cell` with `--units` and
    `--cell-dropout`, `--layers` encoder layers (`--bidirectional`),
    `--embedding`, `--context`, `--attention` (`--input-feeding`) and
    `--scheduled-sampling`; with `--ensemble N` > 1 or `--right-to-left M`
    > 0 a `Seq2SeqEnsemble` of N such models and M that read the target
    right to left and rescore (member k's sampling seed `--seed` + k)."""
    orders = ["left_to_right"] * config.ensemble + ["right_to_left"] * config.right_to_left
    members = [
        seq2seq.Seq2Seq(
            source_vocabulary.size,
            target_vocabulary.size,
            make_cell(config.cell, config.units, config.cell_dropout, config.seed),
            embedding_dim=config.embedding,
            encoder_layers=config.layers,
            bidirectional=config.bidirectional,
            context=config.context,
            attention=None if config.attention == "none" else config.attention,
            input_feeding=config.input_feeding if config.attention == "luong" else None,
            sampling_schedule=sampling_schedule(
                config.scheduled_sampling, config.sampling_midpoint
            ),
            seed=config.seed + index,
            target_order=order,
            name=f"seq2seq_{index}" if len(orders) > 1 else None,
        )
        for index, order in enumerate(orders)
    ]
    if len(members) == 1:
        return members[0]
    # Only right-to-left members rescore: without them λ has nothing to weigh.
    return seq2seq.Seq2SeqEnsemble(
        members,
        rescoring_weight=RESCORING_WEIGHT if config.right_to_left else None,
        name="seq2seq_ensemble",
    )


class Distillation(NamedTuple):
    """A teacher and how a student learns from it (`kerasrnn.seq2seq.Distiller`).

    Attributes:
        teacher: The trained `Seq2Seq` or `Seq2SeqEnsemble`.
        weight: w in [0, 1], the teacher's share of the loss.
        temperature: τ > 0 of the KL term.
    """

    teacher: seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble
    weight: float
    temperature: float


def step_decay(learning_rate: float, epoch: int, epochs: int) -> float:
    """The rate of epoch `epoch` (0-based) of a run of `epochs`:
    `learning_rate`, then halved at each of the last four epochs (never
    before the third)."""
    return learning_rate * 0.5 ** max(0, epoch - max(1, epochs - 5))


def train(
    config: Seq2SeqConfig,
    context: RunContext,
    source_vocabulary: seq2seq.Vocabulary,
    target_vocabulary: seq2seq.Vocabulary,
    batches: tf.data.Dataset,
    validation: tf.data.Dataset,
    distillation: Distillation | None = None,
) -> seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble:
    """Build, compile and fit the encoder-decoder; return it trained.

    Args:
        config: A checked `Seq2SeqConfig`.
        context: The run's `kerasrnn_pipelines.training.RunContext`.
        source_vocabulary, target_vocabulary: `kerasrnn.seq2seq.Vocabulary`.
        batches, validation: Datasets of `teacher_forcing_pair` batches.
        distillation: A teacher to train the model as its student
            (`kerasrnn.seq2seq.Distiller`, whose loss replaces the
            cross-entropy; the model must then be one `Seq2Seq`). What fits
            and what the backups hold is the distiller, student and frozen
            teacher; what is returned is the student.
    """
    with context.scope():
        model = build_model(config, source_vocabulary, target_vocabulary)
        trained: keras.Model = model
        if distillation is None:
            context.compile(
                model, seq2seq.SequenceCrossEntropy(config.label_smoothing)
            )
        else:
            # A single model: `build_model` builds an ensemble only when
            # asked, which a run with a teacher refuses at parse time.
            assert isinstance(model, seq2seq.Seq2Seq)
            trained = seq2seq.Distiller(
                model,
                distillation.teacher,
                distillation.weight,
                distillation.temperature,
            )
            trained.compile(optimizer=context.optimizer())
    # With attention a fixed rate, or one halved only after the validation
    # loss rises, let g2p's last epoch undo the previous ones (its WER ended
    # well above this decay's, same model and epochs). A schedule of the
    # epoch index alone also resumes and distributes reproducibly.
    context.fit(
        trained,
        batches,
        validation,
        callbacks=[keras.callbacks.LearningRateScheduler(
            lambda epoch, rate: step_decay(
                config.learning_rate, epoch, config.epochs
            )
        )],
    )
    return model


def beam_search(
    model: seq2seq.DecodableModel,
    sources: TensorLike,
    target_vocabulary: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
) -> list[list[str]]:
    """The best beam's target tokens for each row of `sources`.

    Args:
        sources: int32 `(batch, time)` source ids, 0-padded, read whole.
        decoding: The run's `DecodingSpec`, the one its exports take: its
            `beam_width` (`--beam-width`), `length_penalty`
            (`--length-penalty`) and `max_target_length`.
    """
    result = seq2seq.beam_search_decode(model, sources, decoding=decoding)
    return [target_vocabulary.decode(row) for row in result.sequences[:, 0].numpy()]


#: Sources per LiteRT call when the run evaluates the file.
LITERT_BATCH = 256


def export_model(
    model: seq2seq.Seq2Seq | seq2seq.Seq2SeqEnsemble,
    context: RunContext,
    source_vocabulary: seq2seq.Vocabulary,
    target_vocabulary: seq2seq.Vocabulary,
    *,
    decoding: seq2seq.DecodingSpec,
    text: seq2seq.TextSpec,
    buckets: Sequence[tuple[int, int]] = (),
    litert_quantize: str,
) -> pathlib.Path | None:
    """Write the run's servable files among its outputs (the chief only):
    `saved_model/` (`kerasrnn.seq2seq.export_serving`), and `model.tflite`
    with `vocabulary.json` (`kerasrnn.seq2seq.export_litert`, without the
    attention's `alignments`, which the SavedModel gives), saying before
    each what it writes.

    Both take the same two specs, so that they decode with the run's beam
    search and read the same sources: at most `max_source_length` tokens
    (the SavedModel reads the first that many of a longer source; the
    LiteRT file's client refuses it) and at most `max_target_length` answer
    tokens; both record the specs (`kerasrnn.seq2seq.specs`).

    Args:
        decoding: The run's `DecodingSpec`: its beam search (`--beam-width`,
            `--length-penalty`) and the bounds both files share.
        text: How text becomes tokens and back, for both files.
        buckets: The LiteRT file's further signatures, `(source length,
            target length)` each.
        litert_quantize: `--litert-quantize`, the precision of the LiteRT
            file's weights (the SavedModel keeps float32).

    Returns:
        The LiteRT file's path, or None on a worker that writes no outputs.
    """
    if context.is_chief:
        progress("exporting SavedModel (saved_model/)...")
        seq2seq.export_serving(
            model,
            context.write_dir / "saved_model",
            source_vocabulary,
            target_vocabulary,
            decoding=decoding,
            text=text,
        )
    progress("exporting model.tflite (LiteRT)...", context.is_chief)
    return export_among_outputs(
        context,
        lambda path: seq2seq.export_litert(
            model,
            path,
            source_vocabulary,
            target_vocabulary,
            decoding=decoding,
            text=text,
            buckets=buckets,
            quantize=exporter_quantize(litert_quantize),
            # The runs' client reads target_ids only; without α the beam
            # search carries none from step to step, and runs faster.
            alignments=False,
        ),
    )


def litert_beam_search(
    path: pathlib.Path, sources: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """The best answers of a `model.tflite` through the LiteRT interpreter.

    Each source goes to the first signature of `vocabulary.json`'s
    `buckets` that holds it (`kerasrnn.export.seq2seq_buckets`, as the
    example client routes them); `serving_default` reads only the first
    `max_source_length` ids of a longer one, as the SavedModel reads only
    the first `max_source_length` of its `DecodingSpec`.

    Args:
        path: The `.tflite` file, with `vocabulary.json` beside it.
        sources: Lists of source ids, without padding.

    Returns:
        One int32 array of target ids per source, `<end>` and padding
        included.

    Raises:
        ImportError: `ai_edge_litert` is not installed.
    """
    from ai_edge_litert.interpreter import Interpreter

    vocabulary = json.loads((path.parent / "vocabulary.json").read_text())
    interpreter = Interpreter(str(path))
    calls, _ = bucket_calls(
        sources, vocabulary["buckets"], vocabulary["pad_id"], cut_longer=True
    )
    answers: dict[int, np.ndarray] = {}
    # The interpreter announces its XNNPACK delegate at its first call.
    with held_back_native_output():
        for call in calls:
            runner = interpreter.get_signature_runner(call.signature)
            for start in range(0, len(call.rows), LITERT_BATCH):
                chunk = call.source_ids[start : start + LITERT_BATCH]
                target_ids = runner(source_ids=chunk)["target_ids"]
                answers.update(zip(call.rows[start : start + LITERT_BATCH], target_ids))
    return [answers[index] for index in range(len(sources))]
