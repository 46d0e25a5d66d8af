"""`DecodingSpec` and `TextSpec`: their checks, the exporters that take them
(shortcut arguments included), what the exports record, and the keywords
renamed to their field names (the old ones deprecated)."""

import dataclasses
import inspect
import json
import re

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn import seq2seq
from kerasrnn.seq2seq.specs import SPECS_FILE

LETTERS = list("abcdef")
PHONES = ["AA", "B", "K"]
SOURCE = np.array([[4, 5, 6], [7, 4, 0]])

#: The defaults the documentation states, for both exporters.
DEFAULT_DECODING = {
    "beam_width": 2,
    "length_penalty": 0.0,
    "max_source_length": 64,
    "max_target_length": 64,
}
DEFAULT_TEXT = {"split": "characters", "lowercase": True, "separator": " "}


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    return seq2seq.Seq2Seq(
        len(LETTERS) + 4, len(PHONES) + 4, kerasrnn.GRUCell(4), embedding_dim=3,
        attention="luong",
    )


@pytest.fixture(scope="module")
def vocabularies():
    return seq2seq.Vocabulary(LETTERS), seq2seq.Vocabulary(PHONES)


# ------------------------------------------------------------- the specs
def test_defaults_are_the_documented_ones():
    assert seq2seq.DecodingSpec().to_json() == DEFAULT_DECODING
    assert seq2seq.TextSpec().to_json() == DEFAULT_TEXT


@pytest.mark.parametrize(
    "field, value",
    [
        ("beam_width", 0),
        ("beam_width", 2.0),
        ("beam_width", True),
        ("length_penalty", -0.5),
        ("length_penalty", 8.5),
        ("length_penalty", "0.6"),
        ("max_source_length", 0),
        ("max_source_length", None),
        ("max_target_length", 0),
        ("max_target_length", 2**16 + 1),
        ("max_target_length", 7.5),
    ],
)
def test_a_bad_decoding_field_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"`{field}`.*Received: {field}={re.escape(repr(value))}"):
        seq2seq.DecodingSpec(**{field: value})


@pytest.mark.parametrize(
    "field, value",
    [
        ("split", "letters"),
        ("split", None),
        ("lowercase", "yes"),
        ("lowercase", 1),
        ("separator", None),
        ("separator", 0),
    ],
)
def test_a_bad_text_field_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"`{field}`.*Received: {field}={re.escape(repr(value))}"):
        seq2seq.TextSpec(**{field: value})


def test_specs_hold_plain_python_values_and_are_frozen():
    decoding = seq2seq.DecodingSpec(
        beam_width=np.int64(3), length_penalty=np.float32(0.5),
        max_source_length=np.int32(9), max_target_length=np.int64(11),
    )
    written = json.dumps(decoding.to_json())
    assert json.loads(written) == {
        "beam_width": 3, "length_penalty": 0.5, "max_source_length": 9, "max_target_length": 11,
    }
    assert type(decoding.beam_width) is int and type(decoding.length_penalty) is float
    assert type(seq2seq.TextSpec(lowercase=np.bool_(False)).lowercase) is bool
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoding.beam_width = 4


# --------------------------------------------------------- the exporters
def test_both_exporters_take_the_specs_by_one_signature():
    shared = [
        "decoding", "text", "beam_width", "length_penalty", "max_source_length",
        "max_target_length", "split", "lowercase", "separator",
    ]
    for exporter in (seq2seq.export_serving, seq2seq.StringSeq2Seq, seq2seq.export_litert):
        parameters = inspect.signature(exporter).parameters
        assert set(shared) <= set(parameters), exporter
        # No catch-all: a misspelt option is refused, not ignored.
        assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values()), exporter


def test_export_serving_refuses_an_unknown_keyword(model, vocabularies, tmp_path):
    with pytest.raises(TypeError, match="beam"):
        seq2seq.export_serving(model, tmp_path / "saved_model", *vocabularies, beam=3)


def test_string_seq2seq_defaults_are_the_specs(model, vocabularies):
    module = seq2seq.StringSeq2Seq(model, *vocabularies, jit_compile=False)
    assert module.decoding.to_json() == DEFAULT_DECODING
    assert module.text.to_json() == DEFAULT_TEXT


def test_shortcuts_make_the_spec(model, vocabularies):
    module = seq2seq.StringSeq2Seq(
        model, *vocabularies, beam_width=3, max_target_length=5, separator="",
        jit_compile=False,
    )
    assert module.decoding.to_json() == {
        **DEFAULT_DECODING, "beam_width": 3, "max_target_length": 5,
    }
    assert module.text.to_json() == {**DEFAULT_TEXT, "separator": ""}


@pytest.mark.parametrize(
    "exporter", ["export_serving", "StringSeq2Seq", "export_litert"]
)
@pytest.mark.parametrize(
    "spec, shortcut",
    [
        ("decoding", {"beam_width": 3}),
        ("decoding", {"max_source_length": 5}),
        ("text", {"separator": ""}),
        ("text", {"split": "whitespace"}),
    ],
)
def test_a_shortcut_with_its_spec_is_refused(
    model, vocabularies, tmp_path, exporter, spec, shortcut
):
    specs = {"decoding": seq2seq.DecodingSpec(max_source_length=4), "text": seq2seq.TextSpec()}
    (field, value), = shortcut.items()
    arguments = {spec: specs[spec], **shortcut}
    with pytest.raises(
        ValueError, match=f"`{field}` sets a field of `{spec}`.*Received: {field}={value!r}"
    ):
        if exporter == "StringSeq2Seq":
            seq2seq.StringSeq2Seq(model, *vocabularies, **arguments)
        else:
            getattr(seq2seq, exporter)(model, tmp_path / "out", *vocabularies, **arguments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("spec", ["decoding", "text"])
def test_a_spec_of_the_wrong_kind_is_refused(model, vocabularies, tmp_path, spec):
    wrong = {"decoding": seq2seq.TextSpec(), "text": {"split": "characters"}}[spec]
    with pytest.raises(ValueError, match=f"`{spec}` must be a kerasrnn.seq2seq.*Received"):
        seq2seq.export_serving(model, tmp_path / "saved_model", *vocabularies, **{spec: wrong})


def test_both_exporters_refuse_a_beam_wider_than_the_target_vocabulary(
    model, vocabularies, tmp_path
):
    decoding = seq2seq.DecodingSpec(beam_width=len(PHONES) + 5, max_source_length=3,
                                    max_target_length=3)
    messages = []
    for exporter, path in (
        (seq2seq.export_serving, tmp_path / "saved_model"),
        (seq2seq.export_litert, tmp_path / "model.tflite"),
    ):
        with pytest.raises(ValueError) as refused:
            exporter(model, path, *vocabularies, decoding=decoding)
        messages.append(str(refused.value))
    # The target vocabulary holds 7 ids: the reserved 4 and 3 phonemes.
    assert messages[0] == messages[1] == (
        "Argument `beam_width` must be at most the target vocabulary size, 7. "
        "Received: beam_width=8"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_both_exports_record_the_specs_as_they_are(model, vocabularies, tmp_path):
    decoding = seq2seq.DecodingSpec(
        beam_width=3, length_penalty=0.5, max_source_length=4, max_target_length=3
    )
    text = seq2seq.TextSpec(split="whitespace", lowercase=False, separator="+")
    expected = {
        "decoding": {
            "beam_width": 3, "length_penalty": 0.5, "max_source_length": 4,
            "max_target_length": 3,
        },
        "text": {"split": "whitespace", "lowercase": False, "separator": "+"},
    }
    seq2seq.export_serving(
        model, tmp_path / "saved_model", *vocabularies, decoding=decoding, text=text,
        jit_compile=False,
    )
    recorded = json.loads((tmp_path / "saved_model" / SPECS_FILE).read_text())
    assert recorded == expected
    written = seq2seq.export_litert(
        model, tmp_path / "model.tflite", *vocabularies, decoding=decoding, text=text
    )
    assert {key: written[key] for key in ("decoding", "text")} == expected
    on_disk = json.loads((tmp_path / "vocabulary.json").read_text())
    assert {key: on_disk[key] for key in ("decoding", "text")} == expected
    # The keys older clients read say the same.
    assert (on_disk["beam_width"], on_disk["max_source_length"], on_disk["max_target_length"]) == (
        3, 4, 3
    )
    assert on_disk["source_text"]["split"] == "whitespace"
    assert on_disk["target_text"] == {"separator": "+"}


# ------------------------------------------------------ renamed keywords
def test_sample_decode_max_length_still_works_with_a_deprecation_warning(model):
    expected = seq2seq.sample_decode(model, SOURCE, max_target_length=3, seed=4)
    with pytest.warns(
        DeprecationWarning,
        match="sample_decode: the keyword `max_length` is deprecated.*pass `max_target_length`",
    ) as caught:
        result = seq2seq.sample_decode(model, SOURCE, max_length=3, seed=4)
    # The warning points at the caller, not into kerasrnn.
    assert caught[0].filename == __file__
    np.testing.assert_array_equal(result.sequences, expected.sequences)
    np.testing.assert_array_equal(result.log_probs, expected.log_probs)


def test_sample_decode_max_length_with_max_target_length_is_refused(model):
    with pytest.raises(
        ValueError,
        match="`max_length` and `max_target_length`.*Received: max_length=3 and "
        "max_target_length=4",
    ):
        seq2seq.sample_decode(model, SOURCE, max_length=3, max_target_length=4)


# --------------------------------------------- the decoders take the spec
#: Each decoder called with the spec, and with its deprecated loose
#: keywords saying the same (`max_length` the older name of
#: `max_target_length`).
SPEC_DECODERS = {
    "greedy_decode": (
        lambda model, decoding: seq2seq.greedy_decode(model, SOURCE, decoding=decoding),
        [
            ((), {"max_target_length": 3}, ["max_target_length"]),
            ((3,), {}, ["max_target_length"]),
            ((), {"max_length": 3}, ["max_length"]),
        ],
    ),
    "beam_search_decode": (
        lambda model, decoding: seq2seq.beam_search_decode(model, SOURCE, decoding=decoding),
        [
            ((), {"beam_width": 2, "max_target_length": 3, "length_penalty": 0.5},
             ["beam_width", "max_target_length", "length_penalty"]),
            ((2, 3, 0.5), {}, ["beam_width", "max_target_length", "length_penalty"]),
            ((2,), {"max_length": 3, "length_penalty": 0.5},
             ["beam_width", "max_length", "length_penalty"]),
        ],
    ),
}
LOOSE_CALLS = [
    (decoder, arguments, keywords, typed)
    for decoder, (_, calls) in SPEC_DECODERS.items()
    for arguments, keywords, typed in calls
]


@pytest.mark.parametrize("decoder, arguments, keywords, typed", LOOSE_CALLS)
def test_the_loose_keywords_still_work_with_a_warning_naming_the_spec(
    model, decoder, arguments, keywords, typed
):
    decode_with_spec, _ = SPEC_DECODERS[decoder]
    spec = seq2seq.DecodingSpec(beam_width=2, max_target_length=3, length_penalty=0.5)
    expected = decode_with_spec(model, spec)
    with pytest.warns(DeprecationWarning) as caught:
        result = getattr(seq2seq, decoder)(model, SOURCE, *arguments, **keywords)
    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert warning.filename == __file__
    named = ", ".join(f"`{keyword}`" for keyword in typed)
    said = f"keywords {named} are" if len(typed) > 1 else f"keyword {named} is"
    assert str(warning.message).startswith(f"{decoder}: the {said} deprecated")
    assert "pass `decoding=kerasrnn.seq2seq.DecodingSpec(" in str(warning.message)
    np.testing.assert_array_equal(result.sequences, expected.sequences)
    np.testing.assert_array_equal(result.scores, expected.scores)
    assert result.sequences.shape[-1] == 3


def test_greedy_decoding_reads_the_spec_s_length_only(model):
    """A spec's beam fields are beam search's: greedy decoding with any of
    them is the beam of one's best answer."""
    wide = seq2seq.DecodingSpec(beam_width=3, length_penalty=1.0, max_target_length=4)
    greedy = seq2seq.greedy_decode(model, SOURCE, decoding=wide)
    beam_of_one = seq2seq.beam_search_decode(
        model, SOURCE, decoding=dataclasses.replace(wide, beam_width=1, length_penalty=0.0)
    )
    np.testing.assert_array_equal(greedy.sequences, beam_of_one.sequences[:, 0])
    np.testing.assert_allclose(greedy.log_probs, beam_of_one.log_probs[:, 0], atol=1e-5)


@pytest.mark.parametrize("decoder", SPEC_DECODERS)
def test_a_decoder_without_a_spec_names_the_missing_argument(model, decoder):
    with pytest.raises(TypeError, match=f"{decoder}\\(\\) missing required argument: 'decoding'"):
        getattr(seq2seq, decoder)(model, SOURCE)


@pytest.mark.parametrize(
    "keywords, missing",
    [({"max_target_length": 3}, "beam_width"), ({"beam_width": 2}, "max_target_length")],
)
def test_the_loose_form_still_requires_its_keywords(model, keywords, missing):
    with pytest.raises(TypeError, match=f"missing required argument: '{missing}'"):
        seq2seq.beam_search_decode(model, SOURCE, **keywords)


@pytest.mark.parametrize(
    "decoder, keywords, typed",
    [
        ("greedy_decode", {"max_target_length": 3}, "max_target_length"),
        ("greedy_decode", {"max_length": 3}, "max_length"),
        ("beam_search_decode", {"beam_width": 2}, "beam_width"),
        ("beam_search_decode", {"length_penalty": 0.5}, "length_penalty"),
        ("beam_search_decode", {"max_length": 3}, "max_length"),
    ],
)
def test_a_loose_keyword_with_the_spec_is_refused_by_its_typed_name(
    model, decoder, keywords, typed
):
    spec = seq2seq.DecodingSpec()
    with pytest.raises(ValueError) as refused:
        getattr(seq2seq, decoder)(model, SOURCE, decoding=spec, **keywords)
    assert str(refused.value).startswith(f"Argument `{typed}` sets ")
    assert f"Received: {typed}={keywords[typed]!r} and decoding=DecodingSpec(" in str(
        refused.value
    )


@pytest.mark.parametrize(
    "decoder, keywords, typed",
    [
        ("greedy_decode", {"max_length": 0}, "max_length"),
        ("greedy_decode", {"max_target_length": 2**16 + 1}, "max_target_length"),
        ("beam_search_decode", {"beam_width": 0, "max_target_length": 3}, "beam_width"),
        ("beam_search_decode", {"beam_width": 2, "max_length": "3"}, "max_length"),
        (
            "beam_search_decode",
            {"beam_width": 2, "max_target_length": 3, "length_penalty": float("nan")},
            "length_penalty",
        ),
    ],
)
def test_a_bad_loose_keyword_is_refused_by_its_typed_name(model, decoder, keywords, typed):
    with pytest.raises(
        ValueError, match=f"^Argument `{typed}` must be .*Received: {typed}="
        f"{re.escape(repr(keywords[typed]))}$"
    ):
        getattr(seq2seq, decoder)(model, SOURCE, **keywords)


@pytest.mark.parametrize("decoder", SPEC_DECODERS)
def test_max_length_with_max_target_length_is_refused(model, decoder):
    arguments = {"beam_width": 2} if decoder == "beam_search_decode" else {}
    with pytest.raises(
        ValueError,
        match="`max_length` and `max_target_length`.*Received: max_length=3 and "
        "max_target_length=4",
    ):
        getattr(seq2seq, decoder)(model, SOURCE, max_length=3, max_target_length=4, **arguments)


def test_teacher_targets_max_length_still_works(model):
    expected = seq2seq.teacher_targets(model, SOURCE, beam_width=2, max_target_length=3)
    with pytest.warns(DeprecationWarning, match="teacher_targets: the keyword `max_length`"):
        targets = seq2seq.teacher_targets(model, SOURCE, beam_width=2, max_length=3)
    np.testing.assert_array_equal(targets, expected)
    with pytest.raises(ValueError, match="`max_length` and `max_target_length`"):
        seq2seq.teacher_targets(model, SOURCE, max_length=3, max_target_length=3)


RENAMED_EXPORT_KEYWORDS = [
    ("max_input_length", "max_source_length"),
    ("max_output_length", "max_target_length"),
]


@pytest.mark.parametrize("old, new", RENAMED_EXPORT_KEYWORDS)
def test_string_seq2seq_old_length_keywords_still_work(model, vocabularies, old, new):
    with pytest.warns(
        DeprecationWarning, match=f"StringSeq2Seq: the keyword `{old}` is deprecated.*`{new}`"
    ) as caught:
        module = seq2seq.StringSeq2Seq(model, *vocabularies, jit_compile=False, **{old: 5})
    assert caught[0].filename == __file__
    assert module.decoding.to_json() == {**DEFAULT_DECODING, new: 5}


@pytest.mark.parametrize("old, new", RENAMED_EXPORT_KEYWORDS)
@pytest.mark.parametrize("exporter", ["export_serving", "StringSeq2Seq"])
def test_an_old_and_a_new_length_keyword_together_are_refused(
    model, vocabularies, tmp_path, exporter, old, new
):
    arguments = {old: 5, new: 6}
    with pytest.raises(
        ValueError, match=f"`{old}` and `{new}`.*Received: {old}=5 and {new}=6"
    ):
        if exporter == "StringSeq2Seq":
            seq2seq.StringSeq2Seq(model, *vocabularies, **arguments)
        else:
            seq2seq.export_serving(model, tmp_path / "saved_model", *vocabularies, **arguments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("old, new", RENAMED_EXPORT_KEYWORDS)
@pytest.mark.parametrize("exporter", ["export_serving", "StringSeq2Seq"])
def test_an_old_length_keyword_with_a_decoding_spec_is_refused_by_its_old_name(
    model, vocabularies, tmp_path, exporter, old, new
):
    arguments = {"decoding": seq2seq.DecodingSpec(), old: 5}
    with pytest.raises(ValueError) as refused, pytest.warns(DeprecationWarning):
        if exporter == "StringSeq2Seq":
            seq2seq.StringSeq2Seq(model, *vocabularies, **arguments)
        else:
            seq2seq.export_serving(model, tmp_path / "saved_model", *vocabularies, **arguments)
    assert str(refused.value).startswith(
        f"Argument `{old}` sets the field `{new}` of `decoding`, which was passed too"
    )
    assert f"Received: {old}=5 and decoding=DecodingSpec(" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "keyword, value, allowed",
    [
        ("max_input_length", 0, "a positive integer"),
        ("max_input_length", "8", "a positive integer"),
        ("max_input_length", 2.0, "a positive integer"),
        ("max_output_length", -1, "an integer in [1, 65536]"),
        ("max_output_length", float("nan"), "an integer in [1, 65536]"),
        ("max_output_length", 2**16 + 1, "an integer in [1, 65536]"),
    ],
)
@pytest.mark.parametrize("exporter", ["export_serving", "StringSeq2Seq"])
def test_a_bad_old_length_keyword_is_refused_by_its_old_name(
    model, vocabularies, tmp_path, exporter, keyword, value, allowed
):
    with pytest.raises(ValueError) as refused, pytest.warns(DeprecationWarning):
        if exporter == "StringSeq2Seq":
            seq2seq.StringSeq2Seq(model, *vocabularies, **{keyword: value})
        else:
            seq2seq.export_serving(
                model, tmp_path / "saved_model", *vocabularies, **{keyword: value}
            )
    assert str(refused.value) == (
        f"Argument `{keyword}` must be {allowed}. Received: {keyword}={value!r}"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_export_serving_old_length_keywords_still_work(model, vocabularies, tmp_path):
    with pytest.warns(DeprecationWarning) as caught:
        seq2seq.export_serving(
            model, tmp_path / "saved_model", *vocabularies, max_input_length=5,
            max_output_length=4, jit_compile=False,
        )
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)
                    and "export_serving" in str(w.message)]
    assert [re.search("`(max_[a-z_]+)`", str(w.message))[1] for w in deprecations] == [
        "max_input_length", "max_output_length",
    ]
    assert {w.filename for w in deprecations} == {__file__}
    recorded = json.loads((tmp_path / "saved_model" / SPECS_FILE).read_text())
    assert recorded["decoding"] == {
        **DEFAULT_DECODING, "max_source_length": 5, "max_target_length": 4,
    }
