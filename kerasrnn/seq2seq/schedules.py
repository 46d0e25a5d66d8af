"""Scheduled-sampling schedules: ε_i, the probability of teacher forcing.

Lecture notes §5 (solutions to exposure bias): at training step i, each
decoder step of each example is fed the ground truth y_{t-1} with
probability ε_i, else the model's own prediction ŷ_{t-1}; ε_i decays from
1 (pure teacher forcing) toward 0 (free running). The three decays are
those of Bengio et al. (2015), "Scheduled Sampling for Sequence Prediction
with Recurrent Neural Networks", §2.4, with i the optimizer's step count:

- linear:          ε_i = max(ε_min, 1 − i / decay_steps)
  (the paper's max(ε, k − c·i) with k = 1, c = 1 / decay_steps);
- exponential:     ε_i = k^i, 0 < k < 1;
- inverse sigmoid: ε_i = k / (k + exp(i / k)), k ≥ 1.

A schedule is a callable `schedule(step) -> ε` (float32 scalar tensor)
that `Seq2Seq(sampling_schedule=...)` evaluates at every training step.
"""

from __future__ import annotations

import abc
import math

import keras
from keras import ops

from kerasrnn.types import Config, TensorLike
from kerasrnn.validation import check_number


class SamplingSchedule(abc.ABC):
    """Abstract base: maps a training step i to ε_i in [0, 1].

    A subclass defines `epsilon(step)` (the decay, on a float32 step) and
    `get_config()` (its constructor arguments, for saving).
    """

    def __call__(self, step: int | TensorLike) -> TensorLike:
        """ε at `step` (int or integer tensor), a float32 scalar tensor."""
        return self.epsilon(ops.cast(step, "float32"))

    @abc.abstractmethod
    def epsilon(self, step: TensorLike) -> TensorLike:
        """ε_i for a float32 scalar step i."""

    @abc.abstractmethod
    def get_config(self) -> Config:
        """The constructor arguments, a dict."""

    @classmethod
    def from_config(cls, config: Config) -> SamplingSchedule:
        """The schedule `get_config` describes."""
        return cls(**config)


@keras.saving.register_keras_serializable(package="kerasrnn")
class LinearSamplingSchedule(SamplingSchedule):
    """ε_i = max(minimum, 1 − i / decay_steps).

    Args:
        decay_steps: Positive number of steps over which ε falls from 1 to 0.
        minimum: The floor ε_min in [0, 1). Default 0.
    """

    def __init__(self, decay_steps: float, minimum: float = 0.0) -> None:
        self.decay_steps = check_number(
            "decay_steps", decay_steps, low=0, low_open=True
        )
        self.minimum = check_number(
            "minimum", minimum, low=0.0, high=1.0, high_open=True
        )

    def epsilon(self, step: TensorLike) -> TensorLike:
        return ops.maximum(self.minimum, 1.0 - step / self.decay_steps)

    def get_config(self) -> Config:
        return {"decay_steps": self.decay_steps, "minimum": self.minimum}


@keras.saving.register_keras_serializable(package="kerasrnn")
class ExponentialSamplingSchedule(SamplingSchedule):
    """ε_i = k^i.

    Args:
        k: Decay factor per step, in (0, 1); e.g. 0.999 halves ε in about
            693 steps.
    """

    def __init__(self, k: float) -> None:
        self.k = check_number(
            "k", k, low=0.0, high=1.0, low_open=True, high_open=True
        )

    def epsilon(self, step: TensorLike) -> TensorLike:
        return ops.exp(step * math.log(self.k))

    def get_config(self) -> Config:
        return {"k": self.k}


@keras.saving.register_keras_serializable(package="kerasrnn")
class InverseSigmoidSamplingSchedule(SamplingSchedule):
    """ε_i = k / (k + exp(i / k)).

    Args:
        k: Number ≥ 1; ε crosses 1/2 at i = k·ln(k) and falls off over
            about k steps around it.
    """

    def __init__(self, k: float) -> None:
        self.k = check_number("k", k, low=1.0)

    def epsilon(self, step: TensorLike) -> TensorLike:
        # k / (k + e^{i/k}) = σ(ln k − i/k): no overflow for large i.
        return ops.sigmoid(math.log(self.k) - step / self.k)

    def get_config(self) -> Config:
        return {"k": self.k}
