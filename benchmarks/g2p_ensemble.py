"""Where a G2P ensemble's accuracy comes from: its members alone, their
mixture, the mixture's best hypotheses, and the right-to-left rescoring.

`python -m benchmarks.g2p_ensemble RUN_DIR` takes a finished
`kerasrnn-train g2p` run whose `model.keras` is a `Seq2SeqEnsemble` (trained
with `--ensemble`/`--right-to-left`, or assembled with `--members`) and
decodes every test word of its split with the run's `--beam-width` B and
`--length-penalty`, in one row each:

- `left-to-right member k`: that model alone;
- `mixture`: the left-to-right members mixed (the mean of their next-phoneme
  probabilities), without rescoring;
- `rescored`: the run's whole model, the mixture's B hypotheses re-ranked
  by its right-to-left members (absent where it has none).

Columns: test WER and PER (stress removed), WER by word length
(`test_wer_by_length`'s buckets), and for the mixture `in_best_2_%` and
`in_best_B_%`: the share of test words whose 2 and B best hypotheses hold a
correct pronunciation (one equal to a reference, stress removed), the best
that re-ranking them can reach.
"""

import argparse
import json
import pathlib

import keras
import tensorflow as tf

from benchmarks.tables import print_table
from kerasrnn import seq2seq
from kerasrnn_pipelines.data import cmudict as cmudict_data
from kerasrnn_pipelines.tasks import g2p


def decoded_hypotheses(model, words, letters, phonemes, decoding):
    """Each word's B hypotheses, best first, as phoneme lists: `model`'s
    beam search of `decoding`, in batches of the run's test decoding."""
    hypotheses = []
    for start in range(0, len(words), g2p.DECODE_BATCH):
        chunk = [letters.encode(word) for word in words[start : start + g2p.DECODE_BATCH]]
        source = tf.ragged.constant(chunk, tf.int32).to_tensor(0)
        result = seq2seq.beam_search_decode(model, source, decoding=decoding)
        hypotheses += [
            [phonemes.decode(row) for row in beams] for beams in result.sequences.numpy()
        ]
    return hypotheses


def share_correct_within(hypotheses, references, k):
    """The fraction of words one of whose `k` best hypotheses equals one of
    their references, both without stress digits."""

    def unstressed(pronunciation):
        return tuple(cmudict_data.strip_stress(pronunciation))

    correct = sum(
        any(unstressed(h) in {unstressed(r) for r in refs} for h in beams[:k])
        for beams, refs in zip(hypotheses, references)
    )
    return correct / len(references)


def decoding_row(name, hypotheses, words, references):
    """A table row of the best hypotheses' WER, PER and WER by length."""
    best = [beams[0] for beams in hypotheses]
    wer, per = g2p.error_rates(best, references, stress=False)
    by_length = g2p.wer_by_length(words, best, references)
    return {
        "decoding": name,
        "test_wer_%": 100 * wer,
        "test_per_%": 100 * per,
        **{f"wer_{bucket}_%": 100 * rate for bucket, rate in by_length.items()},
    }


def ensemble_rows(run):
    """The table's rows for the run directory `run` (see the module doc)."""
    arguments = json.loads((run / "metrics.json").read_text())["args"]
    model = keras.saving.load_model(run / "model.keras")
    if not isinstance(model, seq2seq.Seq2SeqEnsemble):
        raise SystemExit(
            f"{run}: its model.keras holds a {type(model).__name__}, not a Seq2SeqEnsemble"
        )
    splits = g2p.load_words(
        stress=arguments["stress"], limit=arguments["limit"], seed=arguments["seed"]
    )
    letters, phonemes = g2p.make_vocabularies(splits["train"])
    decoding = g2p.decoding_spec(
        splits["train"], arguments["beam_width"], arguments["length_penalty"]
    )
    words = [word for word, _ in splits["test"]]
    references = [prons for _, prons in splits["test"]]
    forward = [member for member in model.members if not member.reads_right_to_left]
    rows = []
    for index, member in enumerate(forward):
        hypotheses = decoded_hypotheses(member, words, letters, phonemes, decoding)
        rows.append(decoding_row(f"left-to-right member {index}", hypotheses, words, references))
    mixed = seq2seq.Seq2SeqEnsemble(forward) if len(forward) > 1 else forward[0]
    hypotheses = decoded_hypotheses(mixed, words, letters, phonemes, decoding)
    row = decoding_row(f"mixture of {len(forward)}", hypotheses, words, references)
    row["in_best_2_%"] = 100 * share_correct_within(hypotheses, references, 2)
    row[f"in_best_{decoding.beam_width}_%"] = 100 * share_correct_within(
        hypotheses, references, decoding.beam_width
    )
    rows.append(row)
    if len(forward) < len(model.members):
        hypotheses = decoded_hypotheses(model, words, letters, phonemes, decoding)
        rows.append(decoding_row("rescored (the run's model)", hypotheses, words, references))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.g2p_ensemble",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=pathlib.Path, metavar="RUN_DIR",
                        help="a finished kerasrnn-train g2p run of an ensemble")
    arguments = parser.parse_args(argv)
    missing = [n for n in ("metrics.json", "model.keras") if not (arguments.run / n).exists()]
    if missing:
        parser.error(f"{arguments.run} is not a finished g2p run: it has no {', '.join(missing)}")
    rows = ensemble_rows(arguments.run)
    columns = list(dict.fromkeys(column for row in rows for column in row))
    print_table(
        f"G2P ensemble {arguments.run.name}: test words decoded by its parts",
        [{column: row.get(column, "") for column in columns} for row in rows],
        columns,
    )
    return rows


if __name__ == "__main__":
    main()
