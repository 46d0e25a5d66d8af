"""`translate`: sentence translation on a TFDS corpus with `kerasrnn.seq2seq`.

For users who are online (or who ran `tfds build ted_hrlr_translate`): the
data are a `ted_hrlr_translate` configuration of TFDS (TED talk transcripts;
Qi et al. 2018), `ted_hrlr_translate/pt_to_en` (Portuguese to English) by
default, read by `kerasrnn_pipelines.data.translation`: lower-cased words, the
`--vocabulary-size` most frequent training words per language (the rest
read as `<unk>`), sentences cut to `--max-length` words. There is no
embedded corpus: offline, with the data not prepared, the run fails at once
with `DatasetNotOnDisk`, naming the dataset and the command that fetches it.

Model: the g2p task's (`kerasrnn_pipelines.encoder_decoder`): word embeddings
(`--embedding`) → `--layers` encoder layers of `--cell` with `--units`
(`--bidirectional`) → a decoder of the same cell, given the context as
`--context` says → softmax over target words (`eq:rnn-seq2seq`). Training
is teacher forcing, or scheduled sampling with `--scheduled-sampling`; the
learning rate is held, then halved at each of the last four epochs
(`kerasrnn_pipelines.encoder_decoder.step_decay`). Test sentences
are decoded by beam search (`--beam-width`, `--length-penalty`).

Metrics on the test split, over word ids (a reference `<unk>` is matched
only by a predicted `<unk>`):

- `test_sentence_error_rate`: the fraction of sentences whose prediction is
  not exactly the reference (1 − exact match);
- `test_token_error_rate`: Σ d(prediction, reference) / Σ len(reference),
  d the Levenshtein distance over words (the word error rate of speech
  recognition; it can exceed 1 when the model inserts words);
- `test_loss`: the teacher-forced masked cross-entropy per target token
  (with `--ensemble N`, the members' losses summed, as training logs it);
- `baseline_token_error_rate`: the token error rate of copying each source
  sentence's known words, a floor a translation must beat.

No BLEU: it needs a tokenizer and smoothing choices the pipeline does not
make for the user.

Outputs are the shared ones (`kerasrnn_pipelines.training`), plus
`model.tflite` and `vocabulary.json` (`kerasrnn.seq2seq.export_litert`:
word ids in, word ids out, the beam search inside; `metrics.json` records
its `litert_quantize` (`--litert-quantize`), its `litert_bytes` and its
`litert_test_token_error_rate`, computed through the LiteRT interpreter),
except that `saved_model/` is the string-in, string-out export of
`kerasrnn.seq2seq.export_serving` with `split="whitespace"`: its
`serving_default` maps a sentence to its translation (words joined by
spaces), beam search in the graph. Unlike training, where an unknown word
reads as `<unk>`, the served model drops source words outside its
vocabulary (see `kerasrnn.export.seq2seq_savedmodel` for every odd input).
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

from kerasrnn import seq2seq
from kerasrnn_pipelines import edit_distance, encoder_decoder
from kerasrnn_pipelines.data.translation import TranslationConfig, load_translation
from kerasrnn_pipelines.litert_outputs import litert_file_metrics
from kerasrnn_pipelines.tasks.options.translate_config import CORPORA

if TYPE_CHECKING:
    import tensorflow as tf

    from kerasrnn_pipelines.tasks.options.translate_config import TranslateConfig
    from kerasrnn_pipelines.training import RunContext

HEADLINE_METRIC = ("test_token_error_rate", "baseline_token_error_rate", "lower")


def predict(
    model: seq2seq.DecodableModel,
    batches: tf.data.Dataset,
    source_vocabulary: seq2seq.Vocabulary,
    target_vocabulary: seq2seq.Vocabulary,
    decoding: seq2seq.DecodingSpec,
) -> tuple[list[list[str]], list[list[list[str]]], list[list[str]]]:
    """Beam-search translations, references and copies of every batch.

    Args:
        batches: `({"source", "decoder_input"}, decoder_target)` batches.
        decoding: The run's `DecodingSpec` (`--beam-width`,
            `--length-penalty`; a translation ends after
            `max_target_length` = `--max-length` + 1 target tokens).

    Returns:
        `(predictions, references, copies)`: per sentence a list of target
        words; its reference wrapped in a one-element list (the shape
        `kerasrnn_pipelines.edit_distance.error_rates` takes); and the baseline, its
        source words that the source vocabulary knows, copied (names,
        numbers and words the languages share come out right).
    """
    predictions: list[list[str]] = []
    references: list[list[list[str]]] = []
    copies: list[list[str]] = []
    for inputs, labels in batches:
        for row in inputs["source"].numpy():
            copies.append(source_vocabulary.decode(row[row != seq2seq.UNKNOWN_ID]))
        predictions.extend(
            encoder_decoder.beam_search(model, inputs["source"], target_vocabulary, decoding)
        )
        references.extend([target_vocabulary.decode(row)] for row in labels.numpy())
    return predictions, references, copies


def litert_metrics(
    path: pathlib.Path,
    batches: tf.data.Dataset,
    references: list[list[list[str]]],
    target_vocabulary: seq2seq.Vocabulary,
    litert_quantize: str,
) -> dict[str, Any]:
    """`litert_quantize`, `litert_bytes`, `litert_operators`, and
    `litert_test_token_error_rate`: the token error
    rate of the `model.tflite` at `path` on the test `batches`, through the
    LiteRT interpreter (left out, with a note, where `ai_edge_litert` is not
    installed)."""
    metrics = litert_file_metrics(path, litert_quantize)
    sources = [
        [token for token in row if token != seq2seq.PAD_ID]
        for inputs, _ in batches
        for row in inputs["source"].numpy().tolist()
    ]
    try:
        answers = encoder_decoder.litert_beam_search(path, sources)
    except ImportError:
        print("ai-edge-litert is not installed: model.tflite is written but not evaluated")
        return metrics
    predictions = [target_vocabulary.decode(answer) for answer in answers]
    _, metrics["litert_test_token_error_rate"] = edit_distance.error_rates(
        predictions, references
    )
    return metrics


def run(config: TranslateConfig, context: RunContext) -> dict[str, Any]:
    """Train, evaluate on the test split, save and export."""
    source_language, target_language = CORPORA[config.data]
    datasets, source_vocabulary, target_vocabulary = load_translation(
        TranslationConfig(
            name=config.data,
            source_language=source_language,
            target_language=target_language,
            vocabulary_size=config.vocabulary_size,
            max_length=config.max_length,
            batch_size=config.batch_size,
            shuffle=config.shuffle,
            seed=config.seed,
        )
    )
    model = encoder_decoder.train(
        config, context, source_vocabulary, target_vocabulary,
        datasets["train"], datasets["validation"],
    )
    context.save(model, export=False)
    # Sentences are cut to --max-length words; a translation then ends
    # with <end>, one token more.
    decoding = seq2seq.DecodingSpec(
        beam_width=config.beam_width,
        length_penalty=config.length_penalty,
        max_source_length=config.max_length,
        max_target_length=config.max_length + 1,
    )
    litert_path = encoder_decoder.export_model(
        model,
        context,
        source_vocabulary,
        target_vocabulary,
        decoding=decoding,
        text=seq2seq.TextSpec(split="whitespace", lowercase=True, separator=" "),
        litert_quantize=config.litert_quantize,
    )

    test_loss = model.evaluate(datasets["test"], verbose=0, return_dict=True)["loss"]
    predictions, references, copies = predict(
        model,
        datasets["test"],
        source_vocabulary,
        target_vocabulary,
        decoding,
    )
    sentence_error_rate, token_error_rate = edit_distance.error_rates(
        predictions, references
    )
    _, baseline_token_error_rate = edit_distance.error_rates(copies, references)
    litert: dict[str, Any] = {}
    if litert_path is not None:
        litert = litert_metrics(
            litert_path, datasets["test"], references, target_vocabulary, config.litert_quantize
        )
    examples = [
        {"reference": " ".join(reference[0]), "prediction": " ".join(prediction)}
        for prediction, reference in zip(predictions[:5], references[:5])
    ]
    for example in examples:
        print(f"reference:  {example['reference']}\nprediction: {example['prediction']}")
    return {
        "test_sentence_error_rate": sentence_error_rate,
        "test_token_error_rate": token_error_rate,
        "baseline_token_error_rate": baseline_token_error_rate,
        "test_loss": test_loss,
        **litert,
        "test_sentences": len(references),
        "source_vocabulary_size": source_vocabulary.size,
        "target_vocabulary_size": target_vocabulary.size,
        "parameters": model.count_params(),
        "examples": examples,
    }
