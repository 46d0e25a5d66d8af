"""Knowledge distillation: a small student `Seq2Seq` trained on what a
larger teacher (a `Seq2Seq` or a `Seq2SeqEnsemble`) knows.

Token level (Hinton, Vinyals & Dean 2015, "Distilling the knowledge in a
neural network"; Kim & Rush 2016's word-level distillation). Under teacher
forcing, at every real target position t the student learns the labels and
the teacher's whole next-token distribution:

    L = (1 − w)·CE(y_t, p_S) + w·τ²·KL(p_T^τ ‖ p_S^τ),   p^τ = softmax(z / τ),

averaged over the real target tokens (padding excluded) as
`SequenceCrossEntropy` averages them. The temperature τ softens both
distributions so that the teacher's ranking of the wrong tokens shows; τ²
keeps the KL term's gradients on the scale of the cross-entropy's as τ
changes. τ is at most 100 (`MAX_DISTILLATION_TEMPERATURE`): float32 rounds
each log-probability to about 6e-8 of its size and the KL term multiplies
that rounding by τ², so that beyond 100 the rounding stops being small
beside the term; and by a few tens τ²·KL has reached its limit (matching
the logits), so a larger τ would add rounding and nothing else.

An ensemble teacher's distribution is the mixture its decoders step with,
(1/N) Σ_k p_k over its decoding members: distilling an ensemble into one
model is how Sun et al. 2019 ("Token-level ensemble distillation
for grapheme-to-phoneme conversion") obtain a single G2P model close to the
ensemble. `Distiller` trains a student this way with `fit`.

Sequence level (Kim & Rush 2016, "Sequence-level knowledge distillation"):
the student is trained, with the ordinary loss, on the teacher's beam-search
answers instead of (or besides) the references. `teacher_targets` produces
them, and it needs no references: sources with no known answer become
training pairs.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from kerasrnn.allowed import MAX_DISTILLATION_TEMPERATURE
from kerasrnn.keras_internals import additional_loss
from kerasrnn.seq2seq.decoding import beam_search_decode
from kerasrnn.seq2seq.ensemble import Seq2SeqEnsemble, mixture_log_probs
from kerasrnn.seq2seq.model import Seq2Seq
from kerasrnn.seq2seq.renamed import renamed_keyword
from kerasrnn.seq2seq.specs import DecodingSpec
from kerasrnn.seq2seq.vocabulary import END_ID, PAD_ID
from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_number, check_positive_int

#: What a teacher may be: a model the decoders accept.
Teacher = Seq2Seq | Seq2SeqEnsemble

#: The key of `fit`'s inputs under which a batch may carry its teacher's
#: logits, computed beforehand (`Distiller`).
TEACHER_LOGITS = "teacher_logits"


def check_teacher(teacher: object) -> Teacher:
    """`teacher` if it is a `Seq2Seq` or a `Seq2SeqEnsemble`, else a
    ValueError naming it."""
    if not isinstance(teacher, (Seq2Seq, Seq2SeqEnsemble)):
        raise ValueError(
            "Argument `teacher` must be a kerasrnn.seq2seq Seq2Seq or "
            f"Seq2SeqEnsemble. Received: teacher={teacher!r}"
        )
    return teacher


def check_temperature(temperature: object) -> float:
    """`temperature` as a float if 0 < τ ≤ `MAX_DISTILLATION_TEMPERATURE`,
    else a ValueError that names it and says why the bound (the module
    doc)."""
    value = check_number("temperature", temperature, low=0, low_open=True)
    if value > MAX_DISTILLATION_TEMPERATURE:
        raise ValueError(
            "Argument `temperature` must be a finite number > 0 and at most "
            f"{MAX_DISTILLATION_TEMPERATURE:g}: the KL term multiplies float32's "
            "rounding of the log-probabilities by temperature², which beyond "
            f"{MAX_DISTILLATION_TEMPERATURE:g} is no longer small beside the term, "
            "and the term has long reached its limit there. "
            f"Received: temperature={temperature!r}"
        )
    return value


def check_not_its_own_teacher(student: Seq2Seq, teacher: Teacher) -> None:
    """Refuse a teacher that is `student`, or holds it (an ensemble with the
    student as a member), or shares any weight with it: the teacher is
    frozen, so the student would train nothing and the loss stay constant.
    """
    teacher_weights = {id(weight) for weight in teacher.weights}
    shared = [weight for weight in student.weights if id(weight) in teacher_weights]
    if not shared:
        return
    if teacher is student:
        what = "the teacher is the student"
    elif isinstance(teacher, Seq2SeqEnsemble) and any(m is student for m in teacher.members):
        what = "the student is one of the teacher's members"
    else:
        what = f"the teacher shares {len(shared)} of the student's weights"
    raise ValueError(
        "Argument `teacher` must be another model than `student`: the teacher "
        "is frozen, so a student that is (part of) its own teacher would have "
        f"no weight to train. Received: teacher={teacher.name!r} and "
        f"student={student.name!r}: {what}"
    )


def teacher_logits(
    teacher: Teacher, inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike]
) -> TensorLike:
    """The teacher's next-token distribution under teacher forcing, as logits.

    Args:
        teacher: A `Seq2Seq`, or a `Seq2SeqEnsemble`, run with
            `training=False` (no dropout, no scheduled sampling).
        inputs: `{"source": (batch, S), "decoder_input": (batch, T)}` int ids
            (or the pair), as `teacher_forcing_pair` makes.

    Returns:
        `(batch, T, V)` float32: a `Seq2Seq`'s logits; for an ensemble, the
        log-probabilities log (1/N) Σ_k p_k of its decoding members' mixture,
        the distribution its `decode_step` decodes with (its right-to-left
        rescorers take no part). softmax of either is the distribution.

    Example:

    >>> from kerasrnn import seq2seq
    >>> members = [seq2seq.Seq2Seq(10, 7, kerasrnn.LSTMCell(4), embedding_dim=3)
    ...            for _ in range(2)]
    >>> batch = {"source": np.ones((2, 5)), "decoder_input": np.ones((2, 4))}
    >>> logits = seq2seq.teacher_logits(seq2seq.Seq2SeqEnsemble(members), batch)
    >>> tuple(logits.shape), bool(np.allclose(np.exp(logits).sum(-1), 1, atol=1e-5))
    ((2, 4, 7), True)
    """
    teacher = check_teacher(teacher)
    if isinstance(teacher, Seq2Seq):
        return ops.cast(teacher(inputs, training=False), "float32")
    return mixture_log_probs(
        ops.stack(
            [
                ops.log_softmax(
                    ops.cast(member(inputs, training=False), "float32"), axis=-1
                )
                for member in teacher.decoding_members()
            ]
        )
    )


def distillation_loss(
    labels: TensorLike,
    student_logits: TensorLike,
    teacher_logits: TensorLike,
    weight: float = 0.5,
    temperature: float = 2.0,
) -> TensorLike:
    """Token-level distillation loss, the mean over real target tokens of
    (1 − w)·CE(y_t, p_S) + w·τ²·KL(p_T^τ ‖ p_S^τ) (see the module doc).

    The mean is `SequenceCrossEntropy`'s: padding positions (label 0) count
    for nothing, and under a `tf.distribute` strategy each replica's sum is
    divided by the real tokens of the whole global batch, so that the
    replicas' summed gradients are one device's.

    Args:
        labels: `(batch, T)` int target ids, 0 for padding.
        student_logits: `(batch, T, V)` the student's logits.
        teacher_logits: `(batch, T, V)` the teacher's (`teacher_logits`);
            no gradient flows into them.
        weight: w in [0, 1]: 0 is `SequenceCrossEntropy` alone, 1 the
            teacher alone.
        temperature: τ in (0, 100], applied to both distributions in the KL
            term (the module doc says why the bound).

    Returns:
        A float32 scalar (0 for a batch without real tokens).

    Example:

    >>> from kerasrnn import seq2seq
    >>> labels = np.array([[5, 2, 0]])
    >>> logits = np.log(np.full((1, 3, 6), 1 / 6))
    >>> float(seq2seq.distillation_loss(labels, logits, logits, weight=1.0))
    0.0
    >>> round(float(seq2seq.distillation_loss(labels, logits, logits, weight=0.0)), 4)
    1.7918
    """
    weight = check_number("weight", weight, low=0, high=1)
    temperature = check_temperature(temperature)
    labels = ops.cast(labels, "int32")
    student_logits = ops.cast(student_logits, "float32")
    teacher_logits = ops.stop_gradient(ops.cast(teacher_logits, "float32"))
    cross_entropy = keras.losses.sparse_categorical_crossentropy(
        labels, student_logits, from_logits=True
    )
    teacher_log_probs = ops.log_softmax(teacher_logits / temperature, axis=-1)
    student_log_probs = ops.log_softmax(student_logits / temperature, axis=-1)
    divergence = ops.sum(
        ops.exp(teacher_log_probs) * (teacher_log_probs - student_log_probs), axis=-1
    )
    token_loss = (1.0 - weight) * cross_entropy + (
        weight * temperature**2
    ) * divergence
    real = ops.not_equal(labels, PAD_ID)
    tokens = ops.sum(ops.cast(real, "float32"))
    replica = tf.distribute.get_replica_context()
    if replica is not None and replica.num_replicas_in_sync > 1:
        tokens = replica.all_reduce(tf.distribute.ReduceOp.SUM, tokens)
    return ops.sum(ops.where(real, token_loss, 0.0)) / ops.maximum(tokens, 1.0)


@keras.saving.register_keras_serializable(package="kerasrnn")
class Distiller(keras.Model):
    """A student `Seq2Seq` trained by token-level distillation from a frozen
    teacher (Hinton et al. 2015; Kim & Rush 2016; see the module doc).

    `fit` takes the same `(inputs, labels)` batches as the student alone
    (`teacher_forcing_pair`'s); each step calls the teacher on the batch
    (`training=False`) and minimises `distillation_loss` over the student's
    weights. A batch whose inputs also hold `"teacher_logits"`
    (`TEACHER_LOGITS`), `(batch, T, V)`, is scored against those instead,
    and the teacher is not run: its logits for a fixed training set are the
    same at every epoch, so computing them once with `teacher_logits`
    (padding rows are never read) spares each step the teacher's forward
    pass, most of a small student's step (a 128-unit student of the
    three 256-unit members of g2p's full preset, batches of 128: 39 ms a
    step against 118 ms, side by side on two cores). Compile it with an
    optimizer (and metrics) but no loss: its
    loss is its own, and `compile` refuses another. The teacher's
    `trainable` is set to False. `save` writes a `.keras` file that loads
    as a `Distiller` (student, teacher, w and τ); what one decodes and
    serves afterwards is `distiller.student`.

    Args:
        student: The `Seq2Seq` to train.
        teacher: A trained `Seq2Seq` or `Seq2SeqEnsemble` over the same
            source and target vocabulary sizes, reading the target in the
            same order as the student; neither the student nor a model
            sharing its weights (an ensemble holding it).
        weight: w in [0, 1], the KL term's share of the loss.
        temperature: τ in (0, 100] (`MAX_DISTILLATION_TEMPERATURE`; the
            module doc says why the bound).
        **kwargs: Passed to `keras.Model` (`name`, ...).

    Call arguments:
        inputs: `{"source": (batch, S), "decoder_input": (batch, T)}` int
            ids (or the pair); a `"teacher_logits"` entry is left to the
            loss.
        training: Whether the student's dropout and scheduled sampling
            apply.

    Returns:
        The student's `(batch, T, V)` logits.

    Example:

    >>> from kerasrnn import seq2seq
    >>> teacher = seq2seq.Seq2Seq(12, 12, kerasrnn.LSTMCell(64), attention="luong")
    >>> student = seq2seq.Seq2Seq(12, 12, kerasrnn.LSTMCell(16))
    >>> distiller = seq2seq.Distiller(student, teacher, weight=0.5, temperature=2.0)
    >>> distiller.compile(keras.optimizers.Adam(0.01))
    >>> distiller.fit(inputs, labels, epochs=5)  # doctest: +SKIP
    >>> seq2seq.beam_search_decode(
    ...     distiller.student, source_ids,
    ...     decoding=seq2seq.DecodingSpec(beam_width=4, max_target_length=20),
    ... )  # doctest: +SKIP
    """

    def __init__(
        self,
        student: Seq2Seq,
        teacher: Teacher,
        weight: float = 0.5,
        temperature: float = 2.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(student, Seq2Seq):
            raise ValueError(
                "Argument `student` must be a kerasrnn.seq2seq Seq2Seq. "
                f"Received: student={student!r}"
            )
        teacher = check_teacher(teacher)
        check_not_its_own_teacher(student, teacher)
        for name in ("source_vocabulary_size", "target_vocabulary_size"):
            student_size, teacher_size = getattr(student, name), getattr(teacher, name)
            if student_size != teacher_size:
                raise ValueError(
                    f"Arguments `student` and `teacher` must share one {name}: "
                    "the student learns the teacher's distribution token by "
                    f"token. Received: student {name}={student_size}, "
                    f"teacher {name}={teacher_size}"
                )
        if student.reads_right_to_left != teacher.reads_right_to_left:
            raise ValueError(
                "Arguments `student` and `teacher` must read the target in one "
                "order: a right-to-left model's distribution at y_t is "
                "conditioned on the tokens after it. Received: student "
                f"target_order={student.target_order!r}, teacher reads right "
                f"to left: {teacher.reads_right_to_left}"
            )
        self.weight = check_number("weight", weight, low=0, high=1)
        self.temperature = check_temperature(temperature)
        self.student = student
        self.teacher = teacher
        # Set twice: Keras's setter changes nothing when the flag already
        # reads False, and a teacher made from a saved Distiller's config
        # reads False while its layers are still trainable.
        self.teacher.trainable = True
        self.teacher.trainable = False
        # Built as made, as the student and the teacher are: its weights
        # (a backup's, say) load before any call.
        self.build()

    def build(self, input_shape: Any = None) -> None:
        """Nothing to create: the student and the teacher, built as they
        are made, hold every weight."""

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, **kwargs: Any) -> None:
        """`keras.Model.compile` without a loss: the distiller's is its own,
        `distillation_loss` with its weight and temperature.

        Raises:
            ValueError: `loss` is given.
        """
        if loss is not None:
            raise ValueError(
                "Argument `loss` must be None: a Distiller's loss is its own, "
                "(1 - w)·CE + w·τ²·KL (distillation_loss, with its `weight` and "
                "`temperature`); compile it with an optimizer and metrics "
                f"only. Received: loss={loss!r}"
            )
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config: Config) -> None:
        """Compile as a saved distiller was (`keras.saving.load_model`), its
        optimizer built so that its saved variables load."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        self.optimizer.build(self.trainable_variables)

    def call(
        self,
        inputs: dict[str, TensorLike] | tuple[TensorLike, TensorLike],
        training: bool | None = None,
    ) -> TensorLike:
        """The student's `(batch, T, V)` logits; see the call arguments."""
        if isinstance(inputs, dict) and TEACHER_LOGITS in inputs:
            inputs = {key: value for key, value in inputs.items() if key != TEACHER_LOGITS}
        return self.student(inputs, training=training)

    def compute_loss(
        self,
        x: Any = None,
        y: TensorLike | None = None,
        y_pred: TensorLike | None = None,
        sample_weight: TensorLike | None = None,
        training: bool = True,
    ) -> TensorLike:
        """`distillation_loss` of the batch, against the teacher's logits
        the batch carries (`TEACHER_LOGITS`) or, without them, the
        teacher's on the batch; plus any losses the student's layers add."""
        if sample_weight is not None:
            raise ValueError(
                "Distiller.fit takes no sample weights: every real target "
                "token counts once, as in SequenceCrossEntropy's mean. "
                "Received: a sample_weight"
            )
        if isinstance(x, dict) and TEACHER_LOGITS in x:
            teacher = x[TEACHER_LOGITS]
            # Checked on the static shape, as fit traces the step.
            if tuple(teacher.shape[-1:]) != (self.student.target_vocabulary_size,):
                raise ValueError(
                    f'Input `"{TEACHER_LOGITS}"` must be the teacher\'s logits '
                    "(batch, T, target_vocabulary_size), one per target token. "
                    f"Received: shape {tuple(teacher.shape)} for a target vocabulary of "
                    f"{self.student.target_vocabulary_size}"
                )
        else:
            teacher = teacher_logits(self.teacher, x)
        loss = distillation_loss(y, y_pred, teacher, self.weight, self.temperature)
        for extra in self.losses:
            loss = loss + additional_loss(self, extra)
        return loss

    def get_config(self) -> Config:
        """The student and the teacher serialized, `weight` and
        `temperature`."""
        return {
            "name": self.name,
            "student": keras.saving.serialize_keras_object(self.student),
            "teacher": keras.saving.serialize_keras_object(self.teacher),
            "weight": self.weight,
            "temperature": self.temperature,
        }

    @classmethod
    def from_config(cls, config: Config) -> Distiller:
        """The distiller `get_config` describes (its weights not included)."""
        config = dict(config)
        for name in ("student", "teacher"):
            config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)


#: `teacher_targets`' `max_target_length` when it is not passed.
DEFAULT_MAX_TARGET_LENGTH = 32


def teacher_targets(
    teacher: Teacher,
    source_ids: TensorLike,
    beam_width: int = 4,
    max_target_length: int | None = None,
    batch_size: int = 256,
    length_penalty: float = 0.0,
    *,
    max_length: int | None = None,
) -> np.ndarray:
    """The teacher's best beam-search answers, as training targets for
    sequence-level distillation (Kim & Rush 2016).

    `teacher_forcing_pair(source_ids, targets)` turns them into the
    `(inputs, labels)` a student trains on with `SequenceCrossEntropy`. The
    sources need no reference answers: unlabelled sources become training
    pairs.

    Args:
        teacher: A `Seq2Seq` or `Seq2SeqEnsemble` (its right-to-left
            members rescore, as in `beam_search_decode`).
        source_ids: `(n, S)` int ids padded with 0, as `beam_search_decode`
            takes them.
        beam_width: Positive int, the teacher's beam.
        max_target_length: The most tokens per answer
            (`beam_search_decode`'s), 32 if None; an answer that reaches it
            without `<end>` is kept as cut, so choose it above the longest
            answer expected.
        batch_size: Positive int, the sources decoded at a time.
        length_penalty: `beam_search_decode`'s α.
        max_length: The deprecated name of `max_target_length`: it works
            until the next release, with a `DeprecationWarning`.

    Returns:
        `(n, L)` int32 NumPy ids: row i the best answer to source i, in the
        form `teacher_forcing_pair` takes, its tokens then padding (the
        `<end>` the teacher emitted is dropped: `teacher_forcing_pair`
        appends it to the labels). L is the longest answer's length (at
        least 1).

    Example:

    >>> from kerasrnn import seq2seq
    >>> teacher = seq2seq.Seq2Seq(12, 12, kerasrnn.LSTMCell(8), embedding_dim=4)
    >>> targets = seq2seq.teacher_targets(teacher, np.array([[4, 5, 6], [7, 0, 0]]),
    ...                                   beam_width=2, max_target_length=5)
    >>> targets.shape[0], targets.dtype.name, targets.shape[1] <= 5
    (2, 'int32', True)
    >>> inputs, labels = seq2seq.teacher_forcing_pair(
    ...     unlabelled_sources, seq2seq.teacher_targets(teacher, unlabelled_sources)
    ... )  # doctest: +SKIP
    """
    length = renamed_keyword(
        "teacher_targets", "max_length", max_length, "max_target_length", max_target_length
    )
    teacher = check_teacher(teacher)
    batch_size = check_positive_int("batch_size", batch_size)
    if tf.is_tensor(source_ids):
        source_ids = source_ids.numpy()
    sources = np.asarray(source_ids)
    if sources.ndim != 2 or 0 in sources.shape:
        raise ValueError(
            "Argument `source_ids` must be an (n, length) batch of ids with "
            f"n ≥ 1 and length ≥ 1. Received: shape {sources.shape}"
        )
    decoding = DecodingSpec(
        beam_width=beam_width,
        length_penalty=length_penalty,
        max_target_length=DEFAULT_MAX_TARGET_LENGTH if length is None else length,
    )
    answers = []
    for start in range(0, len(sources), batch_size):
        result = beam_search_decode(
            teacher, sources[start : start + batch_size], decoding=decoding
        )
        answers.append(result.sequences[:, 0].numpy())
    targets = np.concatenate(answers)
    targets[targets == END_ID] = PAD_ID
    length = max(1, int((targets != PAD_ID).sum(axis=1).max()))
    return targets[:, :length].astype(np.int32)
