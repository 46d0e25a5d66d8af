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


def pytest_collection_modifyitems(items):
    """Run the slow tests first, in their order. The suite runs on two
    workers that steal each other's queued tests (pyproject.toml): a long
    end-to-end run started late leaves one worker idle until it ends,
    while fast tests left for last keep both busy to the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
