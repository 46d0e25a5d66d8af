"""Names every docstring example in kerasrnn may use without importing them.

`python -m pytest` runs the examples with `--doctest-modules` (see
pyproject.toml); `np`, `keras` and `kerasrnn` are there as a reader expects.
"""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _doctest_names(doctest_namespace):
    import keras
    import numpy as np

    import kerasrnn

    doctest_namespace.update(np=np, keras=keras, kerasrnn=kerasrnn)
