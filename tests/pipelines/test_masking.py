"""The tasks' recurrent stacks read no padded step, on every supported Keras.

Keras 3.16's recurrent layers no longer pass a mask on to the next layer;
the stacks hand every layer the ids' mask, so a sequence padded at the end
answers as it does unpadded, and Keras says nothing about masks.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.tasks import classify, tag
from kerasrnn_pipelines.tasks.options.classify_config import ClassifyConfig
from kerasrnn_pipelines.tasks.options.tag_config import TagConfig
from kerasrnn_pipelines.training import RunContext
from tests.padding import PADDED, assert_padding_changes_nothing


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_a_two_layer_tagger_answers_padded_as_unpadded(cell, bidirectional):
    keras.utils.set_random_seed(0)
    config = TagConfig(cell=cell, units=4, layers=2, embedding=4, bidirectional=bidirectional)
    assert_padding_changes_nothing(
        lambda: tag.build_model(config, vocabulary=10, classes=3), per_step=True
    )


@pytest.mark.parametrize("bidirectional", [True, False])
def test_a_two_layer_classifier_answers_padded_as_unpadded(bidirectional):
    keras.utils.set_random_seed(0)
    config = ClassifyConfig(units=4, layers=2, embedding=4, bidirectional=bidirectional)
    assert_padding_changes_nothing(
        lambda: classify.build_model(config, classes=2, vocabulary=10), per_step=False
    )


def test_the_taggers_loss_is_the_mean_over_real_steps(tmp_path):
    """The loss `compile_model` gives, on a batch weighted as the task's
    data is (padding weighs 0), is the mean cross-entropy of the real steps
    alone, worked out in NumPy from the model's probabilities."""
    keras.utils.set_random_seed(0)
    config = TagConfig(units=4, layers=2, embedding=4)
    model = tag.build_model(config, vocabulary=10, classes=3)
    directory = claim_run_directory(tmp_path / "run", "tag", {}, restart=False, overwrite=False)
    tag.compile_model(model, RunContext(config, tf.distribute.get_strategy(), directory))
    labels = np.array([[1, 2, 0, 0, 0, 0, 0], [2, 2, 1, 0, 1, 0, 0]])
    weights = (PADDED != 0).astype("float32")

    loss = model.evaluate(PADDED, labels, sample_weight=weights, verbose=0, return_dict=True)

    probabilities = keras.ops.convert_to_numpy(model(PADDED))
    chosen = np.take_along_axis(probabilities, labels[..., None], axis=-1)[..., 0]
    real = PADDED != 0
    np.testing.assert_allclose(loss["loss"], -np.log(chosen[real]).mean(), rtol=1e-5)
