"""The one schema a results line is checked against when it is read: which fields a record of each status has,
their types, and the ranges of their values.

:func:`check_fields` returns nothing for a valid record's JSON object and raises ``ValueError`` naming the first
field that is wrong and what it must be. Numbers are JSON numbers (``true``/``false`` are not numbers);
accuracies are fractions in [0, 1]; epochs, steps and counts are whole numbers >= 0; every value is finite,
except the losses of a ``diverged`` run. :func:`decode` turns one line into its JSON object with a bounded
parser: nesting deeper than :data:`MAX_DEPTH` or an integer longer than :data:`MAX_DIGITS` digits is refused
with a message instead of exhausting the interpreter.

Serves the appendix "Results files" (``results_format``), which states this schema for readers.
"""

from __future__ import annotations

import itertools
import json
import math
import re

STATUSES = ("ok", "diverged", "failed")
COMMON_FIELDS = ("id", "experiment", "scale", "status", "config", "provenance")
FINISHED_FIELDS = ("summary", "history", "layer_names", "diverged_epoch")  # ok and diverged runs only
FAILED_FIELDS = ("error",)  # failed runs only
HISTORY_FIELDS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc",
                  "weight_norm", "layer_norms", "steps", "T_SGD", "T_L2", "T_adapt")
HISTORY_GEOMETRY = ("init_distance", "init_cosine", "layer_distance", "layer_cosine")  # newer records only
CLOCKS = ("T_SGD", "T_L2", "T_adapt")
MAX_DEPTH = 8  # a record nests 4 deep (history -> layer_norms -> one epoch's list -> a number)
MAX_DIGITS = 30
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')  # JSON strings, whose brackets do not nest
_BRACKETS = re.compile(rb"[\[\]{}]")


def decode(line: bytes) -> dict:
    """The JSON object of one line; ``ValueError`` says why it is not one (not JSON, not an object, nested
    deeper than :data:`MAX_DEPTH`, an integer of more than :data:`MAX_DIGITS` digits)."""
    depth = level = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b"", line)):  # counted before the recursive parser runs
        level += 1 if bracket in b"[{" else -1
        depth = max(depth, level)
    if depth > MAX_DEPTH:
        raise ValueError(f"JSON nested {depth} levels deep (a record nests at most {MAX_DEPTH})")

    def bounded_int(text: str) -> int:
        if len(text.lstrip("-")) > MAX_DIGITS:
            raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
        return int(text)

    try:
        obj = json.loads(line, parse_int=bounded_int)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a JSON {type(obj).__name__}, not an object")
    return obj


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check(name: str, value, kind: str, nullable: bool = False, finite: bool = True) -> None:
    """``kind``: ``fraction`` (in [0, 1]), ``count`` (whole number >= 0), ``norm`` (number >= 0) or ``number``."""
    if value is None and nullable:
        return
    allowed = {"fraction": "a number in [0, 1]", "count": "a whole number >= 0", "norm": "a finite number >= 0",
               "number": "a finite number" if finite else "a number"}[kind] + (" or null" if nullable else "")
    ok = _is_number(value) and (not finite or math.isfinite(value))
    if ok and kind == "fraction":
        ok = 0.0 <= value <= 1.0
    elif ok and kind == "count":
        ok = isinstance(value, int) and value >= 0
    elif ok and kind == "norm":
        ok = value >= 0
    if not ok:
        raise ValueError(f"{name} is {json.dumps(value, allow_nan=True)[:40]}; it must be {allowed}")


def _history_kind(key: str) -> str:
    if key.endswith("_acc"):
        return "fraction"
    if key in ("epoch", "steps"):
        return "count"
    return "norm" if key in ("weight_norm", "init_distance", *CLOCKS) else "number"


def check_history(history: dict, layer_names: list, diverged: bool) -> None:
    """Every list of :data:`HISTORY_FIELDS` (and of :data:`HISTORY_GEOMETRY`, all four or none), one entry per
    recorded epoch (at least epoch 0), epochs rising from 0; per-layer lists as long as ``layer_names``."""
    missing = [k for k in HISTORY_FIELDS if k not in history]
    geometry = [k for k in HISTORY_GEOMETRY if k in history]
    unknown = sorted(set(history) - set(HISTORY_FIELDS) - set(HISTORY_GEOMETRY))
    if missing:
        raise ValueError(f"history lacks {', '.join(missing)}")
    if geometry and len(geometry) != len(HISTORY_GEOMETRY):
        raise ValueError(f"history has {', '.join(geometry)} without the rest of {', '.join(HISTORY_GEOMETRY)}")
    if unknown:
        raise ValueError(f"history has unknown key(s) {', '.join(unknown)}; known: "
                         f"{', '.join(HISTORY_FIELDS + HISTORY_GEOMETRY)}")
    lengths = {k: len(v) if isinstance(v, list) else None for k, v in history.items()}
    if None in lengths.values():
        raise ValueError(f"history.{next(k for k, n in lengths.items() if n is None)} must be a list")
    if len(set(lengths.values())) != 1 or not lengths["epoch"]:
        raise ValueError(f"history lists must hold one entry per recorded epoch (at least epoch 0); lengths "
                         f"{lengths}")
    for key, values in history.items():
        per_layer = key in ("layer_norms", "layer_distance", "layer_cosine")
        for t, value in enumerate(values):
            if per_layer:
                if not isinstance(value, list) or len(value) != len(layer_names):
                    raise ValueError(f"history.{key}[{t}] must be a list of {len(layer_names)} numbers, one per "
                                     "layer of layer_names")
                for j, v in enumerate(value):
                    _check(f"history.{key}[{t}][{j}]", v, "norm" if key != "layer_cosine" else "number")
            else:
                _check(f"history.{key}[{t}]", value, _history_kind(key),
                       finite=not (diverged and key.endswith("_loss")))
    if history["epoch"][0] != 0 or any(b <= a for a, b in itertools.pairwise(history["epoch"])):
        raise ValueError(f"history.epoch must rise from 0, got {history['epoch'][:5]}...")


def check_summary(summary: dict) -> None:
    """The :class:`fibook.forgetting.evaluation.Summary` fields' values (their names are checked by the class)."""
    kinds = {"selected_epoch": ("count", True), "selected_test_acc": ("fraction", True),
             "selected_val_acc": ("fraction", True), "final_train_acc": ("fraction", False),
             "final_test_acc": ("fraction", False), "tau_interp": ("count", True), "repair_gap": ("number", True),
             "init_weight_norm": ("norm", False), "final_weight_norm": ("norm", False), "steps": ("count", False)}
    for key, (kind, nullable) in kinds.items():
        if key in summary:
            _check(f"summary.{key}", summary[key], kind, nullable)
    clocks = summary.get("clocks")
    if not isinstance(clocks, dict) or sorted(clocks) != sorted(CLOCKS):
        raise ValueError(f"summary.clocks must be an object of {', '.join(CLOCKS)}")
    for key in CLOCKS:
        _check(f"summary.clocks.{key}", clocks[key], "norm")


def check_fields(obj: dict) -> None:
    """Check a record's JSON object against the schema (all but its config, id, experiment and scale, which
    :meth:`fibook.forgetting.records.Record.from_json` checks against its file); ``ValueError`` names what is wrong."""
    status = obj.get("status")
    if status not in STATUSES:
        raise ValueError(f"status {json.dumps(status)[:40]} is not one of {', '.join(STATUSES)}")
    needed = COMMON_FIELDS + (FAILED_FIELDS if status == "failed" else FINISHED_FIELDS)
    missing = [f for f in needed if f not in obj]
    if missing:
        raise ValueError(f"{status!r} records need the field(s) {', '.join(missing)}")
    unknown = [f for f in obj if f not in needed]
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)} for a {status!r} record; it has: "
                         f"{', '.join(needed)}")
    types = {"id": str, "experiment": str, "scale": str, "config": dict, "provenance": dict, "summary": dict,
             "history": dict, "layer_names": list, "error": str}
    wrong = [f for f, t in types.items() if f in obj and not isinstance(obj[f], t)]
    if wrong:
        raise ValueError(f"wrong type: {', '.join(f'{f} (must be {types[f].__name__})' for f in wrong)}")
    if status == "failed":
        return
    if not all(isinstance(n, str) for n in obj["layer_names"]):
        raise ValueError("layer_names must be a list of strings")
    diverged = status == "diverged"
    if diverged:
        _check("diverged_epoch", obj["diverged_epoch"], "count")
    elif obj["diverged_epoch"] is not None:
        raise ValueError(f"diverged_epoch is {obj['diverged_epoch']!r} in an 'ok' record; it must be null")
    check_summary(obj["summary"])
    check_history(obj["history"], obj["layer_names"], diverged)
