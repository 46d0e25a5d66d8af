"""`--ensemble N` and `--right-to-left M`: the seq2seq tasks train the
members side by side, resume them after a kill, decode with their mixture
(rescored by the right-to-left members) and serve it."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasrnn import seq2seq
from kerasrnn_pipelines import encoder_decoder
from kerasrnn_pipelines.cli import main
from kerasrnn_pipelines.run_directory import claim_run_directory
from kerasrnn_pipelines.tasks.options.g2p_config import G2PConfig
from kerasrnn_pipelines.training import RunContext
from tests.pipelines.interruptions import KillAtEpochBegin, Killed


def test_one_member_is_a_plain_model_and_more_are_an_ensemble_of_different_members():
    letters, phonemes = seq2seq.Vocabulary(list("abc")), seq2seq.Vocabulary(["X", "Y"])
    single = encoder_decoder.build_model(G2PConfig(units=4, embedding=3), letters, phonemes)
    assert isinstance(single, seq2seq.Seq2Seq)
    ensemble = encoder_decoder.build_model(
        G2PConfig(units=4, embedding=3, ensemble=3), letters, phonemes
    )
    assert isinstance(ensemble, seq2seq.Seq2SeqEnsemble) and len(ensemble.members) == 3
    assert ensemble.count_params() == 3 * single.count_params()
    first, second, _ = (member.get_weights()[0] for member in ensemble.members)
    assert not np.allclose(first, second)  # each member draws its own weights
    rescored = encoder_decoder.build_model(
        G2PConfig(units=4, embedding=3, ensemble=2, right_to_left=1), letters, phonemes
    )
    assert [member.target_order for member in rescored.members] == [
        "left_to_right", "left_to_right", "right_to_left"
    ]
    assert rescored.rescorers() == [rescored.members[2]]


@pytest.mark.parametrize(
    "option, value",
    [("--ensemble", "0"), ("--ensemble", "-1"), ("--ensemble", "2.5"),
     ("--ensemble", "two"), ("--right-to-left", "-1"), ("--right-to-left", "0.5")],
)
def test_a_bad_member_count_is_one_line_and_exit_2(option, value, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["g2p", "--quick", option, value])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and option in error[0] and value in error[0]


@pytest.mark.slow
def test_a_killed_ensemble_run_resumes_to_the_same_weights(tmp_path):
    config = G2PConfig(units=6, embedding=4, ensemble=2, epochs=3, learning_rate=0.02)
    letters, phonemes = seq2seq.Vocabulary(list("abcd")), seq2seq.Vocabulary(["X", "Y", "Z"])
    rng = np.random.default_rng(4)
    sources = rng.integers(4, letters.size, (24, 5))
    targets = np.concatenate([rng.integers(4, phonemes.size, (24, 3)), np.full((24, 1), 2)], 1)
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets)).batch(8).map(
        seq2seq.teacher_forcing_pair
    )

    def trained(directory, callbacks=()):
        keras.utils.set_random_seed(3)
        context = RunContext(config, tf.distribute.get_strategy(), directory)
        with context.scope():
            model = encoder_decoder.build_model(config, letters, phonemes)
            context.compile(model, seq2seq.SequenceCrossEntropy())
        context.fit(model, dataset, callbacks=callbacks)
        return model

    def claim(path):
        return claim_run_directory(path, "test", {}, restart=False, overwrite=False)

    uninterrupted = trained(claim(tmp_path / "whole")).get_weights()
    killed = claim(tmp_path / "killed")
    with pytest.raises(Killed):
        trained(killed, [KillAtEpochBegin(2)])
    resumed = trained(killed)  # a new process: fresh model, same configuration
    for weights, expected in zip(resumed.get_weights(), uninterrupted):
        np.testing.assert_allclose(weights, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize(
    "options, orders",
    [
        (["--ensemble", "2"], ["left_to_right", "left_to_right"]),
        (["--right-to-left", "1"], ["left_to_right", "right_to_left"]),
    ],
)
def test_an_ensemble_g2p_run_decodes_and_serves_its_mixture(tmp_path, options, orders):
    out = tmp_path / "run"
    assert main(["g2p", "--quick", *options, "--epochs", "1", "--limit", "600",
                 "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    model = keras.models.load_model(out / "model.keras")
    assert isinstance(model, seq2seq.Seq2SeqEnsemble)
    assert [member.target_order for member in model.members] == orders
    assert len(model.rescorers()) == orders.count("right_to_left")
    assert model.rescoring_weight == (
        encoder_decoder.RESCORING_WEIGHT if model.rescorers() else None
    )
    assert metrics["parameters"] == 2 * model.members[0].count_params()
    assert 0 <= metrics["test_per"]
    assert (out / "alignments.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    served = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"](
        texts=tf.constant(["hello"])
    )
    # The SavedModel answers as the run's own beam search (and rescoring).
    assert served["outputs"].numpy()[0].decode() == metrics["examples"]["hello"]
