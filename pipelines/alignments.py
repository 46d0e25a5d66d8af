"""Attention alignments drawn: a grid of heatmaps as PNG and as TensorBoard images.

Each panel shows α of one word: a row per emitted output token (phonemes),
a column per source token (letters), darker where the decoder looked while
it emitted that token. A model that has learnt to align draws a rough
diagonal.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import matplotlib.figure

#: One panel: `(source_tokens, output_tokens, weights)`, weights
#: `(len(output_tokens), len(source_tokens))`, rows α_t.
AlignmentExample: TypeAlias = tuple[list[str], list[str], np.ndarray]


def draw_alignments(
    examples: Sequence[AlignmentExample], columns: int = 4
) -> matplotlib.figure.Figure:
    """A matplotlib figure of alignment heatmaps.

    Args:
        examples: List of `(source_tokens, output_tokens, weights)`, weights
            `(len(output_tokens), len(source_tokens))`, rows α_t.
        columns: Panels per row.

    Returns:
        The `matplotlib.figure.Figure` (the caller saves and closes it).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = -(-len(examples) // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 3.0 * rows), squeeze=False
    )
    for axis in axes.flat[len(examples):]:
        axis.set_axis_off()
    for axis, (source, output, weights) in zip(axes.flat, examples):
        axis.set_title("".join(source), fontsize=9)
        if not output:
            # A decoder that ends at once leaves no row: there is no image.
            axis.text(0.5, 0.5, "(empty output)", ha="center", va="center")
            axis.set_axis_off()
            continue
        axis.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
        axis.set_xticks(range(len(source)), source)
        axis.set_yticks(range(len(output)), output, fontsize=7)
    figure.tight_layout()
    return figure


def write_alignments(
    examples: Sequence[AlignmentExample],
    png_path: str | os.PathLike[str],
    tensorboard_dir: str | os.PathLike[str],
    step: int = 0,
) -> None:
    """Save the heatmaps as `png_path` and log them to TensorBoard.

    Args:
        examples: See `draw_alignments`.
        png_path: The PNG file to write.
        tensorboard_dir: Directory of the TensorBoard event file; the image
            is logged as `alignments` at `step`.
    """
    import matplotlib.pyplot as plt
    import tensorflow as tf

    figure = draw_alignments(examples)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    png = buffer.getvalue()
    with open(png_path, "wb") as handle:
        handle.write(png)
    image = tf.image.decode_png(png, channels=4)[None]
    with tf.summary.create_file_writer(str(tensorboard_dir)).as_default():
        tf.summary.image("alignments", image, step=step)


def alignment_examples(
    sources: Sequence[Sequence[str]],
    outputs: Sequence[Sequence[str]],
    alignments: np.ndarray,
) -> list[AlignmentExample]:
    """Cut padded alignments to each example's real rows and columns.

    Args:
        sources: Per example, its source tokens (strings).
        outputs: Per example, its output tokens (strings).
        alignments: `(batch, T, S)` array of α, row t for output token t.

    Returns:
        List of `(source_tokens, output_tokens, weights)`.
    """
    alignments = np.asarray(alignments)
    return [
        (list(source), list(output), alignments[i, : len(output), : len(source)])
        for i, (source, output) in enumerate(zip(sources, outputs))
    ]
