"""from_keras / to_keras: the same function on both sides, within float32 round-off."""

import json

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


@pytest.mark.slow
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


# ------------------------------------------------ configurations round-trip
def _fresh_bias(layer):
    """The initial bias of a layer re-created from `layer`'s config."""
    clone = type(layer).from_config(layer.get_config())
    clone.build((None, None, 3))
    return np.asarray(clone.cell.bias)


def _cloned_bias(layer):
    """The initial bias after `keras.models.clone_model` of a model around it."""
    inputs = keras.Input((None, 3))
    model = keras.Model(inputs, layer(inputs))
    clone = keras.models.clone_model(model)
    return np.asarray(clone.layers[-1].cell.bias)


UNITS = 2
# (our forget_bias, our bias_initializer, the initial bias (i, f, c~, o) by hand)
OURS_TO_KERAS = [
    (1.0, "zeros", [0, 0, 1, 1, 0, 0, 0, 0]),
    (0.0, "zeros", [0] * 8),
    (0.0, "ones", [1] * 8),
    (2.0, keras.initializers.Constant(0.03), [0.03, 0.03, 2.03, 2.03] + [0.03] * 4),
    (1.0, keras.initializers.Constant(0.03), [0.03, 0.03, 1.03, 1.03] + [0.03] * 4),
]


@pytest.mark.slow
@pytest.mark.parametrize("forget_bias,initializer,want", OURS_TO_KERAS)
def test_to_keras_lstm_config_recreates_the_forget_bias(forget_bias, initializer, want):
    ours = keras.layers.RNN(
        kerasrnn.LSTMCell(UNITS, forget_bias=forget_bias, bias_initializer=initializer)
    )
    ours.build((None, None, 3))
    np.testing.assert_allclose(np.asarray(ours.cell.bias), want, rtol=1e-6)
    theirs = kerasrnn.to_keras(ours)
    np.testing.assert_allclose(_fresh_bias(theirs), want, rtol=1e-6)
    np.testing.assert_allclose(_cloned_bias(theirs), want, rtol=1e-6)
    cell = kerasrnn.to_keras(ours.cell)
    rebuilt = type(cell).from_config(cell.get_config())
    rebuilt.build((None, 3))
    np.testing.assert_allclose(np.asarray(rebuilt.bias), want, rtol=1e-6)


def test_to_keras_default_lstm_is_plain_keras():
    """Forget bias 1 on zeros is Keras's own unit_forget_bias: no kerasrnn
    object in the config, so the layer reloads where kerasrnn is absent."""
    ours = keras.layers.RNN(kerasrnn.LSTMCell(UNITS))
    ours.build((None, None, 3))
    config = kerasrnn.to_keras(ours).get_config()
    assert config["unit_forget_bias"] is True
    assert "kerasrnn" not in json.dumps(config)


# (Keras's unit_forget_bias, its bias_initializer, the initial bias by hand)
KERAS_TO_OURS = [
    (True, "zeros", [0, 0, 1, 1, 0, 0, 0, 0]),
    (False, "zeros", [0] * 8),
    (False, keras.initializers.Constant(0.03), [0.03] * 8),
    # Keras sets the forget block to ones: 1.0, not 1.03.
    (True, keras.initializers.Constant(0.03), [0.03, 0.03, 1, 1] + [0.03] * 4),
    (True, "ones", [1] * 8),
]


@pytest.mark.parametrize("unit_forget_bias,initializer,want", KERAS_TO_OURS)
def test_from_keras_lstm_config_recreates_the_forget_bias(unit_forget_bias, initializer, want):
    source = keras.layers.LSTM(
        UNITS, unit_forget_bias=unit_forget_bias, bias_initializer=initializer
    )
    source.build((None, None, 3))
    np.testing.assert_allclose(np.asarray(source.cell.bias), want, rtol=1e-6)
    ours = kerasrnn.from_keras(source)
    np.testing.assert_allclose(_fresh_bias(ours), want, rtol=1e-6)
    np.testing.assert_allclose(_cloned_bias(ours), want, rtol=1e-6)
    # And back: Keras's config again re-creates Keras's bias.
    np.testing.assert_allclose(
        _fresh_bias(kerasrnn.to_keras(ours)), want, rtol=1e-6
    )


def test_lstm_bias_keras_rule_draws_blocks_as_keras_does():
    """With a seeded random initializer, Keras draws (n,) then (2n,)."""
    initializer = keras.initializers.RandomNormal(seed=5)
    source = keras.layers.LSTM(UNITS, bias_initializer=initializer)
    source.build((None, None, 3))
    ours = kerasrnn.from_keras(source)
    np.testing.assert_array_equal(_fresh_bias(ours), np.asarray(source.cell.bias))


@pytest.mark.parametrize("kind", list(KERAS_LAYERS))
def test_converted_layers_round_trip_their_whole_config(kind, rng):
    source = randomized(KERAS_LAYERS[kind](return_sequences=True), rng)
    ours = kerasrnn.from_keras(source)
    for layer in (ours, kerasrnn.to_keras(ours)):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
