"""Recurrent layers that are handed their padding mask, on every Keras.

Up to Keras 3.15 a `keras.layers.RNN` or `Bidirectional` that returns
sequences passed its input's mask on to the next layer. Keras 3.16 sets
`supports_masking = False` on both: the next layer of a stack reads padded
steps unless it is called with `mask=`, and Keras warns at every call given
a mask, one passed explicitly included, that the layer "does not support
masking", although it reads that mask (it skips the masked steps).

kerasrnn and its pipelines compute a padding mask once and call every
recurrent layer with `mask=`; `takes_explicit_mask` marks such a layer as
supporting masks, as Keras up to 3.15 did, so that 3.16 neither warns nor
drops the mask of the layer's sequence output (a per-step loss then skips
the padded steps on every Keras).
"""

import keras


def takes_explicit_mask(layer: keras.Layer) -> keras.Layer:
    """`layer` (a `keras.layers.RNN` or `Bidirectional`, which are called
    with `mask=`) marked as supporting masks, its directions included.

    The flag is not part of a layer's config: a model loaded from a
    `.keras` file has Keras's own, and on Keras 3.16 warns, with the same
    answers where its graph passes the mask explicitly.

    Returns:
        `layer` itself.
    """
    parts = [layer]
    if isinstance(layer, keras.layers.Bidirectional):
        parts += [layer.forward_layer, layer.backward_layer]
    for part in parts:
        part.supports_masking = True
    return layer
