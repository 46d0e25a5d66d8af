"""Argument validation for every public constructor and function of kerasrnn.

Each check returns the value as a plain Python `int`, `float` or `bool`, so
that `get_config()` stays JSON, and raises a `ValueError` that names the
argument, the value received and what is allowed, in Keras's words
(`"Received: units=0"`). Like Keras, every check raises `ValueError`, a wrong
type included. NumPy integer and floating scalars are accepted wherever
Python numbers are (`np.int64(8)`, `np.float32(0.1)`); booleans are never
numbers, and only `True`/`False` (or `np.bool_`) are booleans.

The checks run in `__init__` or at the top of a function, before any
backend op.

Example:

>>> check_positive_int("units", np.int64(8))
8
>>> check_number("dropout", np.float32(0.25), low=0.0, high=1.0, high_open=True)
0.25
>>> check_bool("reset_after", "no")
Traceback (most recent call last):
    ...
ValueError: Argument `reset_after` must be a boolean (True or False). Received: reset_after='no'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection
from typing import Any, TypeGuard, TypeVar

import keras
import numpy as np
from numpy.typing import ArrayLike, NDArray

from kerasrnn.types import ActivationLike

_Choice = TypeVar("_Choice")


def _is_int(value: object) -> TypeGuard[int | np.integer]:
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_real(value: object) -> TypeGuard[numbers.Real]:
    return isinstance(value, numbers.Real) and not isinstance(
        value, (bool, np.bool_)
    )


def check_int(name: str, value: object, minimum: int) -> int:
    """Return `value` as an `int` if it is an integer ≥ `minimum`, else raise.

    Args:
        name: The argument's name, for the message.
        value: A Python or NumPy integer.
        minimum: The smallest value allowed.

    Returns:
        `int(value)`.
    """
    if not _is_int(value) or value < minimum:
        raise ValueError(
            f"Argument `{name}` must be an integer ≥ {minimum}. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_positive_int(name: str, value: object) -> int:
    """Return `value` as an `int` if it is an integer ≥ 1, else raise."""
    if not _is_int(value) or value <= 0:
        raise ValueError(
            f"Argument `{name}` must be a positive integer. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_ids(name: str, ids: ArrayLike, size: int) -> NDArray[np.int64]:
    """Return token ids as an int64 array if all lie in [0, `size`), else raise.

    A negative id would silently index from the end of a Python list and a
    float id would be truncated; both are refused here, as is an id a table
    of `size` rows does not have.

    Args:
        name: The argument's name, for the message.
        ids: Array-like of Python or NumPy integers, any shape.
        size: The number of ids (a vocabulary's or embedding's size).

    Returns:
        `np.ndarray` of int64, the shape of `ids`.
    """
    array = np.asarray(ids)
    if array.size == 0:
        return array.astype(np.int64)
    shown = repr(ids) if len(repr(ids)) <= 120 else repr(ids)[:117] + "..."
    if array.dtype.kind not in "iu":
        raise ValueError(
            f"Argument `{name}` must hold integer token ids. "
            f"Received: {name}={shown} (dtype {array.dtype})"
        )
    bad = (array < 0) | (array >= size)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"Argument `{name}` must hold token ids in [0, {size}). "
            f"Received: {name}={shown}, with {array[where].item()!r} at index "
            f"{where if len(where) > 1 else where[0]}"
        )
    return array.astype(np.int64)


def check_positive_int_list(
    name: str, values: object, allow_empty: bool = False
) -> tuple[int, ...]:
    """Return `values` as a tuple of `int`s if all are positive, else raise.

    Args:
        name: The argument's name, for the message.
        values: A list or tuple of Python or NumPy integers ≥ 1.
        allow_empty: Whether `()` is allowed.

    Returns:
        A tuple of `int`.
    """
    if (
        not isinstance(values, (list, tuple))
        or (not values and not allow_empty)
        or not all(_is_int(v) and v > 0 for v in values)
    ):
        what = "a list" if allow_empty else "a non-empty list"
        raise ValueError(
            f"Argument `{name}` must be {what} of positive integers. "
            f"Received: {name}={values!r}"
        )
    return tuple(int(v) for v in values)


def check_number(
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return `value` as a finite `float` inside an interval, else raise.

    Args:
        name: The argument's name, for the message.
        value: A Python or NumPy real number; NaN and ±inf are refused.
        low, high: Bounds of the interval; `None` for no bound.
        low_open, high_open: Whether the bound itself is excluded.

    Returns:
        `float(value)`.
    """
    if _is_real(value):
        # A float32 0.1 is stored as the 0.1 it prints as, not as
        # 0.10000000149011612: the number the caller wrote.
        number = (
            float(str(value)) if isinstance(value, np.floating) else float(value)
        )
        above = (
            low is None or (number > low if low_open else number >= low)
        )
        below = (
            high is None or (number < high if high_open else number <= high)
        )
        if math.isfinite(number) and above and below:
            return number
    if low is None and high is None:
        allowed = "a finite number"
    elif high is None:
        allowed = f"a finite number {'>' if low_open else '≥'} {low}"
    elif low is None:
        allowed = f"a finite number {'<' if high_open else '≤'} {high}"
    else:
        allowed = (
            "a number in "
            + ("(" if low_open else "[")
            + f"{low}, {high}"
            + (")" if high_open else "]")
        )
    raise ValueError(
        f"Argument `{name}` must be {allowed}. Received: {name}={value!r}"
    )


def check_rate(name: str, value: object) -> float:
    """Return a dropout rate as a `float` if it lies in [0, 1), else raise."""
    return check_number(name, value, low=0, high=1, high_open=True)


def check_bool(name: str, value: object) -> bool:
    """Return `value` as a `bool` if it is `True`/`False`, else raise.

    Truthiness is not enough: `"no"` is truthy, and a silent `True` would be
    the wrong model.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(
            f"Argument `{name}` must be a boolean (True or False). "
            f"Received: {name}={value!r}"
        )
    return bool(value)


def check_seed(name: str, value: object) -> int | None:
    """Return `None` or the seed as an `int`, else raise."""
    if value is None:
        return None
    if not _is_int(value):
        raise ValueError(
            f"Argument `{name}` must be an integer or None. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_choice(name: str, value: _Choice, choices: Collection[_Choice]) -> _Choice:
    """Return `value` if it is one of `choices`, else raise."""
    if value not in choices:
        raise ValueError(
            f"Argument `{name}` must be one of {tuple(choices)}. "
            f"Received: {name}={value!r}"
        )
    return value


def check_activation(name: str, identifier: ActivationLike) -> Callable[..., Any]:
    """`keras.activations.get(identifier)`, with an error naming `name`."""
    try:
        return keras.activations.get(identifier)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"Argument `{name}` must be a Keras activation (a name such as "
            f"'tanh' or 'sigmoid', a callable, or None). "
            f"Received: {name}={identifier!r}"
        ) from error
