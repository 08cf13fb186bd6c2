"""The results store: one JSON line per run in ``data/results/NAME/SCALE.jsonl``, read and written as
:class:`Record` objects.

A line is one :class:`Record` as JSON (its fields, in that order; the book's appendix "Results files" lists them,
and a test checks that it lists exactly these): ``id`` (the hash of the config), ``experiment``, ``scale``,
``status`` (``ok`` | ``diverged`` | ``failed``), ``config`` (a :class:`fibook.forgetting.train.TrainConfig`),
``summary`` (a :class:`fibook.forgetting.train.Summary`), ``history`` (per-epoch lists, epoch 0 being the
initialization), ``layer_names``, ``diverged_epoch``, ``provenance`` (fibook version and git commit, torch version,
device and CPU/GPU model, wall seconds, date) and, for failed runs instead of summary, history, layer_names and
diverged_epoch, ``error`` (the traceback).

Accuracies are fractions in [0, 1]. A line is written with one ``write`` call on a file opened for appending, so
a killed sweep leaves whole lines only; a write that fails part-way (a full disk) is cut back to the last whole
line; a line cut short by a crash of the machine is reported with its file and line number, and :func:`repair`
drops such a broken tail. Every line is checked on read (:meth:`Record.from_json`): its fields, its config, its
id (the hash of that config) and its experiment and scale (those of its file). One sweep at a time writes a
file: :func:`writing` holds an exclusive lock on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

from fibook.forgetting.experiments import get_experiment, run_id
from fibook.forgetting.train import Summary, TrainConfig
from fibook.paths import results_dir
from fibook.scales import get_scale

STATUSES = ("ok", "diverged", "failed")
FINISHED_FIELDS = ("summary", "history", "layer_names", "diverged_epoch")  # ok and diverged runs only
FAILED_FIELDS = ("error",)  # failed runs only
TYPES = {"config": dict, "provenance": dict, "summary": dict, "history": dict, "layer_names": list, "error": str}


@dataclass(frozen=True)
class Record:
    """One run of the results store. ``summary``, ``history``, ``layer_names`` and ``diverged_epoch`` belong
    to finished runs (``ok``, ``diverged``), ``error`` to ``failed`` ones."""

    id: str
    experiment: str
    scale: str
    status: str
    config: TrainConfig
    summary: Summary | None = None
    history: dict | None = None
    layer_names: list | None = None
    diverged_epoch: int | None = None
    error: str | None = None
    provenance: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The record as its JSON line's object."""
        out = {"id": self.id, "experiment": self.experiment, "scale": self.scale, "status": self.status,
               "config": self.config.to_dict()}
        if self.status == "failed":
            out["error"] = self.error
        else:
            out |= {"summary": self.summary.to_dict(), "history": self.history, "layer_names": self.layer_names,
                    "diverged_epoch": self.diverged_epoch}
        return out | {"provenance": self.provenance}

    @classmethod
    def from_json(cls, obj: dict, path: Path) -> Record:
        """The record of a JSON line of file ``path`` (``NAME/SCALE.jsonl``); ``ValueError`` says what is wrong
        unless it has every field of its status with the right types, a valid config and summary, ``id`` equal
        to that config's hash, and the experiment and scale of its file."""
        status = obj["status"]
        needed = ("id", "experiment", "scale", "status", "config", "provenance")
        needed += FAILED_FIELDS if status == "failed" else FINISHED_FIELDS
        missing = [f for f in needed if f not in obj]
        if missing:
            raise ValueError(f"{status!r} records need the field(s) {', '.join(missing)}")
        wrong = [f for f, t in TYPES.items() if f in obj and not isinstance(obj[f], t)]
        if wrong:
            raise ValueError(f"wrong type: {', '.join(f'{f} (must be {TYPES[f].__name__})' for f in wrong)}")
        try:
            config = TrainConfig(**obj["config"])
        except (TypeError, ValueError) as e:
            raise ValueError(f"config is not a valid training config: {e}") from None
        if obj["id"] != run_id(config):
            raise ValueError(f"id {obj['id']!r} is not its config's hash {run_id(config)!r}")
        for key, expected in (("experiment", path.parent.name), ("scale", path.stem)):
            if obj[key] != expected:
                raise ValueError(f"{key} {obj[key]!r} does not match its file's {expected!r}")
        kept = {f: obj[f] for f in needed if f not in ("config", "summary")}
        if status == "failed":
            return cls(config=config, **kept)
        try:
            summary = Summary(**obj["summary"])
        except TypeError as e:
            raise ValueError(f"summary is not a run summary: {e}") from None
        return cls(config=config, summary=summary, **kept)


class ResultsError(RuntimeError):
    """The results store cannot be read or written; the message names the file, what is wrong and what to do."""


class CorruptResultsError(ResultsError, ValueError):
    """A results file has a line that is not a complete JSON record."""


class InvalidRecordError(CorruptResultsError):
    """A results file has a complete JSON line that is not a valid record."""


class ResultsBusyError(ResultsError):
    """Another sweep is writing the results file."""


def results_path(name: str, scale: str) -> Path:
    """``data/results/NAME/SCALE.jsonl`` (under ``$FIBOOK_DATA`` when set)."""
    return results_dir() / name / f"{get_scale(scale).name}.jsonl"


def _open_for_append(path: Path) -> int:
    """A descriptor of ``path`` opened for appending (created with its folder if missing); a folder that is a
    file, a path that is a folder or a read-only place raise :class:`ResultsError` before anything is trained."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except IsADirectoryError as e:
        raise ResultsError(f"results file {path} is a folder; move it away (a results file is one JSONL file)") \
            from e
    except (FileExistsError, NotADirectoryError) as e:
        raise ResultsError(f"cannot create results file {path}: a part of its folder is a file ({e.strerror}); "
                           "move that file away or set $FIBOOK_RESULTS to another folder") from e
    except OSError as e:
        raise ResultsError(f"cannot write results file {path} ({e.strerror}); make it writable or set "
                           "$FIBOOK_RESULTS to a writable folder") from e


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on results file ``path`` (created if missing, so an unwritable store fails here,
    before any training); a second sweep or repair of the same file raises :class:`ResultsBusyError`."""
    fd = _open_for_append(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise ResultsBusyError(f"another sweep (or repair) is writing {path}; wait for it to finish, or stop "
                                   "it and rerun: finished runs are kept") from e
        yield
    finally:
        os.close(fd)  # closing releases the lock


def append_record(path: Path, record: Record) -> None:
    """Append one record as one line, in a single write, flushed to disk. A write that fails part-way is cut
    back to the file's previous end, so the file never holds a partial line, and raises :class:`ResultsError`."""
    line = (json.dumps(record.to_json(), separators=(",", ":"), allow_nan=True) + "\n").encode()
    fd = _open_for_append(path)
    try:
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write: {written} of {len(line)} bytes")
            os.fsync(fd)
        except OSError as e:
            os.ftruncate(fd, start)
            raise ResultsError(f"writing a record to {path} failed ({e}); the partial line was removed, the file "
                               "is as before; free disk space and rerun") from e
    finally:
        os.close(fd)


def _lines(path: Path) -> list[bytes]:
    if path.is_dir():
        raise ResultsError(f"results file {path} is a folder; move it away (a results file is one JSONL file)")
    return path.read_bytes().split(b"\n") if path.exists() else []


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) and "id" in record and record.get("status") in STATUSES else None


def read_records(path: Path) -> list[Record]:
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
        try:
            records.append(Record.from_json(record, path))
        except ValueError as e:
            raise InvalidRecordError(f"{path}, line {number}: not a valid results record: {e}; remove or fix the "
                                     "line by hand") from None
    return records


def repair(path: Path) -> int:
    """Drop the broken tail of a results file: the lines from the first broken one on, when none after it is
    a valid record. Returns how many lines were dropped. A broken line followed by valid ones is not a tail and
    raises, so no finished run is ever dropped. The file is locked (:func:`writing`) from reading to replacing,
    so a line a running sweep is writing is never taken for a broken one."""
    if not path.exists():
        return 0
    with writing(path):
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
            raise CorruptResultsError(f"{path}, line {good + 1} is broken but valid records follow (lines "
                                      f"{later[:5]}); not a tail: inspect the file by hand")
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(b"".join(c + b"\n" for c in chunks[:good]))
                f.flush()
                os.fsync(f.fileno())  # the new contents are on disk before they replace the old
            os.replace(tmp, path)
        except OSError as e:
            raise ResultsError(f"cannot repair {path} ({e.strerror}); it needs a writable folder") from e
    return len(chunks) - good


def latest(records: list[Record]) -> list[Record]:
    """One record per id, the last one written (a failed run that was retried keeps only its new record)."""
    by_id: dict[str, Record] = {}
    for r in records:
        by_id.pop(r.id, None)
        by_id[r.id] = r
    return list(by_id.values())


def load(name: str, scale: str | None = None, status: str | tuple[str, ...] | None = None, **config) -> list[Record]:
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
        if wanted and r.status not in wanted:
            continue
        if any(getattr(r.config, k) != v for k, v in config.items()):
            continue
        out.append(r)
    return out
