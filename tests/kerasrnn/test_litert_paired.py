"""export_litert of Bidirectional LSTMs: both directions stepped together
(kerasrnn.export.paired_lstm), held to a NumPy loop of the LSTM equations
with padding anywhere, a step of both costing fewer operators than two
directions' steps."""

import functools

import keras
import numpy as np
import pytest

import kerasrnn
from tests.kerasrnn.numpy_reference import gate_blocks, lstm_step, run

UNITS = 3
VOCABULARY = 7
FEATURES = 2

LAYERS = {
    "kerasrnn": lambda **kw: keras.layers.RNN(kerasrnn.LSTMCell(UNITS), **kw),
    "keras": lambda **kw: keras.layers.LSTM(UNITS, **kw),
}

#: Right padding, left padding, padding between tokens, none, all.
IDS = np.array(
    [[1, 2, 3, 0, 0], [0, 0, 4, 5, 6], [2, 0, 3, 0, 4], [1, 2, 3, 4, 5], [0, 0, 0, 0, 0]],
    "int32",
)


def model_of(kind, steps=IDS.shape[1], seed=0):
    """Embedding(mask_zero) -> Bidirectional(LSTM, sequences and states)."""
    ids = keras.Input((steps,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(ids)
    outputs = keras.layers.Bidirectional(
        LAYERS[kind](return_sequences=True, return_state=True)
    )(embedded)
    model = keras.Model(ids, outputs)
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape).astype("float32"))
    return model


def reference(model, ids):
    """[sequence (batch, T, 2n), h→, c→, h←, c←] by `numpy_reference.run`,
    masked steps keeping the states and giving zeros (Bidirectional's
    `zero_output_for_mask`)."""
    embedding = model.get_layer(index=1).embeddings.numpy()
    x, mask = embedding[ids], ids != 0
    bidirectional = model.layers[-1]
    zeros = [np.zeros((len(ids), UNITS))] * 2
    sequences, states = [], []
    for layer in (bidirectional.forward_layer, bidirectional.backward_layer):
        cell = layer.cell
        w = gate_blocks(
            cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), 4
        )
        outputs, finals = run(
            functools.partial(lstm_step, w), x, zeros, mask=mask, go_backwards=layer.go_backwards
        )
        if layer.go_backwards:
            outputs = outputs[:, ::-1]
        sequences.append(np.where(mask[:, :, None], outputs, 0.0))
        states.extend(finals)
    return [np.concatenate(sequences, -1), *states]


def operators(path):
    return sum(kerasrnn.count_litert_operators(path)["serving_default"].values())


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_paired_directions_give_the_equations_answers(tmp_path, kind):
    from ai_edge_litert.interpreter import Interpreter

    model = model_of(kind)
    path = kerasrnn.export_litert(model, tmp_path / "model.tflite", sequence_length=IDS.shape[1])
    answers = list(Interpreter(str(path)).get_signature_runner()(ids=IDS).values())
    expected = reference(model, IDS)
    # The outputs are named by position (`output_0`, ...): one per tensor.
    assert len(answers) == len(expected)
    for answer, want in zip(answers, expected):
        np.testing.assert_allclose(answer, want, atol=1e-5)


@pytest.mark.slow
def test_a_step_of_both_directions_costs_fewer_operators_than_two(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    counts = {}
    for steps in (4, 8):
        for name, factory in {
            "paired": lambda: keras.layers.Bidirectional(LAYERS["kerasrnn"](return_sequences=True)),
            "one_direction": lambda: LAYERS["kerasrnn"](return_sequences=True),
        }.items():
            ids = keras.Input((steps,), dtype="int32", name="ids")
            embedded = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(ids)
            model = keras.Model(ids, factory()(embedded))
            target = tmp_path / f"{name}{steps}.tflite"
            path = kerasrnn.export_litert(model, target, sequence_length=steps)
            counts[name, steps] = operators(path)
            batch = np.array([[1] * steps, [2] * (steps - 1) + [0]], "int32")
            answer = Interpreter(str(path)).get_signature_runner()(ids=batch)
            np.testing.assert_allclose(
                next(iter(answer.values())), model.predict(batch, verbose=0), atol=1e-5
            )
    per_step = {
        name: (counts[name, 8] - counts[name, 4]) / 4 for name in ("paired", "one_direction")
    }
    # Both directions in one step cost fewer operators than two directions'
    # steps do on their own, and one more than a single direction's.
    assert per_step["paired"] < 2 * per_step["one_direction"]
    assert per_step["paired"] <= 17


@pytest.mark.slow
def test_an_initial_state_keeps_each_direction_in_its_own_loop(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    steps = 4
    x = keras.Input((steps, FEATURES), name="x")
    flat = keras.layers.Flatten()(x)
    starts = [keras.layers.Dense(UNITS, name=f"start_{index}")(flat) for index in range(4)]
    outputs = keras.layers.Bidirectional(LAYERS["keras"](return_sequences=True))(
        x, initial_state=starts
    )
    model = keras.Model(x, outputs)
    rng = np.random.default_rng(1)
    for weight in model.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape).astype("float32"))
    inputs = rng.normal(size=(2, steps, FEATURES)).astype("float32")
    path = kerasrnn.export_litert(model, tmp_path / "model.tflite", sequence_length=steps)
    (answer,) = Interpreter(str(path)).get_signature_runner()(x=inputs).values()
    np.testing.assert_allclose(answer, model.predict(inputs, verbose=0), atol=1e-5)
