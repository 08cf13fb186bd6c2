"""Input checks shared by every Part: each raises ``ValueError`` naming the argument, what it got and what is
allowed, and returns the checked value (numbers as float64 arrays where arrays are allowed).

Serves the closed forms and simulations of Parts II and III and the trainer of Part I (the chapters' inputs
are checked where they enter).
"""

from __future__ import annotations

import numbers

import numpy as np


def choice(name: str, value, allowed):
    """``value`` when it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def whole(name: str, value, least: int = 1, alternative: str = ""):
    """``value`` when it is a whole number (not a bool) >= ``least``; ``alternative`` names another allowed
    value in the message (e.g. ``or None (the whole split)``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}{' ' + alternative if alternative else ''}, "
                         f"got {value!r}")
    return value


def _finite(name: str, value, strict: bool) -> np.ndarray:
    bound = "> 0" if strict else ">= 0"
    if isinstance(value, (str, bytes, bool)):
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}") from None
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0 if strict else arr < 0):
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return arr


def positive(name: str, value) -> np.ndarray:
    """``value`` (a number or an array of them) as float64 when every entry is finite and > 0."""
    return _finite(name, value, strict=True)


def nonnegative(name: str, value) -> np.ndarray:
    """``value`` (a number or an array of them) as float64 when every entry is finite and >= 0."""
    return _finite(name, value, strict=False)
