"""The LiteRT export of encoder–decoders, run as the example client runs it,
in a process that can import neither TensorFlow nor Keras: its answers against `beam_search_decode`
on small trained models, its contract read back from the file, and the
arguments it refuses."""

import dataclasses
import functools
import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.lite.python import schema_py_generated as schema

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.export.converter import count_litert_loop_operators, count_litert_operators
from kerasrnn.export.seq2seq_litert import (
    MAX_LITERT_UNROLLED_LENGTH,
    check_unrollable,
    looped_beam_search,
)
from tests.isolated import CLIENT_WITHOUT, last_json, run_without
from tests.kerasrnn.seq2seq.sharpened import scaled_outputs

CLIENT = pathlib.Path(__file__).resolve().parents[3] / "examples" / "g2p_litert.py"

LETTERS = list("abcdef")
PHONES = ["AA", "B", "K", "D", "EH", "F"]
SOURCE_LENGTH, TARGET_LENGTH = 7, 8
# A bucket for sources of at most 4 letters, decoding at most 6 phonemes.
BUCKET = (4, 6)
RUNNER = """
import importlib.util
import json
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter

# The example client's `Signatures`: LiteRT's `CompiledModel`, as served.
spec = importlib.util.spec_from_file_location("client", sys.argv[2])
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)

jobs, report = json.load(open(sys.argv[1])), {}
for name, job in jobs.items():
    interpreter = Interpreter(job["file"])
    compiled = client.Signatures(job["file"])
    contract = {}
    for key in interpreter.get_signature_list():
        runner = interpreter.get_signature_runner(key)
        contract[key] = {
            side: {
                tensor: [np.dtype(detail["dtype"]).name, detail["shape_signature"].tolist()]
                for tensor, detail in details.items()
            }
            for side, details in (
                ("inputs", runner.get_input_details()),
                ("outputs", runner.get_output_details()),
            )
        }
        source_ids = np.load(job["inputs"][key])
        batched = runner(source_ids=source_ids)
        # The runner resizes the batch dimension to each call's rows.
        one_by_one = [runner(source_ids=row[None]) for row in source_ids]
        # The compiled model too, from the batch to one row and back.
        compiled_ids = [
            compiled.target_ids(key, source_ids),
            np.concatenate([compiled.target_ids(key, row[None]) for row in source_ids]),
            compiled.target_ids(key, source_ids),
        ]
        np.savez(
            job["outputs"][key],
            **batched,
            **{
                "single_" + output: np.concatenate([single[output] for single in one_by_one])
                for output in batched
            },
            compiled_target_ids=np.stack(compiled_ids),
        )
    report[name] = contract
print(json.dumps(report))
"""


def reversal_batches(rng, count):
    """Sources of 1–5 letters; targets their phonemes in reverse order."""
    sources = np.zeros((count, SOURCE_LENGTH), np.int32)
    targets = np.zeros((count, TARGET_LENGTH - 1), np.int32)
    for row in range(count):
        letters = rng.integers(0, len(LETTERS), rng.integers(1, 6))
        sources[row, : len(letters)] = letters + seq2seq.UNKNOWN_ID + 1
        targets[row, : len(letters)] = letters[::-1] + seq2seq.UNKNOWN_ID + 1
    return seq2seq.teacher_forcing_pair(sources, targets)


def trained(model, seed):
    """`model` after a few seconds of training on the reversal task, so that
    its hypotheses are not near ties."""
    keras.utils.set_random_seed(seed)
    model.compile(keras.optimizers.Adam(0.03), seq2seq.SequenceCrossEntropy())
    inputs, labels = reversal_batches(np.random.default_rng(seed), 1024)
    model.fit(inputs, labels, batch_size=64, epochs=10, verbose=0)
    return model


def member(attention, cell=kerasrnn.LSTMCell, **options):
    return seq2seq.Seq2Seq(
        len(LETTERS) + 4,
        len(PHONES) + 4,
        cell(8),
        embedding_dim=6,
        attention=attention,
        **options,
    )


#: name -> (model, export options). Between them: both attentions, Luong
#: with input feeding, a length penalty, a model without attention that
#: reads right to left, an ensemble rescored by a right-to-left member, a
#: source bucket and a quantized file; the ensemble's members carry input
#: and recurrent dropout (inactive in the file, as in the decoders), one
#: of them over two encoder layers.
def models():
    keras.utils.set_random_seed(3)
    return {
        "bahdanau": (
            trained(member("bahdanau", bidirectional=True), 1),
            {"beam_width": 3, "buckets": [BUCKET]},
        ),
        "luong": (
            trained(member("luong", kerasrnn.GRUCell, input_feeding=True), 2),
            {"beam_width": 2, "length_penalty": 0.8},
        ),
        "right_to_left": (
            trained(
                member(None, bidirectional=True, context="both", target_order="right_to_left"),
                3,
            ),
            {"beam_width": 3},
        ),
        "ensemble": (
            trained(
                seq2seq.Seq2SeqEnsemble(
                    [
                        member(
                            "luong",
                            functools.partial(kerasrnn.LSTMCell, dropout=0.3, seed=5),
                            bidirectional=True,
                            input_feeding=False,
                        ),
                        member(
                            "bahdanau",
                            functools.partial(kerasrnn.GRUCell, recurrent_dropout=0.3, seed=6),
                            target_order="right_to_left",
                            encoder_layers=2,
                        ),
                    ],
                    rescoring_weight=0.5,
                ),
                4,
            ),
            {"beam_width": 3},
        ),
    }


def source_rows():
    """Rows of every length from empty to full, then rows with ids outside
    the vocabulary (negative, and past its end)."""
    rng = np.random.default_rng(7)
    rows = np.zeros((12, SOURCE_LENGTH), np.int32)
    for row, length in enumerate([0, 1, 2, 3, 4, 5, 6, 7, 3, 4]):
        rows[row, :length] = rng.integers(4, len(LETTERS) + 4, length)
    rows[10, :4] = [5, -3, 7, 1000]
    rows[11, :7] = [2**31 - 1, 4, 9, -(2**31), 6, 10, 11]
    return rows


def in_vocabulary(rows):
    """What the file reads: ids outside [0, V) as UNKNOWN_ID."""
    size = len(LETTERS) + 4
    return np.where((rows >= 0) & (rows < size), rows, seq2seq.UNKNOWN_ID)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every model of `models()` exported (the luong one also quantized) and
    run on `source_rows()` by `RUNNER` in one clean process."""
    directory = tmp_path_factory.mktemp("litert")
    source, target = seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)
    sources = source_rows()
    np.save(directory / "sources.npy", sources)
    np.save(directory / "short.npy", sources[:, : BUCKET[0]])
    built = models()
    jobs, vocabularies = {}, {}
    exports = {name: (model, options, None) for name, (model, options) in built.items()}
    exports["luong_int8"] = (built["luong"][0], built["luong"][1], "dynamic_int8")
    luong, options = built["luong"]
    exports["luong_without_alignments"] = (luong, {**options, "alignments": False}, None)
    for name, (model, options, quantize) in exports.items():
        (directory / name).mkdir()
        path = directory / name / "model.tflite"
        vocabularies[name] = seq2seq.export_litert(
            model,
            path,
            source,
            target,
            max_source_length=SOURCE_LENGTH,
            max_target_length=TARGET_LENGTH,
            quantize=quantize,
            **options,
        )
        inputs = {"serving_default": str(directory / "sources.npy")}
        if "buckets" in options:
            inputs["source_4"] = str(directory / "short.npy")
        jobs[name] = {
            "file": str(path),
            "inputs": inputs,
            "outputs": {key: str(directory / name / f"{key}.npz") for key in inputs},
        }
    (directory / "jobs.json").write_text(json.dumps(jobs))
    contracts = last_json(
        run_without(CLIENT_WITHOUT, RUNNER, directory / "jobs.json", CLIENT)
    )
    outputs = {
        name: {key: dict(np.load(path)) for key, path in job["outputs"].items()}
        for name, job in jobs.items()
    }
    return built, directory, vocabularies, contracts, outputs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bahdanau", "luong", "right_to_left", "ensemble"])
def test_best_hypothesis_is_beam_search_decode(exported, name):
    built, _, _, _, outputs = exported
    model, options = built[name]
    result = seq2seq.beam_search_decode(
        model,
        in_vocabulary(source_rows()),
        options["beam_width"],
        TARGET_LENGTH,
        options.get("length_penalty", 0.0),
        return_alignments=model.has_attention,
    )
    served = outputs[name]["serving_default"]
    np.testing.assert_array_equal(served["target_ids"], result.sequences[:, 0])
    np.testing.assert_allclose(served["scores"], result.scores[:, 0], atol=1e-4)
    if model.has_attention:
        np.testing.assert_allclose(served["alignments"], result.alignments[:, 0], atol=1e-5)
    else:
        assert "alignments" not in served
    # Batch 1, resized row by row, answers as the batch did; so does the
    # compiled model, resized from the batch to one row and back.
    for output in ("target_ids", "scores"):
        np.testing.assert_allclose(served["single_" + output], served[output], atol=1e-5)
    for compiled in served["compiled_target_ids"]:
        np.testing.assert_array_equal(compiled, served["target_ids"])


@pytest.mark.slow
def test_trained_models_answer_the_task(exported):
    """The comparisons above are between trained models, not near ties: most
    reversals of the lengths trained on (1 to 5 letters) come out right."""
    _, _, _, _, outputs = exported
    rows = [1, 2, 3, 4, 5, 8, 9]
    sources = source_rows()[rows]
    expected = np.zeros((len(rows), TARGET_LENGTH), np.int32)
    for row, letters in enumerate(sources):
        letters = letters[letters > 0]
        expected[row, : len(letters)] = letters[::-1]
        expected[row, len(letters)] = seq2seq.END_ID
    for name in ("bahdanau", "luong", "ensemble"):
        answers = outputs[name]["serving_default"]["target_ids"][rows]
        assert (answers == expected).all(axis=1).mean() >= 0.7, name


@pytest.mark.slow
def test_bucket_signature_is_beam_search_decode_at_its_lengths(exported):
    built, _, _, _, outputs = exported
    model, options = built["bahdanau"]
    short = in_vocabulary(source_rows()[:, : BUCKET[0]])
    result = seq2seq.beam_search_decode(
        model, short, options["beam_width"], BUCKET[1], return_alignments=True
    )
    served = outputs["bahdanau"]["source_4"]
    np.testing.assert_array_equal(served["target_ids"], result.sequences[:, 0])
    np.testing.assert_allclose(served["scores"], result.scores[:, 0], atol=1e-4)
    np.testing.assert_allclose(served["alignments"], result.alignments[:, 0], atol=1e-5)


@pytest.mark.slow
def test_out_of_vocabulary_ids_read_as_unknown(exported):
    _, _, _, _, outputs = exported
    served = outputs["bahdanau"]["serving_default"]
    sources = source_rows()
    # Rows 10 and 11 hold ids outside the vocabulary; rows 8 and 9 do not.
    assert not (in_vocabulary(sources[8:10]) != sources[8:10]).any()
    assert (in_vocabulary(sources[10:]) != sources[10:]).any()
    assert np.isfinite(served["scores"]).all()
    assert ((served["target_ids"] >= 0) & (served["target_ids"] < len(PHONES) + 4)).all()


@pytest.mark.slow
def test_contract_read_back_from_the_file(exported):
    built, _, _, contracts, _ = exported
    for name, contract in contracts.items():
        model = built[name.removesuffix("_int8").removesuffix("_without_alignments")][0]
        outputs = {
            "target_ids": ["int32", [-1, TARGET_LENGTH]],
            "scores": ["float32", [-1]],
        }
        if model.has_attention and not name.endswith("_without_alignments"):
            outputs["alignments"] = ["float32", [-1, TARGET_LENGTH, SOURCE_LENGTH]]
        assert contract["serving_default"] == {
            "inputs": {"source_ids": ["int32", [-1, SOURCE_LENGTH]]},
            "outputs": outputs,
        }, name
    assert contracts["bahdanau"]["source_4"]["inputs"] == {"source_ids": ["int32", [-1, BUCKET[0]]]}
    assert set(contracts["bahdanau"]) == {"serving_default", "source_4"}


@pytest.mark.slow
def test_vocabulary_json_says_how_text_becomes_ids(exported):
    _, directory, vocabularies, _, _ = exported
    written = json.loads((directory / "bahdanau" / "vocabulary.json").read_text())
    assert written == vocabularies["bahdanau"]
    assert written["source_tokens"] == ["<pad>", "<start>", "<end>", "<unk>", *LETTERS]
    assert written["target_tokens"] == ["<pad>", "<start>", "<end>", "<unk>", *PHONES]
    assert [written[key] for key in ("pad_id", "start_id", "end_id", "unknown_id")] == [0, 1, 2, 3]
    assert written["max_source_length"] == SOURCE_LENGTH
    assert written["max_target_length"] == TARGET_LENGTH
    assert written["signature"] == "serving_default"
    assert written["buckets"] == [
        {"signature": "source_4", "max_source_length": 4, "max_target_length": 6},
        {"signature": "serving_default", "max_source_length": 7, "max_target_length": 8},
    ]
    assert written["beam_width"] == 3
    assert written["source_text"] == {
        "strip": True,
        "lowercase": True,
        "split": "characters",
        "unknown_tokens": "drop",
    }
    assert written["target_text"] == {"separator": " "}
    # The specs it was exported with, their fields as they are.
    assert written["decoding"] == {
        "beam_width": 3, "length_penalty": 0.0, "max_source_length": 7, "max_target_length": 8,
    }
    assert written["text"] == {"split": "characters", "lowercase": True, "separator": " "}
    assert vocabularies["luong"]["decoding"]["length_penalty"] == 0.8
    assert written["outputs"] == ["target_ids", "scores", "alignments"]
    assert vocabularies["right_to_left"]["outputs"] == ["target_ids", "scores"]


@pytest.mark.slow
def test_files_loop_over_the_beam_search_only(exported):
    """Every signature holds one `WHILE`, the beam search's; the encoder and
    a rescorer whose attention feeds its cell (the ensemble's) are
    unrolled. The loop's body is one step: its operators do not grow with
    the target length."""
    _, directory, _, contracts, _ = exported
    for name in contracts:
        path = directory / name / "model.tflite"
        operators = count_litert_operators(path)
        loops = count_litert_loop_operators(path)
        assert set(operators) == set(contracts[name]) == set(loops), name
        for signature, kinds in operators.items():
            assert kinds["WHILE"] == 1, (name, signature)
            assert "WHILE" not in loops[signature], (name, signature)
    # The bucket decodes 6 tokens at most, serving_default 8: the same body.
    bucketed = count_litert_loop_operators(directory / "bahdanau" / "model.tflite")
    assert bucketed["source_4"] == bucketed["serving_default"]


@pytest.mark.slow
def test_loops_hold_no_unknown_dimension(exported):
    """The loops' tensors carry no −1 (the signature's free batch) in their
    shape signatures, with which `TOPK_V2` would make its outputs dynamic
    and LiteRT run the loop in its dynamic mode; the main graphs keep
    theirs, so the batch stays free (the answers at batch 12 and 1 above)."""
    _, directory, _, contracts, _ = exported
    for name in contracts:
        content = (directory / name / "model.tflite").read_bytes()
        model = schema.ModelT.InitFromPackedBuf(content, 0)
        loops = {
            index
            for subgraph in model.subgraphs
            for operator in subgraph.operators
            if model.operatorCodes[operator.opcodeIndex].builtinCode
            == schema.BuiltinOperator.WHILE
            for index in (
                operator.builtinOptions.condSubgraphIndex,
                operator.builtinOptions.bodySubgraphIndex,
            )
        }
        assert len(loops) == 2 * len(contracts[name]), name
        for index, subgraph in enumerate(model.subgraphs):
            unknown = [
                tensor.name
                for tensor in subgraph.tensors
                if tensor.shapeSignature is not None and (tensor.shapeSignature < 0).any()
            ]
            assert bool(unknown) == (index not in loops), (name, index, unknown[:3])


@pytest.mark.slow
def test_without_alignments_the_same_answers_in_fewer_operators(exported):
    """`alignments=False`: no `alignments` output, the same ids and scores
    as the file with them (held to `beam_search_decode` above), and a loop
    step that carries no α."""
    _, directory, vocabularies, contracts, outputs = exported
    assert vocabularies["luong_without_alignments"]["outputs"] == ["target_ids", "scores"]
    for key, signature in contracts["luong_without_alignments"].items():
        assert sorted(signature["outputs"]) == ["scores", "target_ids"], key
        with_alignments = outputs["luong"][key]
        without = outputs["luong_without_alignments"][key]
        np.testing.assert_array_equal(without["target_ids"], with_alignments["target_ids"])
        np.testing.assert_allclose(without["scores"], with_alignments["scores"], atol=1e-6)
        assert "alignments" not in without
    steps = {
        name: count_litert_loop_operators(directory / name / "model.tflite")["serving_default"]
        for name in ("luong", "luong_without_alignments")
    }
    steps = {name: sum(kinds.values()) for name, kinds in steps.items()}
    assert steps["luong_without_alignments"] < steps["luong"], steps


@pytest.mark.slow
def test_dynamic_int8_keeps_the_contract(exported):
    _, _, _, contracts, outputs = exported
    assert contracts["luong_int8"] == contracts["luong"]
    assert outputs["luong_int8"]["serving_default"]["target_ids"].shape == (12, TARGET_LENGTH)


# ------------------------------------------------------------ bad input
@pytest.fixture(scope="module")
def small():
    keras.utils.set_random_seed(0)
    return member("luong"), seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)


BAD_ARGUMENTS = [
    ({"max_source_length": 0}, ValueError, "max_source_length"),
    ({"max_source_length": 7.0}, ValueError, "max_source_length"),
    ({"max_target_length": -2}, ValueError, "max_target_length"),
    ({"max_target_length": "8"}, ValueError, "max_target_length"),
    ({"beam_width": 0}, ValueError, "beam_width"),
    ({"beam_width": len(PHONES) + 5}, ValueError, "beam_width"),
    ({"length_penalty": -1.0}, ValueError, "length_penalty"),
    ({"length_penalty": 9.0}, ValueError, "length_penalty"),
    ({"max_target_length": 2**16 + 1}, ValueError, "max_target_length"),
    ({"quantize": "int4"}, ValueError, "quantize"),
    ({"buckets": [(7, 6)]}, ValueError, "buckets"),
    ({"buckets": [(4, 9)]}, ValueError, "buckets"),
    ({"buckets": [(4, 6), (4, 5)]}, ValueError, "buckets"),
    ({"buckets": (4, 6)}, ValueError, "buckets"),
    ({"split": "letters"}, ValueError, "split"),
    ({"separator": None}, ValueError, "separator"),
    ({"lowercase": "yes"}, ValueError, "lowercase"),
    ({"alignments": "no"}, ValueError, "alignments"),
]


@pytest.mark.parametrize(("change", "error", "named"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_before_conversion(small, tmp_path, change, error, named):
    model, source, target = small
    arguments = {"max_source_length": 7, "max_target_length": 8, "beam_width": 2, **change}
    with pytest.raises(error, match=f"`{named}`.*Received"):
        seq2seq.export_litert(model, tmp_path / "model.tflite", source, target, **arguments)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def rescored():
    """An untrained ensemble whose right-to-left member rescores the beam."""
    keras.utils.set_random_seed(1)
    return seq2seq.Seq2SeqEnsemble(
        [member("luong"), member("luong", target_order="right_to_left")],
        rescoring_weight=0.5,
    )


#: (the model's fixture, the length passed, what the file would unroll over it).
TOO_LONG_TO_UNROLL = [
    ("small", "max_source_length", "its encoder over every source step"),
    ("rescored", "max_source_length", "its encoder over every source step"),
    (
        "rescored",
        "max_target_length",
        "its right-to-left rescorers' decoder over every target step",
    ),
]


@pytest.mark.parametrize("length", [MAX_LITERT_UNROLLED_LENGTH + 1, 2**16])
@pytest.mark.parametrize("passed_as", ["keyword", "decoding"])
@pytest.mark.parametrize(("fixture", "field", "unrolled"), TOO_LONG_TO_UNROLL)
def test_a_length_too_long_to_unroll_is_refused_before_conversion(
    request, small, tmp_path, length, passed_as, fixture, field, unrolled
):
    """The file unrolls the encoder over the source, and a rescorer over the
    answer: a length above the bound would convert for hours, so it is
    refused at once, named as the caller passed it, with the reason."""
    model = request.getfixturevalue(fixture) if fixture == "rescored" else small[0]
    _, source, target = small
    if passed_as == "decoding":
        arguments = {"decoding": seq2seq.DecodingSpec(**{field: length})}
        named = f"decoding.{field}"
    else:
        arguments = {field: length}
        named = field
    with pytest.raises(ValueError) as refused:
        seq2seq.export_litert(model, tmp_path / "model.tflite", source, target, **arguments)
    message = str(refused.value)
    assert message.startswith(
        f"Argument `{named}` must be at most 128 for a LiteRT export of this model: "
        f"the file unrolls {unrolled}, "
    )
    assert message.endswith(f"Received: {named}={length}")
    assert list(tmp_path.iterdir()) == []


def test_the_bound_holds_where_the_file_unrolls(small, rescored):
    """128 passes the check; a model without rescorers unrolls nothing over
    the answer, so any `max_target_length` the spec allows passes."""
    longest = seq2seq.DecodingSpec(
        max_source_length=MAX_LITERT_UNROLLED_LENGTH, max_target_length=MAX_LITERT_UNROLLED_LENGTH
    )
    check_unrollable(rescored, longest, {})
    check_unrollable(small[0], dataclasses.replace(longest, max_target_length=2**16), {})
    with pytest.raises(ValueError, match="Received: decoding.max_target_length=129$"):
        check_unrollable(rescored, dataclasses.replace(longest, max_target_length=129), {})


def test_bad_models_paths_and_vocabularies_are_refused(small, tmp_path):
    model, source, target = small
    lengths = {"max_source_length": 7, "max_target_length": 8, "beam_width": 2}
    with pytest.raises(ValueError, match="`model`.*Received"):
        seq2seq.export_litert(keras.Sequential(), tmp_path / "m.tflite", source, target, **lengths)
    with pytest.raises(ValueError, match="`source_vocabulary`.*Received"):
        seq2seq.export_litert(model, tmp_path / "m.tflite", LETTERS, target, **lengths)
    with pytest.raises(ValueError, match="`target_vocabulary`.*7 ids"):
        seq2seq.export_litert(
            model, tmp_path / "m.tflite", source, seq2seq.Vocabulary(PHONES[:3]), **lengths
        )
    with pytest.raises(ValueError, match="`path`.*directory"):
        seq2seq.export_litert(model, tmp_path, source, target, **lengths)
    with pytest.raises(ValueError, match="`path`.*does not exist"):
        seq2seq.export_litert(model, tmp_path / "no" / "m.tflite", source, target, **lengths)
    with pytest.raises(TypeError, match="`path`.*Received"):
        seq2seq.export_litert(model, 3, source, target, **lengths)
    (tmp_path / "vocabulary.json").mkdir()
    with pytest.raises(ValueError, match="`path`.*vocabulary.json"):
        seq2seq.export_litert(model, tmp_path / "m.tflite", source, target, **lengths)
    assert [p.name for p in tmp_path.iterdir()] == ["vocabulary.json"]


def tiny(attention=None, cell=kerasrnn.LSTMCell, **options):
    """An untrained model, its logits spread twentyfold (`scaled_outputs`):
    the drivers compute its log-probabilities in different orders, up to
    1e-6 apart, and untrained its candidates came within 1.3e-6 of each
    other; spread, at least 3e-4 where they decide the beam. Exact ties
    (placeholders, ended hypotheses) stay for the drivers to rank alike."""
    model = seq2seq.Seq2Seq(
        10, 7, cell(6, bias_initializer="random_normal"), embedding_dim=4,
        attention=attention, **options,
    )
    return scaled_outputs(model, 20.0)


#: name -> a model of each configuration the exports take.
LITERT_MODELS = {
    "plain": lambda: tiny(),
    "bahdanau_bidirectional": lambda: tiny("bahdanau", bidirectional=True),
    "luong_input_feeding": lambda: tiny("luong", kerasrnn.GRUCell, input_feeding=True),
    "luong_without_input_feeding": lambda: tiny("luong", input_feeding=False, context="both"),
    "right_to_left": lambda: tiny(None, bidirectional=True, target_order="right_to_left"),
    "ensemble": lambda: seq2seq.Seq2SeqEnsemble(
        [tiny("luong"), tiny("bahdanau", kerasrnn.GRUCell)]
    ),
    "ensemble_rescored": lambda: seq2seq.Seq2SeqEnsemble(
        [
            tiny("luong", bidirectional=True, input_feeding=False),
            tiny("luong", target_order="right_to_left", input_feeding=True),
        ],
        rescoring_weight=0.5,
    ),
}

#: Sources padded at the end, at the front, between tokens, not at all, and
#: all padding.
PADDED_SOURCES = np.array(
    [
        [4, 5, 6, 7, 8, 9],
        [5, 6, 0, 0, 0, 0],
        [0, 0, 0, 7, 8, 4],
        [9, 0, 5, 0, 6, 0],
        [0, 0, 0, 0, 0, 0],
        [4, 4, 4, 0, 0, 0],
    ],
    np.int32,
)


@pytest.mark.slow
@pytest.mark.parametrize("name", LITERT_MODELS)
def test_looped_beam_search_holds_every_hypothesis_of_beam_search_decode(name):
    """The file's beam search, traced in TensorFlow (no conversion) at a
    free batch size as the export traces it, against `beam_search_decode`
    (the same step in another loop, with its own bookkeeping):
    every hypothesis of the beam with its log-probability, score and α.
    Width 7 is wider than the 5 emittable tokens allow in one step, so
    placeholders fill the beam; α = 1 and 2 rank by the length penalty."""
    keras.utils.set_random_seed(5)
    model = LITERT_MODELS[name]()
    with_alignments = model.has_attention
    spec = tf.TensorSpec([None, PADDED_SOURCES.shape[1]], tf.int32)
    for width, alpha, steps in [(1, 0.0, 5), (3, 1.0, 5), (7, 0.0, 1), (7, 2.0, 5)]:
        expected = seq2seq.beam_search_decode(
            model, PADDED_SOURCES, width, steps, alpha, return_alignments=with_alignments
        )
        looped = tf.function(
            lambda ids, width=width, alpha=alpha, steps=steps: looped_beam_search(
                model, ids, width, steps, alpha, with_alignments
            ),
            input_signature=[spec],
        )(PADDED_SOURCES)
        np.testing.assert_array_equal(looped.sequences, expected.sequences)
        np.testing.assert_allclose(looped.log_probs, expected.log_probs, atol=1e-6)
        np.testing.assert_allclose(looped.scores, expected.scores, atol=1e-6)
        if with_alignments:
            np.testing.assert_allclose(looped.alignments, expected.alignments, atol=1e-6)
        else:
            assert looped.alignments is None
        if steps == 1:
            # One step: five hypotheses exist, two placeholders fill the
            # beam; the all-padding source has its empty answer first.
            assert (expected.log_probs.numpy()[0] == -1e9).sum() == 2
            assert expected.scores[4, 0] == 0.0
