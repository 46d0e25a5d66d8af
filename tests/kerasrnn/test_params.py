"""Parameter accounting against the lecture notes' worked examples and formulas."""

import io

import keras
import pytest

import kerasrnn


def lecture_model(rnn):
    """Slides 27–28: RNN 50 (d=1, sequences) → Dropout → RNN 100 → Dropout → Dense 1."""
    return keras.Sequential(
        [
            keras.Input((None, 1)),
            rnn(50, return_sequences=True),
            keras.layers.Dropout(0.2),
            rnn(100),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(1),
        ]
    )


def exam_model(rnn):
    """Exam question 1: RNN 64 (d=8, sequences) → RNN 32 → Dense 10 softmax."""
    return keras.Sequential(
        [
            keras.Input((None, 8)),
            rnn(64, return_sequences=True),
            rnn(32),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )


def ours(units, **kwargs):
    return keras.layers.RNN(kerasrnn.ElmanCell(units), **kwargs)


def builtin(units, **kwargs):
    return keras.layers.SimpleRNN(units, **kwargs)


def summary_text(model):
    lines = []
    model.summary(print_fn=lambda line, **_: lines.append(line))
    return "\n".join(lines)


WORKED = [
    (lecture_model, [2600, 15100, 101], 17801),
    (exam_model, [4672, 3104, 330], 8106),
]


@pytest.mark.parametrize("rnn", [ours, builtin], ids=["kerasrnn", "keras"])
@pytest.mark.parametrize("build,per_layer,total", WORKED, ids=["lecture", "exam"])
def test_worked_examples_in_explain_params_and_summary(build, per_layer, total, rnn):
    model = build(rnn)
    printed = io.StringIO()
    report = kerasrnn.explain_params(model, print_fn=lambda t: printed.write(t))
    assert [layer.total for layer in report.layers] == per_layer
    assert report.total == total and report.agrees
    for layer in report.layers:
        assert sum(count for _, count in layer.parts) == layer.total
    summary = summary_text(model)
    for count in per_layer + [total]:
        assert f"{count:,}" in summary
    assert f"Total parameters in network: {total:,}" in printed.getvalue()


def test_breakdown_reads_like_the_lecture_notes():
    report = kerasrnn.explain_params(lecture_model(ours), print_fn=None)
    text = str(report)
    assert "input weights d×n = 1×50 = 50" in text
    assert "recurrent weights n×n = 50×50 = 2,500" in text
    assert "biases n = 50" in text
    assert "n(d + n + 1) = 2,600 parameters (count_params() = 2,600: agrees)" in text
    assert "input weights d×n = 50×100 = 5,000" in text
    assert "(N_in + 1)×N_out = 101" in text


# (cell, d, closed form written out by hand from the lecture notes' formulas)
FORMULAS = [
    (lambda: kerasrnn.ElmanCell(7), 3, 7 * (3 + 7 + 1)),
    (lambda: kerasrnn.ElmanCell(7, use_bias=False), 3, 7 * (3 + 7)),
    (lambda: kerasrnn.LeakyCell(7), 3, 7 * (3 + 7 + 1)),
    (lambda: kerasrnn.LeakyCell(7, learn_alpha=True), 3, 7 * (3 + 7 + 1) + 7),
    (lambda: kerasrnn.LeakyCell(7, learn_alpha=True, use_bias=False), 3, 7 * (3 + 7) + 7),
    (lambda: kerasrnn.LSTMCell(6), 5, 4 * 6 * (5 + 6 + 1)),
    (lambda: kerasrnn.LSTMCell(6, use_bias=False), 5, 4 * 6 * (5 + 6)),
    (lambda: kerasrnn.GRUCell(6), 5, 3 * 6 * (5 + 6 + 1)),
    (lambda: kerasrnn.GRUCell(6, reset_after=True), 5, 3 * 6 * (5 + 6 + 2)),
    (lambda: kerasrnn.GRUCell(6, reset_after=True, use_bias=False), 5, 3 * 6 * (5 + 6)),
    (lambda: keras.layers.SimpleRNNCell(7), 3, 7 * (3 + 7 + 1)),
    (lambda: keras.layers.LSTMCell(6), 5, 4 * 6 * (5 + 6 + 1)),
    (lambda: keras.layers.GRUCell(6), 5, 3 * 6 * (5 + 6 + 2)),
    (lambda: keras.layers.GRUCell(6, reset_after=False), 5, 3 * 6 * (5 + 6 + 1)),
]


@pytest.mark.parametrize("make,d,want", FORMULAS)
def test_closed_forms_equal_formula_and_keras_count(make, d, want):
    cell = make()
    assert kerasrnn.param_count(cell, d) == want
    layer = keras.layers.RNN(cell)
    layer.build((None, None, d))
    assert layer.count_params() == want


def test_bidirectional_stacked_and_embedding_breakdown():
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(30, 8),
            keras.layers.Bidirectional(
                keras.layers.RNN(kerasrnn.LSTMCell(16), return_sequences=True)
            ),
            keras.layers.RNN(
                keras.layers.StackedRNNCells(
                    [kerasrnn.GRUCell(12, reset_after=True), keras.layers.LSTMCell(4)]
                )
            ),
            keras.layers.LayerNormalization(),
            keras.layers.Dense(3),
        ]
    )
    report = kerasrnn.explain_params(model, print_fn=None)
    totals = [layer.total for layer in report.layers]
    assert totals == [
        30 * 8,
        2 * 4 * 16 * (8 + 16 + 1),
        3 * 12 * (32 + 12 + 2) + 4 * 4 * (12 + 4 + 1),
        2 * 4,
        (4 + 1) * 3,
    ]
    assert report.agrees and report.total == model.count_params()
    assert "forward input weights d×4n = 8×4×16 = 512" in str(report)
    assert "cell 2 recurrent weights n×4n = 4×4×4 = 64" in str(report)


def test_bad_input():
    with pytest.raises(ValueError, match=r"`input_dim`.*Received: input_dim=0"):
        kerasrnn.param_count(kerasrnn.LSTMCell(3), 0)
    with pytest.raises(ValueError, match=r"`cell`.*Dense"):
        kerasrnn.param_count(keras.layers.Dense(3), 4)
    with pytest.raises(ValueError, match=r"`model` must be a keras.Model"):
        kerasrnn.explain_params(keras.layers.Dense(3))
    unbuilt = keras.Sequential([keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="not built"):
        kerasrnn.explain_params(unbuilt)


def test_deeper_cells_list_their_extra_weights():
    d = 3
    model = keras.Sequential(
        [
            keras.Input((None, d)),
            keras.layers.RNN(kerasrnn.TemporalSkipCell(4, delay=3), return_sequences=True),
            keras.layers.RNN(
                kerasrnn.DeepTransitionCell(5, transition_units=(6,)), return_sequences=True
            ),
            keras.layers.RNN(
                kerasrnn.SkipStackedCells([kerasrnn.ElmanCell(2), kerasrnn.LSTMCell(3)])
            ),
        ]
    )
    report = kerasrnn.explain_params(model, print_fn=None)
    assert report.agrees
    skip, deep, stacked = report.layers
    # Skip cell: n(d + n + 1) + n·n for the delay-d kernel.
    assert skip.total == 4 * (3 + 4 + 1) + 4 * 4
    assert ("skip_kernel 4×4", 16) in skip.parts
    assert any(label.startswith("transition_kernel_1") for label, _ in deep.parts)
    # Stacked with input skips, reading the 5 features of the layer below:
    # layer 1 has d = 5, layer 2 reads [x ; o¹], d = 5 + 2.
    assert stacked.total == 2 * (5 + 2 + 1) + 4 * 3 * (5 + 2 + 3 + 1)
    assert kerasrnn.param_count(model.layers[2].cell, 5) == stacked.total
