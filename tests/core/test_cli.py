"""Hostile inputs to the command line, one row each: what is set up, the command, the exit code it must end with
and the first line it must print. A command that raises (a traceback), exits 0 on bad input (a silent accept) or
runs past :data:`HANG_SECONDS` fails its row; rows whose input is fine keep holding what already held."""

import contextlib
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from synthetic import rec

from fibook.__main__ import main
from fibook.forgetting import cluster, results, sweep
from fibook.forgetting.data import DatasetError

pytestmark = pytest.mark.slow

HANG_SECONDS = 60
SWEEP = ["sweep", "optimizers", "--preset", "smoke", "--quiet"]
STATUS = ["status", "optimizers", "--preset", "smoke"]
REPAIR = ["repair", "optimizers", "--preset", "smoke"]


def good(**change) -> dict:
    """A valid finished record of the optimizers file at the smoke preset, as its JSON object, with ``change``."""
    return rec(0.1, 0, 0.5, 1, 1.0, experiment="optimizers").to_json() | change


def summary(**change) -> dict:
    return good(summary=good()["summary"] | change)


def history(**change) -> dict:
    return good(history=good()["history"] | change)


def own_file(store):
    return store / "optimizers" / "smoke.jsonl"


def lines(*objs) -> Callable:
    """A set-up that writes these lines (JSON objects, or bytes as they are) into the optimizers file."""
    def setup(store, monkeypatch, stack):
        own_file(store).parent.mkdir(parents=True, exist_ok=True)
        own_file(store).write_bytes(b"".join(o if isinstance(o, bytes) else
                                             json.dumps(o, allow_nan=True).encode() + b"\n" for o in objs))
    return setup


def fifo(store, monkeypatch, stack):
    own_file(store).parent.mkdir(parents=True)
    os.mkfifo(own_file(store))


def folder(store, monkeypatch, stack):
    own_file(store).mkdir(parents=True)


def experiment_folder_is_a_file(store, monkeypatch, stack):
    (store / "optimizers").write_text("a file where the experiment's folder should be")


def symlink_loop(store, monkeypatch, stack):
    own_file(store).parent.mkdir(parents=True)
    os.symlink(own_file(store), own_file(store))


def refused_on(flag: int, store_path) -> Callable:
    """A set-up under which opening the optimizers file with ``flag`` (os.O_RDONLY: an unreadable file; os.O_WRONLY:
    a read-only file) fails with EACCES, as for another user's file (tests may run as root, who may open anything)."""
    def setup(store, monkeypatch, stack):
        lines(good())(store, monkeypatch, stack)
        real = os.open

        def guarded(path, flags, *args, **kwargs):
            if str(path) == str(store_path(store)) and (flags & (os.O_WRONLY | os.O_RDWR)) == flag:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, flags, *args, **kwargs)
        monkeypatch.setattr(results.os, "open", guarded)
    return setup


def broken_neighbour(store, monkeypatch, stack):
    (store / "depth").mkdir()
    (store / "depth" / "smoke.jsonl").write_bytes(b"[" * 5000 + b"\n")


def locked(store, monkeypatch, stack):
    """The optimizers file locked as a running sweep locks it, until the row ends."""
    stack.enter_context(results.writing(own_file(store)))


def no_dataset(store, monkeypatch, stack):
    def missing(name):
        raise DatasetError(f"{name} is not installed; run `python -m fibook data --download`")
    monkeypatch.setattr(sweep, "dataset", missing)


def nothing(store, monkeypatch, stack):
    pass


@dataclass
class Case:
    name: str
    setup: Callable
    argv: list
    code: int
    first_line: str  # a regular expression the first line of the message must match (stderr, else stdout)
    lines_after: int | None = None  # lines the optimizers file must hold afterwards (nothing lost, no duplicate)


LINE = r"python -m fibook \w+: error: .*optimizers/smoke.jsonl, line 1: not a valid results record: "
CASES = [
    # values checked on read, each named with its file and line
    Case("nan in summary", lines(summary(selected_test_acc=float("nan"))), STATUS, 2,
         LINE + r"summary.selected_test_acc is NaN; it must be a number in \[0, 1\] or null"),
    Case("inf in history", lines(history(test_acc=[0.1, float("inf"), 0.5, 0.5])), STATUS, 2,
         LINE + r"history.test_acc\[1\] is Infinity; it must be a number in \[0, 1\]"),
    Case("string for a number", lines(summary(final_test_acc="0.5")), STATUS, 2,
         LINE + r'summary.final_test_acc is "0.5"; it must be a number in \[0, 1\]'),
    Case("bool for a number", lines(summary(steps=True)), STATUS, 2,
         LINE + r"summary.steps is true; it must be a whole number >= 0"),
    Case("accuracy 57", lines(summary(final_train_acc=57.0)), STATUS, 2,
         LINE + r"summary.final_train_acc is 57.0; it must be a number in \[0, 1\]"),
    Case("accuracy -3", lines(history(train_acc=[0.1, -3.0, 1.0, 1.0])), STATUS, 2,
         LINE + r"history.train_acc\[1\] is -3.0; it must be a number in \[0, 1\]"),
    Case("empty history", lines(good(history={})), STATUS, 2, LINE + "history lacks epoch, train_loss"),
    Case("history with empty lists", lines(good(history={k: [] for k in good()["history"]})), STATUS, 2,
         LINE + "history lists must hold one entry per recorded epoch"),
    Case("diverged_epoch soon", lines(good(status="diverged", diverged_epoch="soon")), STATUS, 2,
         LINE + 'diverged_epoch is "soon"; it must be a whole number >= 0'),
    Case("ok with a diverged_epoch", lines(good(diverged_epoch=3)), STATUS, 2,
         LINE + "diverged_epoch is 3 in an 'ok' record; it must be null"),
    Case("unknown field", lines(good(note="hand-edited")), STATUS, 2, LINE + "unknown field\\(s\\) note"),
    Case("unknown history key", lines(history(test_auc=[0.5] * 4)), STATUS, 2,
         LINE + "history has unknown key\\(s\\) test_auc"),
    Case("nan loss of an ok run", lines(history(val_loss=[2.3, float("nan"), 0.5, 0.5])), STATUS, 2,
         LINE + r"history.val_loss\[1\] is NaN; it must be a finite number"),
    Case("other preset", lines(good(scale="book")), STATUS, 2, LINE + "scale 'book' does not match its file's"),
    Case("deep nesting, status", lines(b"[" * 5000 + b"\n"), STATUS, 2,
         LINE + "JSON nested 5000 levels deep"),
    Case("deep nesting, sweep", lines(b"[" * 5000 + b"\n"), SWEEP, 2, LINE + "JSON nested 5000 levels deep", 1),
    Case("5001-digit integer", lines(b'{"id": ' + b"1" * 5001 + b"}\n"), STATUS, 2,
         LINE + "an integer of 5001 digits"),
    Case("garbage", lines(b"garbage\n"), STATUS, 2, LINE + r"not JSON .* run `python -m fibook repair optimizers "
                                                           r"--preset smoke --line 1`"),
    Case("cut short", lines(good(), b'{"id": "cu'), STATUS, 2, r".*line 2: not a valid results record: cut short"),
    # repair says the same thing as the error, and sets a named bad line aside
    Case("repair a cut-short tail", lines(good(), b'{"id": "cu'), REPAIR, 0,
         r".*smoke.jsonl: moved 1 bad line\(s\) to .*smoke.jsonl.rejected", 1),
    Case("repair an invalid last line", lines(good(), good(scale="book")), REPAIR, 0, r".*moved 1 bad line", 1),
    Case("repair a bad line valid ones follow", lines(good(scale="book"), good()), REPAIR, 2,
         r".*line 1 is bad but valid records follow; run `python -m fibook repair optimizers --preset smoke "
         r"--line 1`", 2),
    Case("repair --line the bad line", lines(good(scale="book"), good()), REPAIR + ["--line", "1"], 0,
         r".*moved 1 bad line", 1),
    Case("repair --line a valid line", lines(good(scale="book"), good()), REPAIR + ["--line", "2"], 2,
         r".*line 2 is a valid record; only a bad line is set aside", 2),
    Case("repair --line past the end", lines(good()), REPAIR + ["--line", "9"], 2,
         r".*has 1 line\(s\); there is no line 9", 1),
    Case("repair deep nesting", lines(b"[" * 5000 + b"\n"), REPAIR, 0, r".*moved 1 bad line", 0),
    # a results path that is not a regular, usable file: one clear error, never a wait
    Case("fifo, status", fifo, STATUS, 2, r".*smoke.jsonl is a FIFO, not a regular file; move it away"),
    Case("fifo, sweep", fifo, SWEEP, 2, r".*smoke.jsonl is a FIFO, not a regular file; move it away"),
    Case("fifo, repair", fifo, REPAIR, 2, r".*smoke.jsonl is a FIFO, not a regular file; move it away"),
    Case("folder, status", folder, STATUS, 2, r".*smoke.jsonl is a folder; move it away"),
    Case("folder, sweep", folder, SWEEP, 2, r".*smoke.jsonl is a folder; move it away"),
    Case("experiment folder is a file, status", experiment_folder_is_a_file, STATUS, 2,
         r".*cannot read results file .*: a part of its folder is a file"),
    Case("experiment folder is a file, sweep", experiment_folder_is_a_file, SWEEP, 2,
         r".*cannot write results file .*: a part of its folder is a file"),
    Case("symlink loop, status", symlink_loop, STATUS, 2, r".*cannot read results file .*: a symbolic link loop"),
    Case("symlink loop, sweep", symlink_loop, SWEEP, 2, r".*cannot write results file .*: a symbolic link loop"),
    Case("unreadable file, status", refused_on(os.O_RDONLY, own_file), STATUS, 2,
         r".*cannot read results file .*smoke.jsonl \(Permission denied\); make it readable"),
    Case("write-only file, sweep", refused_on(os.O_RDONLY, own_file), SWEEP, 2,
         r".*cannot read results file .*smoke.jsonl \(Permission denied\); make it readable", 1),
    Case("unreadable lock file, sweep", refused_on(os.O_WRONLY, lambda store: own_file(store).with_name(
        "smoke.jsonl.lock")), SWEEP, 2, r".*cannot write results file .*smoke.jsonl.lock \(Permission denied\)", 1),
    Case("read-only file, sweep", refused_on(os.O_WRONLY, own_file), SWEEP, 2,
         r".*cannot write results file .*smoke.jsonl \(Permission denied\); make it writable", 1),
    # a broken neighbour does not block this experiment; its own broken file does
    Case("broken neighbour, status", broken_neighbour, STATUS, 0,
         r"warning: not reusing runs of .*depth/smoke.jsonl: .*line 1: .*JSON nested 5000 levels deep"),
    # one sweep at a time, data checked before anything is written
    Case("second sweep", locked, SWEEP, 2, r".*another sweep \(or repair\) is writing .*optimizers/smoke.jsonl", 0),
    Case("repair during a sweep", locked, REPAIR + ["--line", "1"], 2, r".*another sweep \(or repair\) is writing",
         0),
    Case("missing dataset", no_dataset, SWEEP, 2, r".*error: fashion_mnist is not installed", 0),
    # flags that would be ignored, and bounds
    Case("max-population without fuse", nothing, SWEEP + ["--max-population", "4"], 2,
         r".*--max-population sets the size of fused populations; it needs --fuse"),
    Case("worker-timeout without cluster", nothing, SWEEP + ["--worker-timeout", "5"], 2,
         r".*--worker-timeout is how long to wait for a cluster's workers; it needs --cluster"),
    Case("workers with cluster", nothing, SWEEP + ["--workers", "2", "--cluster", "tcp://127.0.0.1:1"], 2,
         r".*--workers sets how many local worker processes train; with --cluster"),
    Case("workers above the cores", nothing, SWEEP + ["--workers", "999"], 2,
         r".*workers must be at most \d+, the CPU cores this process may use"),
    Case("workers 0", nothing, SWEEP + ["--workers", "0"], 2, r".*argument --workers: must be a whole number >= 1"),
    Case("unknown experiment", nothing, ["sweep", "nope"], 2, r".*unknown experiment 'nope'; choose one of"),
    Case("unknown preset", nothing, ["status", "depth", "--preset", "huge"], 2,
         r".*unknown preset 'huge' \(from argument\); choose one of: smoke, book, gpu, paper"),
    Case("unknown preset, former option", nothing, ["status", "depth", "--scale", "huge"], 2,
         r".*unknown preset 'huge' \(from argument\); choose one of: smoke, book, gpu, paper"),
    Case("unknown device", nothing, SWEEP + ["--device", "tpu"], 2, r".*unknown device 'tpu'; choose one of"),
    Case("no scheduler", nothing, SWEEP + ["--cluster", "tcp://127.0.0.1:1", "--worker-timeout", "1", "--device",
                                           "cpu"], 2, r".*no Dask scheduler answered at tcp://127.0.0.1:1 within 1 s"),
    # input that is fine stays fine
    Case("diverged run with a nan loss", lines(good(status="diverged", diverged_epoch=3, history=good()["history"]
                                                    | {"val_loss": [2.3, 0.3, float("nan"), 0.5]})), STATUS, 0,
         r"optimizers \[smoke\]: 12 runs; ok 0, diverged 0, failed 0, remaining 12"),
    Case("empty store", nothing, STATUS, 0, r"optimizers \[smoke\]: 12 runs; ok 0"),
    Case("repair of nothing", nothing, REPAIR, 0, r".*smoke.jsonl: nothing to repair"),
]


def run_case(case: Case, store, monkeypatch, capsys, stack) -> tuple[str, int | None, str]:
    """Set up and run one row: its outcome (``exit``, ``traceback`` or ``hang``), exit code and first line."""
    case.setup(store, monkeypatch, stack)

    def hang(signum, frame):
        raise TimeoutError(f"no answer within {HANG_SECONDS} s")

    sweep_refuses_training(monkeypatch)
    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)
    try:
        try:
            code = main(case.argv)
        except SystemExit as e:
            code = e.code
        except TimeoutError:
            return "hang", None, ""
        except Exception as e:  # noqa: BLE001 - any exception out of the command line is a traceback
            return "traceback", None, f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out = capsys.readouterr()
    message = [line for line in (out.err.strip() or out.out.strip()).splitlines()
               if not line.startswith(("usage:", " "))]  # argparse's usage lines come before its error
    return "exit", code, message[0] if message else ""


def sweep_refuses_training(monkeypatch):
    """No row trains: a sweep that gets as far as training has accepted its input (a silent accept)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the sweep started training")
    monkeypatch.setattr(cluster, "train_population", refuse)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    with contextlib.ExitStack() as stack:
        outcome, code, first = run_case(case, tmp_path, monkeypatch, capsys, stack)
    assert (outcome, code) == ("exit", case.code), first
    assert re.match(case.first_line, first), first
    if case.lines_after is not None:
        held = own_file(tmp_path).read_bytes().count(b"\n") if own_file(tmp_path).is_file() else 0
        assert held == case.lines_after
