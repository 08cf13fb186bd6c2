"""The results store: one JSON line per finished run in ``data/results/NAME/SCALE.jsonl``.

Each line is one object (the format is documented in the book's appendix):

* ``id`` (hash of the config), ``experiment``, ``scale``, ``status``: ``ok`` | ``diverged`` | ``failed``;
* ``config``: ``dataset``, ``arch``, ``width``, ``sigma_w``, ``optimizer``, ``lr``, ``weight_decay``,
  ``batch_size``, ``epochs``, ``seed`` and the rest of :class:`fibook.train.TrainConfig`;
* ``summary``: ``selected_epoch``, ``selected_test_acc``, ``final_train_acc``, ``tau_interp``, ``repair_gap``
  (pp), ``init_weight_norm``, ``final_weight_norm``, ``clocks`` {``T_SGD``, ``T_L2``, ``T_adapt``}, ...;
* ``history``: per-epoch lists (epoch 0 is the initialization); ``layer_names``; ``diverged_epoch``;
* ``provenance``: fibook version and git commit, torch version, device and CPU/GPU model, wall seconds, date;
  ``error`` for failed runs.

Accuracies are fractions in [0, 1]. A line is written with one ``write`` call on a file opened for appending, so
a killed sweep leaves whole lines only; a line cut short by a crash of the machine is reported with its file and
line number, and :func:`repair` drops such a broken tail.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

from fibook.experiments import get_experiment
from fibook.paths import results_dir
from fibook.scales import get_scale
from fibook.train import TrainConfig

STATUSES = ("ok", "diverged", "failed")


class CorruptResultsError(ValueError):
    """A results file has a line that is not a complete JSON record."""


def results_path(name: str, scale: str) -> Path:
    """``data/results/NAME/SCALE.jsonl`` (under ``$FIBOOK_DATA`` when set)."""
    return results_dir() / name / f"{get_scale(scale).name}.jsonl"


def append_record(path: Path, record: dict) -> None:
    """Append one record as one line, in a single write, flushed to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, separators=(",", ":"), allow_nan=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n") if path.exists() else []


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) and "id" in record and record.get("status") in STATUSES else None


def read_records(path: Path) -> list[dict]:
    """All records of a results file, in order; a broken line raises :class:`CorruptResultsError` naming the file,
    the line and the command that drops a broken tail."""
    chunks = _lines(path)
    records = []
    for number, line in enumerate(chunks, start=1):
        last = number == len(chunks)
        if last and line == b"":
            break
        record = _parse(line) if not last else None  # a final line without its newline is cut short
        if record is None:
            name, scale = path.parent.name, path.stem
            raise CorruptResultsError(
                f"{path}, line {number}: not a complete results record"
                f"{' (cut short)' if last else ''}; run `python -m fibook repair {name} --scale {scale}` "
                "to drop a broken tail")
        records.append(record)
    return records


def repair(path: Path) -> int:
    """Drop the broken tail of a results file: the lines from the first broken one on, when none after it is
    a valid record. Returns how many lines were dropped. A broken line followed by valid ones is not a tail and
    raises, so no finished run is ever dropped."""
    chunks = _lines(path)
    if chunks and chunks[-1] == b"":
        chunks = chunks[:-1]
        complete = len(chunks)
    else:
        complete = len(chunks) - 1  # the last chunk has no newline
    good = 0
    while good < complete and _parse(chunks[good]) is not None:
        good += 1
    if good == len(chunks):
        return 0
    later = [i + 1 for i in range(good + 1, complete) if _parse(chunks[i]) is not None]
    if later:
        raise CorruptResultsError(f"{path}, line {good + 1} is broken but valid records follow (lines {later[:5]}); "
                                  "not a tail: inspect the file by hand")
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(b"".join(c + b"\n" for c in chunks[:good]))
    os.replace(tmp, path)
    return len(chunks) - good


def get_field(record: dict, dotted: str):
    """``get_field(r, "summary.clocks.T_SGD")``: a nested value by its dotted path."""
    value = record
    for part in dotted.split("."):
        value = value[part]
    return value


def latest(records: list[dict]) -> list[dict]:
    """One record per id, the last one written (a failed run that was retried keeps only its new record)."""
    by_id: dict[str, dict] = {}
    for r in records:
        by_id.pop(r["id"], None)
        by_id[r["id"]] = r
    return list(by_id.values())


def load(name: str, scale: str | None = None, status: str | tuple[str, ...] | None = None, **config) -> list[dict]:
    """The runs of experiment ``name`` at ``scale`` (default: ``$FIBOOK_SCALE`` or ``book``), one per id.

    ``status`` keeps only runs with that status (or those statuses); keyword filters compare config fields,
    e.g. ``load("optimizers", "book", optimizer="adam", status="ok")``. An unknown experiment or config field
    raises ``ValueError`` naming the allowed ones.
    """
    get_experiment(name)  # an unknown name (a typo) raises with the choices, instead of returning no runs
    known = [f.name for f in fields(TrainConfig)]
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"unknown config field(s) {', '.join(unknown)} to filter on; choose from: {', '.join(known)}")
    scale_name = get_scale(scale).name
    wanted = (status,) if isinstance(status, str) else status
    if wanted and not set(wanted) <= set(STATUSES):
        raise ValueError(f"unknown status {status!r}; choose from: {', '.join(STATUSES)}")
    out = []
    for r in latest(read_records(results_path(name, scale_name))):
        if wanted and r["status"] not in wanted:
            continue
        if any(r["config"].get(k) != v for k, v in config.items()):
            continue
        out.append(r)
    return out
