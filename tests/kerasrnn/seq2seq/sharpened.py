"""Untrained seq2seq models whose decoding decisions are far apart.

An untrained model's next-token distributions are nearly flat, so some of
its candidates lie within float32 noise of each other, and two
computations of the same numbers in different orders (a loop and a
compiled graph, XLA and TensorFlow, a batch and one row) may rank them
differently. Tests that compare such decodings use these models.
"""

import numpy as np


def sharpened(model, seed, attention=False):
    """`model`, its output layer's weights (and with `attention` its
    attention's) drawn from N(0, 1.5²) by a generator seeded with `seed`:
    sharp output distributions (and α far from uniform), so that the
    candidates rank far apart and a mix-up of tokens or positions shows."""
    rng = np.random.default_rng(seed)
    layers = [model.output_projection] + ([model.attention] if attention else [])
    for layer in layers:
        for weight in layer.weights:
            weight.assign(rng.normal(0, 1.5, weight.shape))
    return model


def scaled_outputs(model, factor):
    """`model`, its output layer's kernel multiplied by `factor`: its logits
    `factor` times as far apart, so that its candidates keep their order
    (wherever they were not near ties) and lie far apart."""
    kernel = model.output_projection.kernel
    kernel.assign(kernel * factor)
    return model
