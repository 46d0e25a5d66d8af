r"""Pronounce words with the LiteRT file of a `kerasrnn-train g2p` run.

    python examples/g2p_litert.py RUN_DIRECTORY WORD [WORD ...]

prints one line per word: the word, a tab, its ARPAbet phonemes. A word
that holds a backslash or a character that is not printable (a tab, a line
break, another control or separator character) is printed escaped as Python
writes it in a string (`\\`, `\t`, `\n`, `\x1b`, `\u2028`), so that each
word stays one line and the first tab ends it. It reads
`model.tflite` and `vocabulary.json` from the run directory and needs only
NumPy, `ai-edge-litert` and kerasrnn's bucket routing
(`kerasrnn.export.seq2seq_buckets`, which loads neither TensorFlow nor
Keras). The steps are the
ones `vocabulary.json` describes (see `kerasrnn.export.seq2seq_litert`): text to
token ids, the signature of the shortest bucket that holds the word (run
through LiteRT's `CompiledModel` with XNNPACK's weight cache: `Signatures`,
which can also split large batches between threads), the best hypothesis
back to tokens. A word longer than the file's
`max_source_length` is refused (exit status 1), since the file would read
only its beginning.

Before any word runs, the two files are checked against the contract and
against each other: a run directory, file or signature that is missing, a
`vocabulary.json` that is not the contract's, a `model.tflite` that is not
a seq2seq export or not the one its `vocabulary.json` was written with.
Each mistake is one line on stderr naming the path and what is wrong, exit
status 1; wrong arguments are one line, exit status 2.
"""

import argparse
import contextlib
import json
import os
import pathlib
import queue
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.cpu_options import CpuOptions
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.options import Options
from ai_edge_litert.tensor_buffer import TensorBuffer

from kerasrnn.export.seq2seq_buckets import bucket_calls

PROGRAM = "g2p_litert.py"

#: The files of a run directory that the client reads.
MODEL_FILE, VOCABULARY_FILE = "model.tflite", "vocabulary.json"

#: The input and the output of every signature that the client feeds and reads.
SOURCE_IDS, TARGET_IDS = "source_ids", "target_ids"

#: What the client reads from `vocabulary.json`.
REQUIRED_KEYS = (
    "inputs",
    "outputs",
    "source_tokens",
    "target_tokens",
    "pad_id",
    "end_id",
    "unknown_id",
    "max_source_length",
    "buckets",
    "source_text",
    "target_text",
)

#: XNNPACK's weight cache kept in memory, not in a file.
IN_MEMORY_WEIGHT_CACHE = ":memory"

#: Rows per thread from which `Signatures` splits a call between threads: on
#: one signature of the default g2p model, two interpreters on 8 rows each
#: were level with the compiled model on 16 rows, and faster from 16 rows
#: each.
SPLIT_ROWS_PER_THREAD = 16

#: `source_text["split"]`: how text becomes source tokens.
SPLITS = ("characters", "whitespace")


class UnusableRun(Exception):
    """A run directory, or a file in it, that the client cannot use; the
    message is the one line it prints."""


def not_one_export(run, detail):
    """The refusal of a `model.tflite` and a `vocabulary.json` in `run` that
    `detail` shows to come from different exports."""
    return UnusableRun(
        f"{run / MODEL_FILE} does not match {run / VOCABULARY_FILE}: {detail}; both "
        "must come from one seq2seq LiteRT export"
    )


def source_lookup(vocabulary):
    """Source token -> id, for the tokens text can become: the reserved
    tokens (padding, start, end, unknown) are never read from text."""
    first = vocabulary["unknown_id"] + 1
    tokens = vocabulary["source_tokens"]
    return {token: index for index, token in enumerate(tokens) if index >= first}


def source_ids(text, vocabulary, lookup=None):
    """`text` as source ids: stripped, lower-cased, split and looked up as
    `vocabulary["source_text"]` says; tokens outside the vocabulary dropped.
    `lookup` is `source_lookup(vocabulary)`, made once for many texts."""
    rules = vocabulary["source_text"]
    if rules["strip"]:
        text = text.strip()
    if rules["lowercase"]:
        text = text.lower()
    tokens = list(text) if rules["split"] == "characters" else text.split()
    lookup = source_lookup(vocabulary) if lookup is None else lookup
    return [lookup[token] for token in tokens if token in lookup]


def target_text(target_ids, vocabulary):
    """The tokens before the first `end_id`, padding left out, joined.

    Raises:
        UnusableRun: An id has no token in `vocabulary["target_tokens"]`,
            which happens when the vocabulary is another export's.
    """
    tokens = []
    count = len(vocabulary["target_tokens"])
    for index in target_ids.tolist():
        if index == vocabulary["end_id"]:
            break
        if not 0 <= index < count:
            raise UnusableRun(
                f"an answer holds target id {index}, outside its {count} target_tokens "
                f"(ids 0 to {count - 1})"
            )
        if index != vocabulary["pad_id"]:
            tokens.append(vocabulary["target_tokens"][index])
    return vocabulary["target_text"]["separator"].join(tokens)


class Signatures:
    """The signatures of a `model.tflite`, run through LiteRT's
    `CompiledModel` with XNNPACK's weight cache; large batches split between
    threads.

    The file unrolls its encoder, so each step's operators read the same
    weight tensors. XNNPACK packs the weights of every operator on its own
    unless a weight cache is given: then the operators that read one tensor
    share one packed copy, small enough to stay in the processor's cache
    from one step to the next, where separate copies are read from memory
    at each step. The answers are the same; one word runs faster.

    With `num_threads` above 1, calls of at least `SPLIT_ROWS_PER_THREAD`
    rows per thread are split into parts that run at once, each on an
    `Interpreter` of a thread of its own. An interpreter lets go of
    Python's lock while it runs and the compiled model does not, so only
    interpreters run at once; in large batches the weight cache matters
    little. Batches without a call that large run through the compiled
    model on one thread.
    """

    def __init__(self, path, num_threads=1):
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(
                f"Signatures: num_threads must be a positive int, got {num_threads!r}"
            )
        options = CpuOptions(num_threads=1, xnnpack_weight_cache_path=IN_MEMORY_WEIGHT_CACHE)
        self.model = CompiledModel.from_file(str(path), options=Options(cpu_options=options))
        self.outputs = {
            key: (signature["outputs"], self.model.get_output_tensor_details(key))
            for key, signature in self.model.get_signature_list().items()
        }
        self.buffers = {}
        self.num_threads = num_threads
        self.threads = self.idle = None
        if num_threads > 1:
            # One interpreter per thread, each with a runner per signature;
            # a part takes whichever is idle.
            self.idle = queue.SimpleQueue()
            for _ in range(num_threads):
                interpreter = Interpreter(str(path), num_threads=1)
                self.idle.put({key: interpreter.get_signature_runner(key) for key in self.outputs})
            self.threads = ThreadPoolExecutor(num_threads)

    def target_ids(self, signature, ids):
        """The `target_ids` that `signature` answers to `source_ids` `ids`
        `(batch, max_source_length)` int32: `(batch, max_target_length)`."""
        return self.target_ids_of([(signature, ids)])[0]

    def target_ids_of(self, calls):
        """`target_ids` for each `(signature, ids)` of `calls`, in order.

        On more than one thread, a call of at least `SPLIT_ROWS_PER_THREAD`
        rows per thread is split into `num_threads` parts; if any is, the
        parts and the calls left whole all run at once on the threads'
        interpreters (the shorter buckets of a batch too, so that no thread
        waits for them). Otherwise the calls run through the compiled model
        in turn.
        """
        parts = [
            np.array_split(ids, self.num_threads)
            if len(ids) >= SPLIT_ROWS_PER_THREAD * self.num_threads
            else [ids]
            for _, ids in calls
        ]
        if self.threads is None or all(len(call_parts) == 1 for call_parts in parts):
            return [self.compiled_target_ids(signature, ids) for signature, ids in calls]
        every_part = [
            (signature, part)
            for (signature, _), call_parts in zip(calls, parts)
            for part in call_parts
        ]
        answers = iter(self.threads.map(self.interpreted_target_ids, every_part))
        return [np.concatenate([next(answers) for _ in call_parts]) for call_parts in parts]

    def interpreted_target_ids(self, part):
        """`target_ids` of a `(signature, ids)` part through an idle interpreter."""
        signature, ids = part
        runners = self.idle.get()
        try:
            return runners[signature](**{SOURCE_IDS: ids})[TARGET_IDS]
        finally:
            self.idle.put(runners)

    def compiled_target_ids(self, signature, ids):
        """`target_ids` of `ids` through the compiled model."""
        index = self.model.get_signature_index(signature)
        shape, inputs, outputs, target = self.buffers.get(signature, (None,) * 4)
        if shape != ids.shape:
            self.model.resize_input_tensor(0, ids.shape, index)
            inputs = self.model.create_input_buffers(index)
            # The compiled model sizes its outputs for a batch of 1 until it
            # runs: their buffers are arrays of this batch's shapes.
            names, details = self.outputs[signature]
            arrays = [
                aligned_empty((len(ids), *details[name]["shape"][1:]), details[name]["dtype"])
                for name in names
            ]
            outputs = [TensorBuffer.create_from_host_memory(array) for array in arrays]
            target = arrays[names.index(TARGET_IDS)]
            self.buffers[signature] = ids.shape, inputs, outputs, target
        inputs[0].write(ids)
        self.model.run_by_index(index, inputs, outputs)
        return target.copy()

    def close(self):
        """Release the compiled model, which LiteRT announces on stderr,
        and the threads."""
        if self.threads is not None:
            self.threads.shutdown()
        with native_stderr_discarded():
            self.model = self.buffers = self.threads = self.idle = None


def aligned_empty(shape, dtype):
    """An uninitialised array whose data starts on a 64-byte boundary, as
    LiteRT's buffers over host memory require."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(dtype).reshape(shape)


def pronounce(signatures, vocabulary, words):
    """Each word's pronunciation, or None for a word too long for the file.

    The words that share a bucket make one call of its signature
    (`kerasrnn.export.seq2seq_buckets`), and the calls of all buckets go
    together to `signatures.target_ids_of` (`Signatures`).
    """
    lookup = source_lookup(vocabulary)
    sources = [source_ids(word, vocabulary, lookup) for word in words]
    calls, _ = bucket_calls(sources, vocabulary["buckets"], vocabulary["pad_id"])
    answers = [None] * len(words)
    target_ids = signatures.target_ids_of([(call.signature, call.source_ids) for call in calls])
    for call, rows in zip(calls, target_ids):
        for index, row in zip(call.rows, rows):
            answers[index] = target_text(row, vocabulary)
    return answers


def escaped(text):
    r"""`text` with each backslash and each character that is not printable
    (tab, line breaks, other control and separator characters) written as
    Python writes it inside a string literal: `\\`, `\t`, `\n`, `\x1b`,
    `\u2028`. Printable text, spaces and non-ASCII letters included, is
    left as it is."""
    return "".join(
        character if character.isprintable() and character != "\\" else repr(character)[1:-1]
        for character in text
    )


def shown(value):
    """`value` as JSON on one line, cut to at most 60 characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:56] + " ..."


def is_count(value):
    """Whether `value` is a positive int (JSON `true` is not)."""
    return type(value) is int and value > 0


def check_vocabulary(vocabulary, path):
    """Raise `UnusableRun` naming `path` and the key unless `vocabulary`, the
    parsed `vocabulary.json`, holds what the client reads, as the contract
    of `kerasrnn.export.seq2seq_litert` writes it."""
    if not isinstance(vocabulary, dict):
        raise UnusableRun(
            f"{path} must hold a JSON object, the vocabulary of a seq2seq LiteRT "
            f"export; it holds {shown(vocabulary)}"
        )
    missing = [key for key in REQUIRED_KEYS if key not in vocabulary]
    if missing:
        raise UnusableRun(
            f"{path} lacks {', '.join(missing)}: it is not the vocabulary.json of a "
            "seq2seq LiteRT export (kerasrnn.seq2seq.export_litert)"
        )

    def require(name, value, holds, allowed):
        if not holds(value):
            raise UnusableRun(f"{path}: {name} must be {allowed}; it is {shown(value)}")

    require(
        "inputs", vocabulary["inputs"], lambda names: names == [SOURCE_IDS], f'["{SOURCE_IDS}"]'
    )
    require(
        "outputs",
        vocabulary["outputs"],
        lambda names: (
            isinstance(names, list)
            and TARGET_IDS in names
            and all(isinstance(name, str) for name in names)
        ),
        f'a list of output names with "{TARGET_IDS}"',
    )
    for key in ("source_tokens", "target_tokens"):
        require(
            key,
            vocabulary[key],
            lambda tokens: (
                isinstance(tokens, list)
                and tokens
                and all(isinstance(token, str) for token in tokens)
            ),
            "a non-empty list of token strings",
        )
    for key, lists in (
        ("pad_id", ("source_tokens", "target_tokens")),
        ("end_id", ("target_tokens",)),
        ("unknown_id", ("source_tokens",)),
    ):
        size = min(len(vocabulary[name]) for name in lists)
        require(
            key,
            vocabulary[key],
            lambda index, size=size: type(index) is int and 0 <= index < size,
            f"an id in [0, {size}), an index of {' and '.join(lists)}",
        )
    require("max_source_length", vocabulary["max_source_length"], is_count, "a positive int")
    buckets = vocabulary["buckets"]
    require("buckets", buckets, lambda value: isinstance(value, list) and value, "a non-empty list")
    for index, bucket in enumerate(buckets):
        name = f"buckets[{index}]"
        require(
            name,
            bucket,
            lambda value: (
                isinstance(value, dict)
                and {"signature", "max_source_length", "max_target_length"} <= value.keys()
            ),
            "an object with signature, max_source_length and max_target_length",
        )
        require(f"{name}.signature", bucket["signature"], lambda s: isinstance(s, str), "a string")
        for key in ("max_source_length", "max_target_length"):
            require(f"{name}.{key}", bucket[key], is_count, "a positive int")
    lengths = [bucket["max_source_length"] for bucket in buckets]
    require(
        "buckets' max_source_length",
        lengths,
        lambda values: (
            values == sorted(set(values)) and values[-1] == vocabulary["max_source_length"]
        ),
        f"increasing, the last max_source_length={vocabulary['max_source_length']}",
    )
    rules = vocabulary["source_text"]
    require("source_text", rules, lambda value: isinstance(value, dict), "an object")
    for key in ("strip", "lowercase"):
        require(
            f"source_text.{key}", rules.get(key), lambda flag: isinstance(flag, bool), "a boolean"
        )
    require(
        "source_text.split",
        rules.get("split"),
        lambda split: split in SPLITS,
        " or ".join(json.dumps(split) for split in SPLITS),
    )
    require(
        "source_text.unknown_tokens",
        rules.get("unknown_tokens"),
        lambda policy: policy == "drop",
        '"drop", the one way this client reads',
    )
    rules = vocabulary["target_text"]
    require("target_text", rules, lambda value: isinstance(value, dict), "an object")
    require(
        "target_text.separator", rules.get("separator"), lambda s: isinstance(s, str), "a string"
    )


def expected_tensors(bucket):
    """`{tensor name: (dtype name, shape signature)}` of a bucket's signature,
    as the contract has them; the batch is -1, free."""
    source, target = bucket["max_source_length"], bucket["max_target_length"]
    return {
        SOURCE_IDS: ("int32", [-1, source]),
        TARGET_IDS: ("int32", [-1, target]),
        "scores": ("float32", [-1]),
        "alignments": ("float32", [-1, target, source]),
    }


def check_model(interpreter, vocabulary, run):
    """Raise `UnusableRun` naming the files of `run` unless the interpreter's
    signatures are the buckets of `vocabulary`, each with its input and
    outputs, dtypes and lengths."""
    signatures = interpreter.get_signature_list()
    if not any(
        signature["inputs"] == [SOURCE_IDS] and TARGET_IDS in signature["outputs"]
        for signature in signatures.values()
    ):
        found = "; ".join(
            f"{key} takes {', '.join(signature['inputs'])}" for key, signature in signatures.items()
        )
        raise UnusableRun(
            f"{run / MODEL_FILE} is not a seq2seq LiteRT export: no signature takes "
            f"{SOURCE_IDS} and gives {TARGET_IDS} ({found or 'it has no signature'})"
        )

    listed = [bucket["signature"] for bucket in vocabulary["buckets"]]
    if sorted(signatures) != sorted(listed):
        raise not_one_export(
            run,
            f"its signatures are {', '.join(sorted(signatures))}, while the "
            f"buckets list {', '.join(listed)}",
        )
    for bucket in vocabulary["buckets"]:
        key = bucket["signature"]
        runner = interpreter.get_signature_runner(key)
        inputs, outputs = runner.get_input_details(), runner.get_output_details()
        if sorted(inputs) != sorted(vocabulary["inputs"]):
            raise not_one_export(
                run,
                f"signature {key} takes {', '.join(sorted(inputs))}, not "
                f"{', '.join(vocabulary['inputs'])}",
            )
        if sorted(outputs) != sorted(vocabulary["outputs"]):
            raise not_one_export(
                run,
                f"signature {key} gives {', '.join(sorted(outputs))}, not "
                f"{', '.join(sorted(vocabulary['outputs']))}",
            )
        details = {**inputs, **outputs}
        for name, (wanted_dtype, wanted_shape) in expected_tensors(bucket).items():
            if name not in details:  # alignments, of attention models only
                continue
            detail = details[name]
            dtype, shape = np.dtype(detail["dtype"]).name, detail["shape_signature"].tolist()
            if (dtype, shape) != (wanted_dtype, wanted_shape):
                raise not_one_export(
                    run,
                    f"signature {key}'s {name} is {dtype} {shape}, where the bucket's "
                    f"max_source_length={bucket['max_source_length']} and "
                    f"max_target_length={bucket['max_target_length']} make it "
                    f"{wanted_dtype} {wanted_shape}",
                )


def open_run(run):
    """`(signatures, vocabulary)` of the run directory `run`, both checked:
    `Signatures` of its `model.tflite` and its `vocabulary.json`.

    Raises:
        UnusableRun: A path is missing or unreadable, a file is not what
            the contract says, or the two files are not from one export.
    """
    if not run.exists():
        raise UnusableRun(f"{run} does not exist: give the directory of a g2p run")
    if not run.is_dir():
        raise UnusableRun(f"{run} is not a directory: give the directory of a g2p run")
    vocabulary_path, model_path = run / VOCABULARY_FILE, run / MODEL_FILE
    for path in (vocabulary_path, model_path):
        if not path.exists():
            raise UnusableRun(
                f"{path} does not exist: a g2p run directory holds model.tflite and "
                "vocabulary.json (kerasrnn-train g2p writes them beside saved_model/)"
            )
    try:
        vocabulary = json.loads(vocabulary_path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UnusableRun(f"{vocabulary_path} cannot be read: {error.strerror}") from None
    except ValueError as error:  # not UTF-8, or not JSON
        raise UnusableRun(f"{vocabulary_path} is not valid JSON: {error}") from None
    check_vocabulary(vocabulary, vocabulary_path)
    if not model_path.is_file():
        raise UnusableRun(f"{model_path} is not a file")
    try:
        interpreter = Interpreter(str(model_path))
    except (ValueError, RuntimeError) as error:
        raise UnusableRun(f"{model_path} is not a LiteRT model: {first_line(error)}") from None
    # The interpreter's signature details show the free batch dimension the
    # checks compare (the compiled model's show a batch of 1); it allocates
    # nothing for them, and the compiled model serves.
    check_model(interpreter, vocabulary, run)
    with native_stderr_discarded():
        signatures = Signatures(model_path)
    return signatures, vocabulary


def first_line(error):
    """The first line of `error`'s message, so that what is printed is one line."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


@contextlib.contextmanager
def native_stderr_discarded():
    """File descriptor 2 sent to the null device inside the block: LiteRT
    announces its environment and XNNPACK there from C++ as it compiles a
    model, which `sys.stderr` cannot catch. Its failures reach Python as
    exceptions, with their message, so a refusal stays one line: unlike
    `kerasrnn.native_output.held_back_stderr`, nothing is shown on failure."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class Parser(argparse.ArgumentParser):
    """An `argparse` parser whose refusals are one line, exit status 2."""

    def error(self, message):
        self.exit(2, f"{PROGRAM}: {message} (see {PROGRAM} --help)\n")


def main(argv=None):
    parser = Parser(prog=PROGRAM, description=__doc__.splitlines()[0])
    parser.add_argument("run", type=pathlib.Path, help="a g2p run directory")
    parser.add_argument("words", nargs="+")
    arguments = parser.parse_args(argv)
    try:
        signatures, vocabulary = open_run(arguments.run)
        try:
            with native_stderr_discarded():
                answers = pronounce(signatures, vocabulary, arguments.words)
        except UnusableRun as error:
            raise not_one_export(arguments.run, error) from None
        # The checks above leave LiteRT little to fail on; if it
        # does, its message is the line printed.
        except (RuntimeError, ValueError) as error:
            raise UnusableRun(
                f"{arguments.run / MODEL_FILE} failed to run: {first_line(error)}"
            ) from None
        finally:
            signatures.close()
    except UnusableRun as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    status = 0
    for word, phonemes in zip(arguments.words, answers):
        if phonemes is None:
            print(
                f"{escaped(word)}: longer than {vocabulary['max_source_length']} letters",
                file=sys.stderr,
            )
            status = 1
        else:
            print(f"{escaped(word)}\t{escaped(phonemes)}")
    return status


if __name__ == "__main__":
    status = main()
    # LiteRT announces on file descriptor 2 that it releases its accelerators
    # as the process ends, after the last line of ours.
    sys.stderr.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    sys.exit(status)
