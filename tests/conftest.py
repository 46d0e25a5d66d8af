import os

# Quiet TensorFlow's C++ start-up chatter in test logs.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name: reproducible, distinct."""
    seed = sum(ord(ch) for ch in request.node.nodeid) % (2**31)
    return np.random.default_rng(seed)
