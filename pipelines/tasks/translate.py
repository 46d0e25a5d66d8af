"""`translate`: sentence translation on a TFDS corpus with `kerasrnn.seq2seq`.

For users who are online (or who ran `tfds build ted_hrlr_translate`): the
data are a `ted_hrlr_translate` configuration of TFDS (TED talk transcripts;
Qi et al. 2018), `ted_hrlr_translate/pt_to_en` (Portuguese to English) by
default, read by `pipelines.data.translation`: lower-cased words, the
`--vocabulary-size` most frequent training words per language (the rest
read as `<unk>`), sentences cut to `--max-length` words. There is no
embedded corpus: offline, with the data not prepared, the run fails at once
with `DatasetNotOnDisk`, naming the dataset and the command that fetches it.

Model: the g2p task's (`pipelines.tasks.g2p.build_model`): word embeddings
(`--embedding`) → `--layers` encoder layers of `--cell` with `--units`
(`--bidirectional`) → a decoder of the same cell, given the context as
`--context` says → softmax over target words (`eq:rnn-seq2seq`). Training
is teacher forcing, or scheduled sampling with `--scheduled-sampling`; the
learning rate halves whenever the validation loss stalls. Test sentences
are decoded by beam search (`--beam-width`, `--length-penalty`).

Metrics on the test split, over word ids (a reference `<unk>` is matched
only by a predicted `<unk>`):

- `test_sentence_error_rate`: the fraction of sentences whose prediction is
  not exactly the reference (1 − exact match);
- `test_token_error_rate`: Σ d(prediction, reference) / Σ len(reference),
  d the Levenshtein distance over words (the word error rate of speech
  recognition; it can exceed 1 when the model inserts words);
- `test_loss`: the teacher-forced masked cross-entropy per target token.

No BLEU: it needs a tokenizer and smoothing choices the pipeline does not
make for the user.

Outputs are the shared ones (`pipelines.training`), except that
`saved_model/` is the string-in, string-out export of
`kerasrnn.seq2seq.export_serving` with `split="whitespace"`: its
`serving_default` maps a sentence to its translation (words joined by
spaces), beam search in the graph. Unlike training, where an unknown word
reads as `<unk>`, the served model drops source words outside its
vocabulary (see `kerasrnn.seq2seq.serving` for every odd input).
"""

import argparse

import keras

from kerasrnn import seq2seq
from pipelines.cli import positive_int
from pipelines.data.translation import TranslationConfig, load_translation
from pipelines.tasks import g2p

DESCRIPTION = (
    "Sentence translation on a TFDS ted_hrlr_translate corpus (online users): "
    "a seq2seq encoder-decoder with beam search; reports test token and "
    "sentence error rates."
)

#: The (source, target) feature keys of every `ted_hrlr_translate`
#: configuration, as TFDS 4.9 lists them; the configuration's name drops
#: the underscore of a mixed source ("az_tr" -> "aztr_to_en").
LANGUAGE_PAIRS = (
    ("pt", "en"),
    ("az", "en"),
    ("az_tr", "en"),
    ("be", "en"),
    ("be_ru", "en"),
    ("es", "pt"),
    ("fr", "pt"),
    ("gl", "en"),
    ("gl_pt", "en"),
    ("he", "pt"),
    ("it", "pt"),
    ("ru", "en"),
    ("ru", "pt"),
    ("tr", "en"),
)

#: `--data` value -> (source, target) feature keys.
CORPORA = {
    f"ted_hrlr_translate/{source.replace('_', '')}_to_{target}": (source, target)
    for source, target in LANGUAGE_PAIRS
}

DATA_SOURCES = {
    name: f"TFDS {name} (TED talks, Qi et al. 2018; {source} -> {target}); "
    "needs `tfds build ted_hrlr_translate` once online"
    for name, (source, target) in CORPORA.items()
}

DEFAULTS = {
    "data": "ted_hrlr_translate/pt_to_en",
    "cell": "lstm",
    "units": 256,
    "layers": 1,
    "bidirectional": True,
    "dropout": 0.0,
    "epochs": 10,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "clipnorm": 1.0,
    "embedding": 128,
    "context": "initial_state",
    "beam_width": 4,
    "length_penalty": 0.6,
    "scheduled_sampling": "none",
    "sampling_midpoint": 5000,
    "vocabulary_size": 8000,
    "max_length": 40,
}

QUICK = {
    "units": 16,
    "embedding": 16,
    "epochs": 2,
    "batch_size": 32,
    "beam_width": 2,
    "vocabulary_size": 200,
    "max_length": 8,
}


def non_negative_float(text):
    """`argparse` type: a finite float >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a number >= 0; received {text!r}"
        )
    return value


def add_arguments(parser):
    parser.add_argument(
        "--embedding", type=positive_int, default=DEFAULTS["embedding"],
        help="size of the source and target word embeddings",
    )
    parser.add_argument(
        "--context", choices=seq2seq.CONTEXTS, default=DEFAULTS["context"],
        help="how the decoder receives the encoder's context",
    )
    parser.add_argument(
        "--beam-width", type=positive_int, default=DEFAULTS["beam_width"],
        help="beam search width B (1 is greedy decoding)",
    )
    parser.add_argument(
        "--length-penalty", type=non_negative_float,
        default=DEFAULTS["length_penalty"],
        help="GNMT length penalty alpha of the beam search",
    )
    parser.add_argument(
        "--scheduled-sampling", choices=g2p.SCHEDULES,
        default=DEFAULTS["scheduled_sampling"],
        help="decay of the teacher-forcing probability epsilon (none: always 1)",
    )
    parser.add_argument(
        "--sampling-midpoint", type=positive_int,
        default=DEFAULTS["sampling_midpoint"],
        help="training step at which epsilon reaches 1/2",
    )
    parser.add_argument(
        "--vocabulary-size", type=positive_int,
        default=DEFAULTS["vocabulary_size"],
        help="most frequent training words kept per language; others are <unk>",
    )
    parser.add_argument(
        "--max-length", type=positive_int, default=DEFAULTS["max_length"],
        help="words kept per sentence (longer sentences are cut)",
    )


def predict(model, batches, target_vocabulary, config):
    """Beam-search translations and references of every batch.

    Args:
        batches: `({"source", "decoder_input"}, decoder_target)` batches.

    Returns:
        `(predictions, references)`: per sentence a list of target words,
        and its reference wrapped in a one-element list (the shape
        `g2p.error_rates` takes).
    """
    predictions, references = [], []
    for inputs, labels in batches:
        sequences, _, _ = seq2seq.beam_search_decode(
            model, inputs["source"], config.beam_width, config.max_length + 1,
            config.length_penalty,
        )
        predictions.extend(
            target_vocabulary.decode(row) for row in sequences[:, 0].numpy()
        )
        references.extend([target_vocabulary.decode(row)] for row in labels.numpy())
    return predictions, references


def run(config, context):
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
            seed=config.seed,
        )
    )
    with context.scope():
        model = g2p.build_model(config, source_vocabulary, target_vocabulary)
        context.compile(model, seq2seq.SequenceCrossEntropy())
    context.fit(
        model, datasets["train"], datasets["validation"],
        callbacks=[keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=0)],
    )
    context.save(model, export=False)
    if context.is_chief:
        seq2seq.export_serving(
            model, context.write_dir / "saved_model",
            source_vocabulary, target_vocabulary,
            split="whitespace", separator=" ", lowercase=True,
            beam_width=config.beam_width, length_penalty=config.length_penalty,
            max_input_length=config.max_length,
            max_output_length=config.max_length + 1,
        )

    test_loss = model.evaluate(datasets["test"], verbose=0, return_dict=True)["loss"]
    predictions, references = predict(
        model, datasets["test"], target_vocabulary, config
    )
    sentence_error_rate, token_error_rate = g2p.error_rates(
        predictions, references, stress=True
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
        "test_loss": test_loss,
        "test_sentences": len(references),
        "source_vocabulary_size": source_vocabulary.size,
        "target_vocabulary_size": target_vocabulary.size,
        "parameters": model.count_params(),
        "examples": examples,
    }
