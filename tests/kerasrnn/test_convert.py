"""from_keras / to_keras: the same function on both sides, within float32 round-off."""

import keras
import numpy as np
import pytest

import kerasrnn

KERAS_LAYERS = {
    "simple_rnn": lambda **kw: keras.layers.SimpleRNN(5, **kw),
    "lstm": lambda **kw: keras.layers.LSTM(5, **kw),
    "gru_reset_after": lambda **kw: keras.layers.GRU(5, **kw),
    "gru_reset_before": lambda **kw: keras.layers.GRU(5, reset_after=False, **kw),
    "gru_hard_sigmoid": lambda **kw: keras.layers.GRU(
        5, recurrent_activation="hard_sigmoid", **kw
    ),
}
OURS = {
    "simple_rnn": kerasrnn.ElmanCell,
    "lstm": kerasrnn.LSTMCell,
    "gru_reset_after": kerasrnn.GRUCell,
    "gru_reset_before": kerasrnn.GRUCell,
    "gru_hard_sigmoid": kerasrnn.GRUCell,
}


def randomized(layer, rng, d=4):
    layer.build((None, None, d))
    layer.set_weights([rng.normal(scale=0.6, size=w.shape) for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("kind", list(KERAS_LAYERS))
def test_from_keras_layer_and_back(kind, rng):
    source = randomized(
        KERAS_LAYERS[kind](return_sequences=True, return_state=True), rng
    )
    xs = rng.normal(size=(3, 6, 4)).astype("float32")
    mask = np.ones((3, 6), bool)
    mask[1, 4:] = False
    want = [np.asarray(t) for t in source(xs, mask=mask)]

    converted = kerasrnn.from_keras(source)
    assert isinstance(converted, keras.layers.RNN)
    assert isinstance(converted.cell, OURS[kind])
    assert converted.return_sequences and converted.return_state
    got = [np.asarray(t) for t in converted(xs, mask=mask)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5)

    back = kerasrnn.to_keras(converted)
    assert type(back) is type(source)
    again = [np.asarray(t) for t in back(xs, mask=mask)]
    for g, w in zip(again, want):
        np.testing.assert_allclose(g, w, atol=1e-5)


def test_gru_update_gate_block_is_negated_and_nothing_else(rng):
    source = randomized(keras.layers.GRU(5), rng)
    ours = kerasrnn.from_keras(source.cell)
    n = 5
    for theirs_w, ours_w in [
        (source.cell.kernel, ours.kernel),
        (source.cell.recurrent_kernel, ours.recurrent_kernel),
        (source.cell.bias, ours.bias),
    ]:
        theirs_w, ours_w = np.asarray(theirs_w), np.asarray(ours_w)
        np.testing.assert_array_equal(ours_w[..., :n], -theirs_w[..., :n])
        np.testing.assert_array_equal(ours_w[..., n:], theirs_w[..., n:])


@pytest.mark.parametrize(
    "cell",
    [
        lambda: kerasrnn.ElmanCell(4, activation="softsign"),
        lambda: kerasrnn.LeakyCell(4, alpha=1.0),
        lambda: kerasrnn.LSTMCell(4, forget_bias=2.0),
        lambda: kerasrnn.GRUCell(4),
        lambda: kerasrnn.GRUCell(4, reset_after=True),
    ],
)
def test_to_keras_cell_computes_the_same_function(cell, rng):
    ours = keras.layers.RNN(cell(), return_sequences=True)
    randomized(ours, rng, d=3)
    xs = rng.normal(size=(2, 5, 3)).astype("float32")
    keras_layer = kerasrnn.to_keras(ours)
    assert keras_layer.return_sequences
    np.testing.assert_allclose(
        np.asarray(keras_layer(xs)), np.asarray(ours(xs)), atol=1e-5
    )
    keras_cell = kerasrnn.to_keras(ours.cell)
    plain = keras.layers.RNN(keras_cell, return_sequences=True)
    np.testing.assert_allclose(np.asarray(plain(xs)), np.asarray(ours(xs)), atol=1e-5)


def test_a_model_trained_with_our_cells_runs_on_keras_layers(rng):
    inputs = keras.Input((None, 3))
    x = keras.layers.Bidirectional(
        keras.layers.RNN(kerasrnn.LSTMCell(4), return_sequences=True)
    )(inputs)
    x = keras.layers.RNN(kerasrnn.GRUCell(3, reset_after=True))(x)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    model.compile("adam", "mse")
    xs = rng.normal(size=(16, 5, 3)).astype("float32")
    model.fit(xs, rng.normal(size=(16, 1)), epochs=2, verbose=0)

    fast_inputs = keras.Input((None, 3))
    bidirectional = kerasrnn.to_keras(model.layers[1])
    assert isinstance(bidirectional.forward_layer, keras.layers.LSTM)
    assert isinstance(bidirectional.backward_layer, keras.layers.LSTM)
    fast = bidirectional(fast_inputs)
    fast = kerasrnn.to_keras(model.layers[2])(fast)
    dense = keras.layers.Dense(1)
    fast_model = keras.Model(fast_inputs, dense(fast))
    dense.set_weights(model.layers[3].get_weights())
    np.testing.assert_allclose(
        fast_model.predict(xs, verbose=0), model.predict(xs, verbose=0), atol=1e-5
    )


def test_bidirectional_from_keras(rng):
    source = keras.layers.Bidirectional(keras.layers.GRU(4), merge_mode="sum")
    randomized(source, rng, d=3)
    xs = rng.normal(size=(2, 5, 3)).astype("float32")
    converted = kerasrnn.from_keras(source)
    assert isinstance(converted.forward_layer.cell, kerasrnn.GRUCell)
    assert converted.merge_mode == "sum"
    np.testing.assert_allclose(
        np.asarray(converted(xs)), np.asarray(source(xs)), atol=1e-5
    )


def test_refusals():
    with pytest.raises(ValueError, match="Keras has no leaky unit.*alpha=0.5"):
        leaky = kerasrnn.LeakyCell(3, alpha=0.5)
        leaky.build((None, 2))
        kerasrnn.to_keras(leaky)
    with pytest.raises(ValueError, match="no weights to convert"):
        kerasrnn.from_keras(keras.layers.LSTMCell(3))
    with pytest.raises(ValueError, match="recurrent_activation.*'tanh'"):
        gru = keras.layers.GRUCell(3, recurrent_activation="tanh")
        gru.build((None, 2))
        kerasrnn.from_keras(gru)
    with pytest.raises(ValueError, match="SimpleRNN, LSTM or GRU"):
        dense = keras.layers.Dense(3)
        dense.build((None, 2))
        kerasrnn.from_keras(dense)
