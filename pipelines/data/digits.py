"""scikit-learn's 8×8 handwritten digits, read row by row as sequences.

`sklearn.datasets.load_digits` (BSD-3-Clause; the UCI "Optical Recognition
of Handwritten Digits" test set, 1,797 images, shipped inside the
package): each image becomes 8 time steps of 8 pixel intensities, scaled
to [0, 1]. The split is fixed (stratified, `random_state=0`): 20 % test,
and 10 % of the rest for validation.
"""

import numpy as np


def load_digit_sequences() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The three splits as `(sequences, labels)` pairs.

    Returns:
        Dict `"train"`/`"validation"`/`"test"` -> `(x, y)` with `x` float32
        `(m, 8, 8)` (time = image row, features = the row's pixels) and
        `y` int32 `(m,)` in 0..9.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "The digits are read from the PyPI package `scikit-learn`: "
            "pip install 'kerasrnn[data]' (or pip install scikit-learn)."
        ) from error
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")
    labels = digits.target.astype("int32")
    rest_x, test_x, rest_y, test_y = train_test_split(
        images, labels, test_size=0.2, stratify=labels, random_state=0
    )
    train_x, val_x, train_y, val_y = train_test_split(
        rest_x, rest_y, test_size=0.1, stratify=rest_y, random_state=0
    )
    return {
        "train": (train_x, train_y),
        "validation": (val_x, val_y),
        "test": (test_x, test_y),
    }
