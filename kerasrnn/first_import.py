"""Code run around the first import of another top-level package.

`import kerasrnn` loads neither Keras nor TensorFlow, yet what it did when it
loaded them itself still happens when they load later, whoever imports
them: TensorFlow's start-up lines are held back (`kerasrnn.native_output`)
and kerasrnn's classes are registered with Keras (`kerasrnn/__init__.py`).
`around_first_import` puts a finder at the front of `sys.meta_path` that
finds nothing of its own: asked for the package, it finds it as the finders
after it would, and the package's module then runs inside the given context
manager. This module imports neither package, and nothing of kerasrnn.
"""

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Sequence

#: What runs around a package's loading: a context manager factory.
Around = Callable[[], contextlib.AbstractContextManager[None]]


def around_first_import(name: str, around: Around) -> None:
    """Run the first import of the top-level package `name` inside `around()`.

    Nothing happens if `name` is imported already. The import is the
    package's own in everything else: its spec comes from the finders after
    this one (an `ImportError` of theirs reaches the importer unchanged), and
    its module sees its own loader.

    Args:
        name: A top-level package name, e.g. `"tensorflow"`.
        around: Called with no arguments as the package loads; the context
            manager it returns encloses the execution of the package's
            `__init__`, and may use the module in `sys.modules[name]` on
            leaving.
    """
    if name not in sys.modules:
        sys.meta_path.insert(0, _FirstImportFinder(name, around))


class _FirstImportFinder(importlib.abc.MetaPathFinder):
    """The finder of `around_first_import`. It stays in `sys.meta_path`
    once used, answering None: removing it could make an import running
    in another thread skip the finder that takes its place."""

    def __init__(self, name: str, around: Around) -> None:
        self.name = name
        self.around = around
        self.finding = False
        self.used = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self.used or self.finding:
            return None
        # `importlib.util.find_spec` asks every finder, this one included:
        # `finding` makes it answer None there.
        self.finding = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.finding = False
        if spec is None or spec.loader is None:
            return spec
        self.used = True
        spec.loader = _LoaderAround(spec.loader, self.around)
        return spec


class _LoaderAround(importlib.abc.Loader):
    """`loader`, its module executed inside `around()`."""

    def __init__(self, loader: importlib.abc.Loader, around: Around) -> None:
        self.loader = loader
        self.around = around

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        # The package sees the loader that found it, as without this finder.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        with self.around():
            self.loader.exec_module(module)
