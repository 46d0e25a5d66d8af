"""Every cell against the NumPy loop of its seed equations, through keras.layers.RNN.

Covers the whole keras.layers.RNN surface a Keras user expects: masks
(padding and masked steps in the middle), return_sequences, return_state,
go_backwards, stateful, unroll, explicit initial states, Bidirectional with
every merge mode, StackedRNNCells, dropout only when training, mixed
precision and jit_compile.
"""

import itertools

import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import keras
import numpy as np
import pytest

from tests.kerasrnn import numpy_reference as ref
from tests.kerasrnn.cells.harness import (
    SPEC_IDS,
    SPECS,
    randomize,
    reference_step,
    zero_states,
)

B, T, D, N = 3, 6, 4, 5
ATOL = 2e-5


def built_rnn(spec, rng, units=N, d=D, cell_kwargs=None, **rnn_kwargs):
    cell = spec.make(units, **(cell_kwargs or {}))
    layer = keras.layers.RNN(cell, **rnn_kwargs)
    batch = B if rnn_kwargs.get("stateful") else None
    layer.build((batch, None, d))
    randomize(cell, rng)
    return layer, cell


def assert_matches(result, want_outputs, want_states):
    """Compare an RNN's (outputs, *states) with the reference run."""
    outputs, *states = (np.asarray(r) for r in result)
    np.testing.assert_allclose(outputs, want_outputs, atol=ATOL)
    assert len(states) == len(want_states)
    for got, want in zip(states, want_states):
        np.testing.assert_allclose(got, want, atol=ATOL)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_sequence_and_final_state_match_the_seed_equations(spec, rng):
    layer, cell = built_rnn(
        spec, rng, return_sequences=True, return_state=True
    )
    xs = rng.normal(size=(B, T, D)).astype("float32")
    want_outputs, want_states = ref.run(
        reference_step(spec, cell), xs, zero_states(spec, B, N)
    )
    assert_matches(layer(xs), want_outputs, want_states)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_masks_skip_padding_and_mid_sequence_steps(spec, rng):
    layer, cell = built_rnn(
        spec, rng, return_sequences=True, return_state=True
    )
    xs = rng.normal(size=(B, T, D)).astype("float32")
    mask = np.ones((B, T), bool)
    mask[0, 4:] = False  # trailing padding
    mask[1, 2] = False  # a masked step in the middle
    mask[2, :2] = False  # leading padding
    want_outputs, want_states = ref.run(
        reference_step(spec, cell), xs, zero_states(spec, B, N), mask=mask
    )
    assert_matches(layer(xs, mask=mask), want_outputs, want_states)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_go_backwards_and_explicit_initial_state(spec, rng):
    layer, cell = built_rnn(
        spec, rng, return_sequences=True, return_state=True, go_backwards=True
    )
    xs = rng.normal(size=(B, T, D)).astype("float32")
    initial = [rng.normal(size=(B, N)).astype("float32") for _ in range(spec.states)]
    want_outputs, want_states = ref.run(
        reference_step(spec, cell), xs, initial, go_backwards=True
    )
    assert_matches(layer(xs, initial_state=initial), want_outputs, want_states)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_unroll_equals_the_loop(spec, rng):
    layer, cell = built_rnn(spec, rng, return_sequences=True, unroll=True)
    xs = rng.normal(size=(B, T, D)).astype("float32")
    want, _ = ref.run(reference_step(spec, cell), xs, zero_states(spec, B, N))
    np.testing.assert_allclose(np.asarray(layer(xs)), want, atol=ATOL)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_stateful_carries_state_across_calls_until_reset(spec, rng):
    layer, cell = built_rnn(spec, rng, return_sequences=True, stateful=True)
    xs = rng.normal(size=(B, 2 * T, D)).astype("float32")
    first = np.asarray(layer(xs[:, :T]))
    second = np.asarray(layer(xs[:, T:]))
    want, _ = ref.run(reference_step(spec, cell), xs, zero_states(spec, B, N))
    np.testing.assert_allclose(
        np.concatenate([first, second], axis=1), want, atol=ATOL
    )
    layer.reset_state()
    np.testing.assert_allclose(np.asarray(layer(xs[:, :T])), first, atol=ATOL)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
@pytest.mark.parametrize(
    "spec", [s for s in SPECS if s.id in ("elman", "lstm", "gru")], ids=lambda spec: spec.id
)
def test_bidirectional_every_merge_mode(spec, merge_mode, rng):
    layer = keras.layers.Bidirectional(
        keras.layers.RNN(spec.make(N), return_sequences=True),
        merge_mode=merge_mode,
    )
    layer.build((None, None, D))
    cells = [layer.forward_layer.cell, layer.backward_layer.cell]
    for cell in cells:
        randomize(cell, rng)
    xs = rng.normal(size=(B, T, D)).astype("float32")
    mask = np.ones((B, T), bool)
    mask[0, 3:] = False
    forward, _ = ref.run(
        reference_step(spec, cells[0]), xs, zero_states(spec, B, N), mask=mask
    )
    backward, _ = ref.run(
        reference_step(spec, cells[1]),
        xs,
        zero_states(spec, B, N),
        mask=mask,
        go_backwards=True,
    )
    backward = backward[:, ::-1]  # back into input time order
    got = layer(xs, mask=mask)
    want = {
        "concat": lambda: np.concatenate([forward, backward], axis=-1),
        "sum": lambda: forward + backward,
        "mul": lambda: forward * backward,
        "ave": lambda: (forward + backward) / 2,
        None: lambda: [forward, backward],
    }[merge_mode]()
    if merge_mode is None:
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[mask], w[mask], atol=ATOL)
    else:
        np.testing.assert_allclose(np.asarray(got)[mask], want[mask], atol=ATOL)


def test_stacked_cells_feed_each_other(rng):
    specs = [s for s in SPECS if s.id in ("elman", "lstm", "gru-reset-after")]
    units = [4, 3, 5]
    cells = [spec.make(n) for spec, n in zip(specs, units)]
    layer = keras.layers.RNN(
        keras.layers.StackedRNNCells(cells), return_sequences=True
    )
    layer.build((None, None, D))
    for cell in cells:
        randomize(cell, rng)
    xs = rng.normal(size=(B, T, D)).astype("float32")
    want = xs
    for spec, cell, n in zip(specs, cells, units):
        want, _ = ref.run(reference_step(spec, cell), want, zero_states(spec, B, n))
    np.testing.assert_allclose(np.asarray(layer(xs)), want, atol=ATOL)


@pytest.mark.slow
@hypothesis.settings(max_examples=12, deadline=None, derandomize=True)
@hypothesis.given(
    spec=st.sampled_from(SPECS),
    batch=st.integers(1, 3),
    steps=st.integers(1, 5),
    units=st.integers(1, 4),
    d=st.integers(1, 3),
    data=st.data(),
)
def test_property_any_shape_and_mask(spec, batch, steps, units, d, data):
    rng = np.random.default_rng(batch * 1000 + steps * 100 + units * 10 + d)
    layer, cell = built_rnn(
        spec, rng, units=units, d=d, return_sequences=True, return_state=True
    )
    xs = rng.normal(size=(batch, steps, d)).astype("float32")
    mask = data.draw(hnp.arrays(bool, (batch, steps)), label="mask")
    want_outputs, want_states = ref.run(
        reference_step(spec, cell), xs, zero_states(spec, batch, units), mask=mask
    )
    assert_matches(layer(xs, mask=mask), want_outputs, want_states)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_dropout_only_when_training_with_one_mask_per_sequence(spec, rng):
    """With dropout, the training output is the reference run on x ⊙ m_x and
    with h_{t-1} ⊙ m_h entering the projections, for one pair of masks per
    sequence (every step); the search over all masks finds that pair."""
    d, n, rate = 3, 3, 0.5
    layer, cell = built_rnn(
        spec,
        rng,
        units=n,
        d=d,
        cell_kwargs={"dropout": rate, "recurrent_dropout": rate, "seed": 7},
        return_sequences=True,
    )
    xs = rng.normal(size=(2, 4, d)).astype("float32")
    plain, _ = ref.run(reference_step(spec, cell), xs, zero_states(spec, 2, n))
    np.testing.assert_allclose(np.asarray(layer(xs)), plain, atol=ATOL)
    np.testing.assert_allclose(
        np.asarray(layer(xs, training=False)), plain, atol=ATOL
    )

    trained = np.asarray(layer(xs, training=True))
    assert not np.allclose(trained, plain, atol=1e-3)
    keep = 1.0 / (1.0 - rate)
    candidates = [np.array(m) * keep for m in itertools.product([0, 1], repeat=n)]
    for b in range(2):
        found = False
        for m_x, m_h in itertools.product(candidates, candidates):
            want, _ = ref.run(
                _dropped(spec, cell, m_x, m_h),
                xs[b : b + 1],
                zero_states(spec, 1, n),
            )
            if np.allclose(trained[b : b + 1], want, atol=1e-4):
                found = True
                break
        assert found, f"no constant dropout mask pair explains example {b}"


def _dropped(spec, cell, m_x, m_h):
    """The reference step with fixed input and recurrent dropout masks.

    The recurrent mask acts on h_{t-1} only where it enters a projection
    (U_k (m_h ⊙ h) = (U_k diag m_h) h, and for the textbook GRU
    U_h (r ⊙ m_h ⊙ h) likewise); the carried state — the leak, the LSTM
    cell, the GRU interpolation — stays undropped.
    """
    blocks = [
        (W, U @ np.diag(m_h), b)
        for W, U, b in ref.gate_blocks(
            np.asarray(cell.kernel, np.float64),
            np.asarray(cell.recurrent_kernel, np.float64),
            None if cell.bias is None else np.asarray(cell.bias, np.float64),
            spec.gates,
        )
    ]
    if getattr(cell, "learn_alpha", False):
        alpha = np.asarray(cell.alpha_weight, np.float64)
        return lambda x, s: ref.leaky_step(blocks, x * m_x, s, alpha)
    return lambda x, s: spec.step(blocks, x * m_x, s)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("spec", SPECS[::2], ids=SPEC_IDS[::2])
def test_mixed_precision_policies(spec, policy, rng):
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        layer, cell = built_rnn(spec, rng, return_sequences=True)
        assert cell.kernel.dtype == "float32"
        xs = rng.normal(size=(B, T, D)).astype("float32")
        got = layer(xs)
        assert got.dtype == policy.split("_")[1]
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    want, _ = ref.run(reference_step(spec, cell), xs, zero_states(spec, B, N))
    tolerance = 2e-2 if policy == "mixed_float16" else 8e-2
    np.testing.assert_allclose(np.asarray(got, np.float32), want, atol=tolerance)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_jit_compile_predict_and_train(spec, rng):
    inputs = keras.Input((T, D))
    cell = spec.make(N)
    outputs = keras.layers.RNN(cell, return_sequences=True)(inputs)
    model = keras.Model(inputs, outputs)
    randomize(cell, rng)
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    xs = rng.normal(size=(B, T, D)).astype("float32")
    want, _ = ref.run(reference_step(spec, cell), xs, zero_states(spec, B, N))
    np.testing.assert_allclose(model.predict(xs, verbose=0), want, atol=ATOL)
    before = np.asarray(cell.kernel).copy()
    history = model.fit(xs, np.zeros((B, T, N)), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.allclose(np.asarray(cell.kernel), before)
