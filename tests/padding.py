"""Padded sequences against the same sequences alone: what a masked model
must answer alike, the masking tests of kerasrnn and of the pipelines share."""

import warnings
from collections.abc import Callable

import keras
import numpy as np

# Two sequences of 3 and 5 ids, padded with 0 to 7 steps.
UNPADDED = [np.array([[5, 6, 7]]), np.array([[3, 9, 2, 8, 4]])]
PADDED = np.array([[5, 6, 7, 0, 0, 0, 0], [3, 9, 2, 8, 4, 0, 0]])


def mask_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The messages of `caught` that speak of masks."""
    return [str(w.message) for w in caught if "mask" in str(w.message).lower()]


def assert_padding_changes_nothing(build: Callable[[], keras.Model], per_step: bool) -> None:
    """The model `build()` makes answers `PADDED`'s rows as it answers each
    sequence alone (at its real steps when `per_step`), and Keras warns
    about no mask while building or calling it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = build()
        padded = keras.ops.convert_to_numpy(model(PADDED))
    assert mask_warnings(caught) == []
    for row, ids in enumerate(UNPADDED):
        alone = keras.ops.convert_to_numpy(model(ids))[0]
        expected = padded[row, : ids.shape[1]] if per_step else padded[row]
        np.testing.assert_allclose(expected, alone, rtol=1e-5, atol=1e-6)
