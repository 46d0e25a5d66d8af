"""What importing kerasrnn loads, prints and registers, and which way its
packages' imports run.

`import kerasrnn` (and `kerasrnn.allowed`) loads neither Keras nor
TensorFlow; every public name still resolves on first use. When TensorFlow
loads after it, by kerasrnn's first use or by `import keras`, TensorFlow's
start-up lines are held back, which a process that imports TensorFlow alone
shows, and Keras finds kerasrnn's saved classes. The import graph of
kerasrnn's modules, read from their source, has no cycle through a package's
`__init__`: `kerasrnn.export` builds on `kerasrnn.seq2seq`, never the reverse.
"""

import ast
import re
import subprocess
import sys

import pytest

import kerasrnn
from kerasrnn import seq2seq
from tests.isolated import REPOSITORY, last_json, run_without, subprocess_env

PACKAGE = REPOSITORY / "kerasrnn"

#: A line TensorFlow's C++ prints as it starts: a log line (severity, date,
#: time, thread, `file.cc:line]`), or absl's notice before its first one.
START_UP_LINE = re.compile(
    r"^(?:[IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\]|WARNING: All log messages before absl).*$",
    re.MULTILINE,
)

#: What the subprocesses report after their imports.
REPORT = """
import json
import sys

import keras

print(json.dumps({
    "registered": [
        getattr(keras.saving.get_registered_object(name), "__name__", None)
        for name in ("kerasrnn>LSTMCell", "kerasrnn>Seq2Seq")
    ],
}))
"""

#: Case -> (the imports, whether TensorFlow's start-up lines are shown).
IMPORT_ORDERS = {
    "tensorflow alone": ("import tensorflow as tf\ntf.config.list_physical_devices()", True),
    "kerasrnn, then keras": ("import kerasrnn\nimport keras", False),
    "kerasrnn, then its first use": (
        "import kerasrnn\nfrom kerasrnn import LSTMCell\nLSTMCell(2)",
        False,
    ),
}


@pytest.mark.slow
def test_import_kerasrnn_loads_neither_keras_nor_tensorflow():
    program = """
        import json
        import sys

        import kerasrnn.allowed
        import kerasrnn

        heavy = sorted(
            name for name in sys.modules if name.partition(".")[0] in ("keras", "tensorflow")
        )
        print(json.dumps({
            "heavy": heavy,
            "dir": [name for name in kerasrnn.__all__ if name not in dir(kerasrnn)],
            "allowed": kerasrnn.allowed.QUANTIZE_OPTIONS,
        }))
        """
    report = last_json(run_without((), program))
    assert report == {"heavy": [], "dir": [], "allowed": [None, "float16", "dynamic_int8"]}


@pytest.mark.slow
@pytest.mark.parametrize("case", IMPORT_ORDERS)
def test_tensorflow_loaded_after_import_kerasrnn_keeps_its_start_up_back(case):
    imports, shown = IMPORT_ORDERS[case]
    # TensorFlow's own log level, as a reader's program has it.
    environment = subprocess_env()
    del environment["TF_CPP_MIN_LOG_LEVEL"]
    completed = subprocess.run(
        [sys.executable, "-c", imports + "\n" + REPORT],
        capture_output=True, text=True, cwd=REPOSITORY, env=environment, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    start_up = START_UP_LINE.findall(completed.stderr)
    assert bool(start_up) is shown, completed.stderr[-3000:]
    if case != "tensorflow alone":
        # On Keras's default backend, TensorFlow: the cells and the
        # sequence-to-sequence models are registered alike.
        assert last_json(completed)["registered"] == ["LSTMCell", "Seq2Seq"]


def test_every_public_name_resolves_and_is_listed():
    assert set(kerasrnn.__all__) <= set(dir(kerasrnn))
    for name in kerasrnn.__all__:
        assert getattr(kerasrnn, name) is not None, name
    from kerasrnn import LSTMCell
    from kerasrnn.cells.lstm import LSTMCell as defined

    assert LSTMCell is defined
    with pytest.raises(AttributeError, match="has no attribute 'LSTMcell'"):
        kerasrnn.LSTMcell  # noqa: B018


def test_seq2seq_exports_are_found_where_users_find_them():
    from kerasrnn.export import cell_litert, seq2seq_litert, seq2seq_savedmodel

    assert {"export_litert", "export_serving", "StringSeq2Seq"} <= set(dir(seq2seq))
    assert seq2seq.export_litert is seq2seq_litert.export_litert
    assert seq2seq.export_serving is seq2seq_savedmodel.export_serving
    assert seq2seq.StringSeq2Seq is seq2seq_savedmodel.StringSeq2Seq
    assert kerasrnn.export_litert is cell_litert.export_litert
    with pytest.raises(AttributeError, match="has no attribute 'export_savedmodel'"):
        seq2seq.export_savedmodel  # noqa: B018


def module_name(path):
    """`kerasrnn/seq2seq/model.py` -> `kerasrnn.seq2seq.model`;
    a package's `__init__.py` -> the package."""
    parts = path.relative_to(REPOSITORY).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(node):
    """Whether `node` is `if TYPE_CHECKING:`, whose imports never run."""
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def import_time_imports(statements, package):
    """The dotted names imported by `statements` as their module runs:
    function bodies (run later) and `if TYPE_CHECKING:` blocks left out,
    class bodies, `try`, `with` and other `if` blocks in. `package` is the
    module's package, for relative imports."""
    names = set()
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        if is_type_checking(node):
            names |= import_time_imports(node.orelse, package)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            names |= import_time_imports(getattr(node, field, []), package)
    return names


def ancestors(name):
    """`a.b.c` -> `a`, `a.b`: the packages whose `__init__` importing it runs."""
    parts = name.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts))}


def import_graph():
    """Module -> the kerasrnn modules its import runs: what it imports and
    those modules' packages, less its own packages (running before it)."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        runs = set()
        for imported in import_time_imports(tree.body, package):
            runs |= {imported} | ancestors(imported)
        graph[name] = {
            module for module in runs
            if module in paths and module != name and module not in ancestors(name)
        }
    return graph


def find_cycle(graph):
    """A list of modules each importing the next and the last the first,
    or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return stack[stack.index(target):]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_import_graph_finds_what_a_package_init_runs():
    # Checked on modules whose imports are worked out by hand.
    graph = import_graph()
    light = {"kerasrnn.first_import", "kerasrnn.native_output", "kerasrnn.optional_tensorflow"}
    assert light <= graph["kerasrnn"]
    heavy = ("kerasrnn.cells", "kerasrnn.seq2seq", "kerasrnn.export", "kerasrnn.params")
    assert not {name for name in graph["kerasrnn"] if name.startswith(heavy)}
    assert graph["kerasrnn.native_output"] == {"kerasrnn.first_import"}
    assert {"kerasrnn.seq2seq", "kerasrnn.seq2seq.specs"} <= graph["kerasrnn.export.seq2seq_litert"]


def test_find_cycle_finds_a_loop_and_only_a_loop():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_have_no_cycle_and_export_builds_on_seq2seq():
    graph = import_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
    upward = {
        (module, target)
        for module, targets in graph.items() if module.startswith("kerasrnn.seq2seq")
        for target in targets if target.startswith("kerasrnn.export")
    }
    assert not upward
