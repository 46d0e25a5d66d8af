"""The repository lints clean, kerasrnn type-checks, and the public API is documented and typed.

ruff and mypy read their settings from pyproject.toml. The public API is
every name in `kerasrnn.__all__` and `kerasrnn.seq2seq.__all__` (the public
functions and classes of a module listed there too), and the pipelines'
entry points: the command's `main`, the task registry and each task's
configuration class and `run`.
"""

import dataclasses
import importlib
import inspect
import pathlib
import subprocess
import sys
import types

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


def run_checker(*command):
    """Run `python -m <command>` in the repository; fail with what it printed."""
    completed = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, (
        f"`{' '.join(command)}` exited with {completed.returncode}:\n"
        f"{completed.stdout}{completed.stderr}"
    )


def test_ruff_finds_nothing_in_the_repository():
    run_checker("ruff", "check", "--output-format", "concise", ".")


@pytest.mark.slow
def test_mypy_finds_nothing_in_kerasrnn():
    # The cache (.mypy_cache, ignored by git) makes a second run take seconds
    # instead of the half minute a fresh clone's first run takes.
    run_checker("mypy")


# ----------------------------------------------------------- the public API
def where(obj):
    """`path:line` of an object's definition, the path relative to the repository."""
    obj = inspect.unwrap(obj)
    try:
        path = pathlib.Path(inspect.getsourcefile(obj)).resolve()
        line = inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return f"<no source for {obj!r}>"
    try:
        path = path.relative_to(REPOSITORY)
    except ValueError:
        pass
    return f"{path}:{line}"


def is_generated(function):
    """Whether `function` was written by dataclasses or NamedTuple, typed by construction."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    return code is None or code.co_filename.startswith("<")


def has_own_docstring(obj):
    """A docstring written for `obj`, not the `Name(field, ...)` one that
    dataclasses and NamedTuple generate."""
    doc = obj.__doc__ if isinstance(obj, type) else inspect.getdoc(obj)
    if not doc or not doc.strip():
        return False
    return not (isinstance(obj, type) and doc.startswith(f"{obj.__name__}("))


def missing_annotations(function, bound):
    """The parameters of `function` without a type hint, and `return` if
    its result has none. `bound`: the first parameter is `self` or `cls`."""
    parameters = list(inspect.signature(function).parameters.values())
    if bound:
        parameters = parameters[1:]
    missing = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    returns = inspect.signature(function).return_annotation
    if returns is inspect.Signature.empty and function.__name__ != "__init__":
        missing.append("return")
    return missing


def check_function(name, function, problems, bound=False, documented=True):
    if is_generated(function):
        return
    if documented and not has_own_docstring(function):
        problems.append(f"{where(function)}: {name} has no docstring")
    missing = missing_annotations(function, bound)
    if missing:
        problems.append(f"{where(function)}: {name} lacks type hints for {', '.join(missing)}")


def check_class(name, cls, problems):
    if not has_own_docstring(cls):
        problems.append(f"{where(cls)}: {name} has no docstring")
    for attribute, value in vars(cls).items():
        if attribute.startswith("_") and attribute not in ("__init__", "__call__"):
            continue
        qualified = f"{name}.{attribute}"
        # Methods overriding a documented Keras method inherit its docstring;
        # `__init__` is documented by the class's `Args:`.
        documented = attribute != "__init__"
        if isinstance(value, staticmethod):
            check_function(qualified, value.__func__, problems, documented=documented)
        elif isinstance(value, classmethod):
            check_function(qualified, value.__func__, problems, bound=True, documented=documented)
        elif isinstance(value, property):
            if value.fget is not None:
                check_function(qualified, value.fget, problems, bound=True)
        elif inspect.isfunction(value):
            check_function(qualified, value, problems, bound=True, documented=documented)


def check_object(name, obj, problems):
    if isinstance(obj, types.ModuleType):
        if not has_own_docstring(obj):
            problems.append(f"{obj.__file__}:1: module {name} has no docstring")
        for member, value in module_members(obj):
            check_object(f"{name}.{member}", value, problems)
    elif isinstance(obj, type):
        check_class(name, obj, problems)
    elif callable(obj):
        check_function(name, obj, problems)
    # Constants (ids, tuples of choices) are documented by their module.


def module_members(module):
    """The public functions and classes of `module`: its `__all__`, or the
    names it defines that do not start with an underscore."""
    if hasattr(module, "__all__"):
        return [(name, getattr(module, name)) for name in module.__all__]
    return [
        (name, value)
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or isinstance(value, type))
        and value.__module__ == module.__name__
    ]


def public_api():
    """(dotted name, object) of every entry point the project promises."""
    import kerasrnn
    import kerasrnn.seq2seq
    from kerasrnn_pipelines import cli, tasks

    entries = [(f"kerasrnn.{n}", getattr(kerasrnn, n)) for n in kerasrnn.__all__]
    entries += [
        (f"kerasrnn.seq2seq.{n}", getattr(kerasrnn.seq2seq, n))
        for n in kerasrnn.seq2seq.__all__
    ]
    entries += [
        ("kerasrnn_pipelines.cli.main", cli.main),
        ("kerasrnn_pipelines.tasks.load_task", tasks.load_task),
        ("kerasrnn_pipelines.tasks.load_config_class", tasks.load_config_class),
    ]
    for task in tasks.TASKS:
        config_class = tasks.load_config_class(task)
        assert dataclasses.is_dataclass(config_class), config_class
        entries.append((f"{task} configuration {config_class.__name__}", config_class))
        module = importlib.import_module(tasks.TASKS[task])
        entries.append((f"{module.__name__}.run", module.run))
    return entries


def test_every_public_name_has_a_docstring_and_type_hints():
    problems = []
    for name, obj in public_api():
        check_object(name, obj, problems)
    assert not problems, (
        f"{len(problems)} public names lack a docstring or type hints:\n"
        + "\n".join(sorted(set(problems)))
    )


def test_the_distribution_ships_the_typed_marker():
    import tomllib

    setuptools = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert (REPOSITORY / "kerasrnn" / "py.typed").is_file()
    assert "py.typed" in setuptools["package-data"]["kerasrnn"]
