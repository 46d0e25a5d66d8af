"""The serving export's source table leaves TensorFlow's global graph as it
found it: a `None` left in its `table_initializer` collection makes every
later freezing of a traced function (a LiteRT export in the same process)
warn that it cannot serialize it."""

import logging

import pytest
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

from kerasrnn import seq2seq
from kerasrnn.export.seq2seq_savedmodel import source_lookup_table

COLLECTION = tf.compat.v1.GraphKeys.TABLE_INITIALIZERS


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def tensorflow_log():
    """The messages TensorFlow's Python logger emits during the test; the
    global graph's table initializers are put back as they were after it."""
    records = Records()
    logger = tf.get_logger()
    logger.addHandler(records)
    initializers = tf.compat.v1.get_collection_ref(COLLECTION)
    saved = list(initializers)
    try:
        yield records.messages
    finally:
        logger.removeHandler(records)
        initializers[:] = saved


def freeze_a_traced_function():
    """What a LiteRT export does first: trace, then freeze the variables."""
    scale = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def scaled(x):
        return x * scale

    convert_variables_to_constants_v2(scaled.get_concrete_function())


def serializing_warnings(messages):
    return [message for message in messages if "Issue encountered when serializing" in message]


def test_a_table_made_eagerly_by_tensorflow_alone_leaves_a_warning(tensorflow_log):
    """The behaviour `source_lookup_table` undoes, so that the next test can fail."""
    tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(["a"]), tf.constant([4])), -1
    )
    freeze_a_traced_function()
    assert serializing_warnings(tensorflow_log)


def test_the_source_table_leaves_no_warning_for_a_later_export(tensorflow_log):
    vocabulary = seq2seq.Vocabulary("abc")
    table = source_lookup_table(vocabulary)
    freeze_a_traced_function()
    assert serializing_warnings(tensorflow_log) == []
    assert None not in tf.compat.v1.get_collection(COLLECTION)
    looked_up = table.lookup(tf.constant(["a", "b", "c", "z"])).numpy().tolist()
    assert looked_up == vocabulary.encode(["a", "b", "c"]) + [-1]
