"""The TensorFlow and Keras releases the test suite passes on, and the
warning `import kerasrnn` gives beside any other.

`TESTED` is the one list of them: `noxfile.py` reads its oldest minors for
the `floor` session. It is read without importing TensorFlow or Keras (the
versions come from the installed distributions' metadata), so that the
check costs nothing and a package that fails to import is still named.
"""

import importlib.metadata
import re
import warnings

#: Package -> the oldest and the newest minor release `(major, minor)` the
#: test suite passes on; every minor between them is tested too. Keras's
#: newest is its nightly, which the `canary` session runs.
TESTED: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "tensorflow": ((2, 20), (2, 21)),
    "keras": ((3, 13), (3, 16)),
}

#: Package -> the distributions that install it, looked up in this order.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly"),
    "keras": ("keras", "keras-nightly"),
}


def minor_release(version: str) -> tuple[int, int] | None:
    """`(major, minor)` of a version string (`"3.16.0.dev2026102704"` ->
    `(3, 16)`), or None where it starts with no `major.minor`."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def is_tested(package: str, version: str) -> bool:
    """Whether `version` of `package` (a key of `TESTED`) is a patch
    release of a tested minor; a version that names no minor counts as
    tested, since nothing can be said of it."""
    minor = minor_release(version)
    oldest, newest = TESTED[package]
    return minor is None or oldest <= minor <= newest


def installed_version(package: str) -> str | None:
    """The installed version of `package` (a key of `DISTRIBUTIONS`), or
    None where no distribution of it is installed."""
    for distribution in DISTRIBUTIONS[package]:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def tested_range(package: str) -> str:
    """`"keras 3.13 to 3.16"`: the tested minors of `package`."""
    (oldest_major, oldest_minor), (newest_major, newest_minor) = TESTED[package]
    return f"{package} {oldest_major}.{oldest_minor} to {newest_major}.{newest_minor}"


def warn_if_untested() -> None:
    """One `UserWarning` naming every package installed at a minor release
    outside `TESTED`, its version and the tested ones; nothing otherwise
    (a package not installed at all is not this check's business: the
    JAX backend runs without TensorFlow)."""
    untested = []
    for package in TESTED:
        version = installed_version(package)
        if version is not None and not is_tested(package, version):
            untested.append(f"{package} {version} (tested: {tested_range(package)})")
    if untested:
        warnings.warn(
            "kerasrnn's test suite has not run on "
            + " or ".join(untested)
            + "; it may still work. Installing a tested release avoids the risk.",
            UserWarning,
            # Called by kerasrnn/__init__.py: shown at the program's
            # `import kerasrnn` (the import machinery's frames are skipped).
            stacklevel=3,
        )
