"""The results store: one JSON line per run in ``data/results/NAME/PRESET.jsonl``, read and written as
:class:`fibook.forgetting.records.Record` objects (whose module lists a line's fields).

A line is written with one ``write`` call on a file opened for appending, so a killed sweep leaves whole lines
only; a write that fails part-way (a full disk) is cut back to the last whole line. Every line is checked on read
against one schema (:mod:`fibook.forgetting.record_schema`) and its file (:meth:`.records.Record.from_json`): its
fields, their types and ranges, its config, its id (the hash of that config) and its experiment and scale (those
of its file); a line that fails is reported with its file and line number, and :func:`repair` sets it aside into
``PRESET.jsonl.rejected`` beside it (kept, never deleted). Only regular files are read or written (a FIFO, a
device or a folder is refused before it is opened for good), and every ``OSError`` on the store becomes a
:class:`ResultsError` naming the path and what to do.

One sweep (or repair) at a time writes a file: :func:`writing` holds an exclusive lock on ``PRESET.jsonl.lock``
beside it, a file nothing replaces, and appends through one handle that is checked before every write to still
be the file at the path; a results file replaced while a sweep writes it (by ``git checkout``, ``rsync``, an
editor) is reopened, and a run the new file already holds is not written again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.experiments import get_experiment
from fibook.forgetting.record_schema import STATUSES, decode
from fibook.forgetting.records import Record
from fibook.paths import results_dir
from fibook.presets import get_preset


class ResultsError(RuntimeError):
    """The results store cannot be read or written; the message names the file, what is wrong and what to do."""


class CorruptResultsError(ResultsError, ValueError):
    """A results file has a line that is not a complete JSON record."""


class InvalidRecordError(CorruptResultsError):
    """A results file has a complete JSON line that is not a valid record."""


class ResultsBusyError(ResultsError):
    """Another sweep is writing the results file."""


def results_path(name: str, preset: str) -> Path:
    """``data/results/NAME/PRESET.jsonl`` (under ``$FIBOOK_DATA`` when set)."""
    return results_dir() / name / f"{get_preset(preset).name}.jsonl"


def progress_path(name: str, preset: str, ids: list[str]) -> Path:
    """Where a group of runs of experiment ``name`` at ``preset`` keeps its state while it trains
    (:mod:`fibook.forgetting.progress`): ``data/results/NAME/PRESET.progress/KEY.pt`` beside the results file, KEY
    the run's id, or for a fused population the first 16 hex digits of the SHA-256 of its ids joined by commas."""
    key = ids[0] if len(ids) == 1 else hashlib.sha256(",".join(ids).encode()).hexdigest()[:16]
    return progress_dir(name, preset) / f"{key}.pt"


def progress_dir(name: str, preset: str) -> Path:
    """The folder of the part-trained states of experiment ``name`` at ``preset`` (:func:`progress_path`)."""
    return results_dir() / name / f"{get_preset(preset).name}.progress"


def rejected_path(path: Path) -> Path:
    """The side file beside results file ``path`` that :func:`repair` moves bad lines into."""
    return path.with_name(path.name + ".rejected")


def _store_error(path: Path, e: OSError, writing_: bool) -> ResultsError:
    """One message for an ``OSError`` on results file ``path``: what is wrong and what to do."""
    what = "write" if writing_ else "read"
    if isinstance(e, IsADirectoryError):
        return ResultsError(f"results file {path} is a folder; move it away (a results file is one JSONL file)")
    if isinstance(e, (FileExistsError, NotADirectoryError)):
        return ResultsError(f"cannot {what} results file {path}: a part of its folder is a file ({e.strerror}); "
                            "move that file away or set $FIBOOK_RESULTS to another folder")
    if e.errno == errno.ELOOP:
        return ResultsError(f"cannot {what} results file {path}: a symbolic link loop ({e.strerror}); point the "
                            "link at a file or remove it")
    if e.errno == errno.ENXIO:
        return ResultsError(f"results file {path} is a FIFO, not a regular file; move it away (a results file is "
                            "one JSONL file)")
    able = "writable" if writing_ else "readable"
    return ResultsError(f"cannot {what} results file {path} ({e.strerror or e}); make it {able} or set "
                        f"$FIBOOK_RESULTS to a {able} folder")


def _open_regular(path: Path, writing_: bool) -> int | None:
    """A descriptor of regular file ``path``, for appending (created with its folder if missing) or reading
    (None if it does not exist). Opened without blocking, so a FIFO is refused at once, like a device or folder:
    every ``OSError`` raises :class:`ResultsError` before anything is trained."""
    flags = os.O_NONBLOCK | os.O_CLOEXEC | (os.O_WRONLY | os.O_APPEND | os.O_CREAT if writing_ else os.O_RDONLY)
    try:
        if writing_:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        if writing_:
            raise _store_error(path, FileNotFoundError(errno.ENOENT, "a folder vanished"), writing_) from None
        return None
    except OSError as e:
        raise _store_error(path, e, writing_) from e
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise _store_error(path, IsADirectoryError(errno.EISDIR, "is a folder"), writing_)
        kind = "FIFO" if stat.S_ISFIFO(mode) else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "socket"
        raise ResultsError(f"results file {path} is a {kind}, not a regular file; move it away (a results file is "
                           "one JSONL file)")
    os.set_blocking(fd, True)
    return fd


def _write_line(fd: int, path: Path, record: Record) -> None:
    """Append one record as one line, in a single write, flushed to disk. A write that fails part-way is cut
    back to the file's previous end, so the file never holds a partial line, and raises :class:`ResultsError`."""
    line = (json.dumps(record.to_json(), separators=(",", ":"), allow_nan=True) + "\n").encode()
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


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not replaced by a rename, nor removed)."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise _store_error(path, e, True) from e
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


class Appender:
    """Appends the records of one sweep (or repair) to results file ``path`` through one open handle, under the
    lock of :func:`writing`. Before each write it checks that the path still names the file it holds; a file
    replaced under it is reopened and read, and a run the new file already holds as finished is not written
    again."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = _open_regular(path, writing_=True)
        self.held: set[str] = set()  # the finished runs of a file that replaced the one first opened

    def append(self, record: Record) -> bool:
        """Write ``record``; False when it was not written because the (replaced) file already holds its run."""
        if not _same_file(self.fd, self.path):
            os.close(self.fd)
            self.fd = _open_regular(self.path, writing_=True)
            self.held = {r.id for r in latest(read_records(self.path)) if r.status != "failed"}
            print(f"{self.path} was replaced while this sweep wrote it; writing on to the new file, which holds "
                  f"{len(self.held)} finished run(s)", file=sys.stderr)
        if record.id in self.held:
            return False
        _write_line(self.fd, self.path, record)
        return True


@contextlib.contextmanager
def writing(path: Path) -> Iterator[Appender]:
    """Hold an exclusive lock on results file ``path`` (on ``path.lock`` beside it, which survives the file
    being replaced) and yield its :class:`Appender`. The file is created if missing, so an unwritable store
    fails here, before any training; a second sweep or repair of the same file raises
    :class:`ResultsBusyError`."""
    lock = _open_regular(path.with_name(path.name + ".lock"), writing_=True)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise ResultsBusyError(f"another sweep (or repair) is writing {path}; wait for it to finish, or stop "
                                   "it and rerun: finished runs are kept") from e
        appender = Appender(path)
        try:
            yield appender
        finally:
            os.close(appender.fd)
    finally:
        os.close(lock)  # closing releases the lock


def append_record(path: Path, record: Record) -> None:
    """Append one record to ``path`` outside a sweep (one line, one write; see :func:`_write_line`)."""
    fd = _open_regular(path, writing_=True)
    try:
        _write_line(fd, path, record)
    finally:
        os.close(fd)


def _lines(path: Path) -> list[bytes]:
    """The file's bytes split at newlines (the last item is what follows the last newline); [] if missing."""
    fd = _open_regular(path, writing_=False)
    if fd is None:
        return []
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read().split(b"\n")
    except OSError as e:
        raise _store_error(path, e, False) from e


def _check_line(line: bytes, path: Path, last: bool) -> Record:
    """The record of one line of ``path``; ``ValueError`` says why it is none (``last``: the final chunk, which
    has no newline, so it was cut short)."""
    if last:
        raise CorruptResultsError("cut short (the file does not end with a newline)")
    try:
        obj = decode(line)
    except ValueError as e:
        raise CorruptResultsError(str(e)) from None
    try:
        return Record.from_json(obj, path)
    except ValueError as e:
        raise InvalidRecordError(str(e)) from None


def _checked(path: Path) -> list[tuple[int, bytes, Record | ResultsError]]:
    """Each line of ``path`` with its number and its record, or the error that says why it has none."""
    chunks = _lines(path)
    if chunks and chunks[-1] == b"":
        chunks = chunks[:-1]
        complete = len(chunks)
    else:
        complete = len(chunks) - 1
    out = []
    for number, line in enumerate(chunks, start=1):
        try:
            out.append((number, line, _check_line(line, path, number > complete)))
        except CorruptResultsError as e:
            out.append((number, line, e))
    return out


def _set_aside_hint(path: Path, number: int) -> str:
    return (f"run `python -m fibook repair {path.parent.name} --preset {path.stem} --line {number}` to move it to "
            f"{rejected_path(path).name} beside it (kept there), or fix it by hand")


def read_records(path: Path) -> list[Record]:
    """All records of a results file, in order; a bad line raises :class:`CorruptResultsError` (not a complete
    JSON object) or :class:`InvalidRecordError` (not a valid record), naming the file, the line, what is wrong
    and the command that sets it aside."""
    records = []
    for number, _, checked in _checked(path):
        if isinstance(checked, ResultsError):
            raise type(checked)(f"{path}, line {number}: not a valid results record: {checked}; "
                                f"{_set_aside_hint(path, number)}")
        records.append(checked)
    return records


def repair(path: Path, line: int | None = None) -> int:
    """Move bad lines of results file ``path`` into its side file :func:`rejected_path` (appended there, kept,
    never deleted): line number ``line``, which must be a bad one, or else the broken tail (the bad lines from
    the first one on, when no valid record follows). Returns how many lines were moved. A bad line followed by
    valid ones is not a tail: without ``line`` it raises, naming it. The file is locked (:func:`writing`) from
    reading to replacing, so a line a running sweep is writing is never taken for a broken one."""
    fd = _open_regular(path, writing_=False)
    if fd is None:
        if line is not None:
            raise ResultsError(f"{path} does not exist; there is no line {line} to set aside")
        return 0
    os.close(fd)
    with writing(path):
        checked = _checked(path)
        bad = [n for n, _, r in checked if isinstance(r, ResultsError)]
        if line is not None:
            if not 1 <= line <= len(checked):
                raise ResultsError(f"{path} has {len(checked)} line(s); there is no line {line}")
            if line not in bad:
                raise ResultsError(f"{path}, line {line} is a valid record; only a bad line is set aside")
            moved = [line]
        else:
            good = [n for n, _, r in checked if not isinstance(r, ResultsError)]
            moved = [n for n in bad if n > max(good, default=0)]
            if len(moved) < len(bad):
                first = min(set(bad) - set(moved))
                raise CorruptResultsError(f"{path}, line {first} is bad but valid records follow; "
                                          f"{_set_aside_hint(path, first)}")
        if not moved:
            return 0
        kept = b"".join(text + b"\n" for n, text, _ in checked if n not in moved)
        aside = b"".join(text + b"\n" for n, text, _ in checked if n in moved)
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            with open(rejected_path(path), "ab") as f:
                f.write(aside)
                f.flush()
                os.fsync(f.fileno())  # the lines are kept before they leave the results file
            with open(tmp, "wb") as f:
                f.write(kept)
                f.flush()
                os.fsync(f.fileno())  # the new contents are on disk before they replace the old
            os.replace(tmp, path)
        except OSError as e:
            raise ResultsError(f"cannot repair {path} ({e.strerror}); it needs a writable folder") from e
    return len(moved)


def latest(records: list[Record]) -> list[Record]:
    """One record per id, the last one written (a failed run that was retried keeps only its new record)."""
    by_id: dict[str, Record] = {}
    for r in records:
        by_id.pop(r.id, None)
        by_id[r.id] = r
    return list(by_id.values())


def load(name: str, preset: str, status: str | tuple[str, ...] | None = None, **config) -> list[Record]:
    """The runs of experiment ``name`` at ``preset``, one per id.

    ``status`` keeps only runs with that status (or those statuses); keyword filters compare config fields,
    e.g. ``load("optimizers", "book", optimizer="adam", status="ok")``. An unknown experiment or config field
    raises ``ValueError`` naming the allowed ones.
    """
    get_experiment(name)  # an unknown name (a typo) raises with the choices, instead of returning no runs
    known = [f.name for f in fields(TrainConfig)]
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"unknown config field(s) {', '.join(unknown)} to filter on; choose from: {', '.join(known)}")
    preset_name = get_preset(preset).name
    wanted = (status,) if isinstance(status, str) else status
    if wanted and not set(wanted) <= set(STATUSES):
        raise ValueError(f"unknown status {status!r}; choose from: {', '.join(STATUSES)}")
    out = []
    for r in latest(read_records(results_path(name, preset_name))):
        if wanted and r.status not in wanted:
            continue
        if any(getattr(r.config, k) != v for k, v in config.items()):
            continue
        out.append(r)
    return out
