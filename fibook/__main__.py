"""Command line: ``python -m fibook COMMAND``.

``data``    check that the datasets are present and intact (``--download`` fetches what is missing).
``presets``  print the table of named presets.
``sweep``   run what is missing of a Part I experiment (resumable; parallel with --workers or --cluster).
``status``  done / diverged / failed / remaining runs of an experiment, and the estimated time left.
``repair``  set bad lines of an experiment's results file aside (its broken tail, or the line ``--line N``).
``verdicts``  print the verdicts the chapters recorded at a preset (``--against book``: only those that differ).
``reproduce``  rerun the whole book at a preset: the plan and its cost, the missing runs, every chapter into its own
            tree and its own HTML book, then the verdicts that changed (``make reproduce PRESET=...``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fibook import claims, presets, reproduce
from fibook.forgetting import data
from fibook.forgetting.cluster import WORKER_TIMEOUT, SweepError, quiet_distributed
from fibook.forgetting.experiments import EXPERIMENTS
from fibook.forgetting.results import ResultsError, load, rejected_path, repair, results_path
from fibook.forgetting.sweep import DEFAULT_POPULATION, MAX_WORKERS, SweepInterrupted, run_sweep, status


def cmd_data(args) -> int:
    names = ["fashion_mnist"] + (["cifar10"] if args.cifar10 else [])
    for name in names:
        try:
            ds = data.load_dataset(name, root=args.root, download=args.download)
        except data.DatasetError as e:
            print(f"{name}: {e}", file=sys.stderr)
            return 1
        print(f"{name}: train {len(ds.train):,} / val {len(ds.val):,} / test {len(ds.test):,} images "
              f"of shape {ds.image_shape}, checksums ok")
    return 0


def cmd_presets(args) -> int:
    for row in presets.preset_table():
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


def ignored_flags(args) -> str | None:
    """What is wrong with sweep flags that would be ignored in their combination, or None."""
    if args.max_population is not None and not args.fuse:
        return "--max-population sets the size of fused populations; it needs --fuse"
    if args.worker_timeout is not None and args.cluster is None:
        return "--worker-timeout is how long to wait for a cluster's workers; it needs --cluster"
    if args.workers is not None and args.cluster is not None:
        return ("--workers sets how many local worker processes train; with --cluster the cluster's workers "
                "train: leave --workers out and start as many workers as you want")
    return None


def cmd_sweep(args) -> int:
    wrong = ignored_flags(args)
    if wrong:
        raise ValueError(wrong)
    given = {k: v for k, v in (("workers", args.workers), ("max_population", args.max_population),
                               ("worker_timeout", args.worker_timeout)) if v is not None}
    if args.cluster is not None:
        quiet_distributed()  # for good: a closed client may still log its lost scheduler as it winds down
    try:
        counts = run_sweep(args.name, args.preset, device=args.device, cluster=args.cluster, fuse=args.fuse,
                           progress=not args.quiet, **given)
    except SweepInterrupted as e:
        print(e, file=sys.stderr)
        return 130
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    if counts["failed"]:
        first = load(args.name, args.preset, status="failed")[0]
        last_line = [line for line in first.error.splitlines() if line.strip()][-1]
        c = first.config
        print(f"{counts['failed']} run(s) failed; the first ({c.optimizer}, lr {c.lr:g}, sigma_w "
              f"{c.sigma_w:g}, seed {c.seed}): {last_line}\nits traceback is in the record's \"error\" field; "
              "a rerun retries failed runs", file=sys.stderr)
        return 1
    return 0


def cmd_status(args) -> int:
    s = status(args.name, args.preset, workers=args.workers, fuse=args.fuse, device=args.device)
    eta = "unknown (no finished run yet)" if s["eta_seconds"] is None else f"{s['eta_seconds'] / 60:.1f} min"
    print(f"{s['experiment']} [{s['preset']}]: {s['total']} runs; ok {s['ok']}, diverged {s['diverged']}, "
          f"failed {s['failed']}, remaining {s['remaining']} (of which {s['reusable']} reusable from other "
          f"experiments, {s['part_trained']} part-trained); estimated time left at {args.workers} worker(s): "
          f"{eta}\n{s['path']}")
    return 0


def cmd_repair(args) -> int:
    path = results_path(args.name, args.preset)
    moved = repair(path, args.line)
    print(f"{path}: moved {moved} bad line(s) to {rejected_path(path)}" if moved else f"{path}: nothing to repair")
    return 0


def cmd_verdicts(args) -> int:
    order = [Path(c).stem for c in reproduce.chapters()]
    ours = claims.read_verdicts(args.preset)
    if args.against is None:
        table = [{"chapter": r["chapter"], "claim": r["claim"], "paper": r["paper"], "ours": r["ours"],
                  "agrees?": r["agrees"]} for r in claims.rows(ours, order)]
        print(claims.markdown_table(table) if table else f"no verdicts recorded at preset '{args.preset}'")
        return 0
    diff = claims.changed(ours, claims.read_verdicts(args.against), order)
    n = len(claims.rows(ours))
    print(f"{len(diff)} of {n} verdicts at '{args.preset}' differ from '{args.against}'"
          + (":\n" + claims.markdown_table(diff) if diff else ""))
    return 0


def cmd_reproduce(args) -> int:
    try:
        return reproduce.reproduce(args.preset, device=args.device, workers=args.workers, tree=args.tree,
                                   fuse=args.fuse, against=args.against)
    except KeyboardInterrupt as e:  # in a sweep (SweepInterrupted says what it kept) or a chapter
        print(f"{e}\n" if str(e) else "", end="", file=sys.stderr)
        print("reproduce interrupted: finished runs and executed chapters are kept; rerun the same command to "
              "continue", file=sys.stderr)
        return 130


def _experiment(name: str) -> str:
    if name not in EXPERIMENTS:
        raise argparse.ArgumentTypeError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}")
    return name


def _preset(name: str) -> str:
    try:
        return presets.get_preset(name).name
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _preset_or_file(text: str) -> str:
    return text if text.endswith(".json") else _preset(text)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fibook", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("data", help="check (or download) the datasets")
    p.add_argument("--root", default=None, help="data folder (default: $FIBOOK_DATA or the checkout's data/)")
    p.add_argument("--download", action="store_true", help="let torchvision download what is missing")
    p.add_argument("--cifar10", action="store_true", help="also check CIFAR-10 (needed for gpu/paper presets)")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("presets", aliases=["scales"], help="print the size presets (also: scales, the former name)")
    p.set_defaults(func=cmd_presets)

    def experiment_parser(cmd: str, help_: str, func):
        q = sub.add_parser(cmd, help=help_)
        q.add_argument("name", type=_experiment, metavar="NAME", help=f"one of: {', '.join(EXPERIMENTS)}")
        q.add_argument("--preset", "--scale", dest="preset", type=_preset, default=None,
                       help=f"one of: {', '.join(presets.PRESET_NAMES)} (default: $FIBOOK_PRESET or book; --scale "
                            "is the former name)")
        q.set_defaults(func=func)
        return q

    q = experiment_parser("sweep", "run what is missing of an experiment", cmd_sweep)
    q.add_argument("--workers", type=_positive, default=None,
                   help=f"parallel local worker processes, one thread each, at most the {MAX_WORKERS} CPU cores "
                        "(default 1)")
    q.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    q.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="a Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a local cluster)")
    q.add_argument("--fuse", action="store_true", help="train runs differing only in sigma_w/seed as one network")
    q.add_argument("--max-population", type=_positive, default=None,
                   help=f"with --fuse: largest fused population (default {DEFAULT_POPULATION})")
    q.add_argument("--worker-timeout", type=_seconds, default=None, metavar="SECONDS",
                   help=f"with --cluster: how long to wait for the scheduler, its first worker, and for a worker "
                        f"when none is left (default {WORKER_TIMEOUT:g})")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q = experiment_parser("status", "what an experiment has done and has left", cmd_status)
    q.add_argument("--workers", type=_positive, default=1, help="workers the time estimate assumes")
    q.add_argument("--device", default="auto",
                   help="the device the sweep runs on, which decides an 'auto' precision (default: auto)")
    q.add_argument("--fuse", action="store_true", help="count the fused runs (those of sweep --fuse)")
    q = experiment_parser("repair", "set bad lines of an experiment's results file aside (kept in a side file)",
                          cmd_repair)
    q.add_argument("--line", type=_positive, default=None, metavar="N",
                   help="set aside line N, a bad one (default: the broken tail, bad lines no valid one follows)")
    p = sub.add_parser("verdicts", help="print the verdicts recorded at a preset, or those that differ from another's")
    p.add_argument("--preset", "--scale", dest="preset", type=_preset, required=True,
                   help=f"one of: {', '.join(presets.PRESET_NAMES)} (--scale is the former name)")
    p.add_argument("--against", type=_preset_or_file, default=None, metavar="PRESET",
                   help="print only the rows whose verdict differs from this preset's (e.g. book) or verdict file's")
    p.set_defaults(func=cmd_verdicts)
    p = sub.add_parser("reproduce",
                       help="rerun every experiment and chapter at a preset, build its book, diff verdicts")
    p.add_argument("--preset", "--scale", dest="preset", type=_preset, required=True,
                   help=f"one of: {', '.join(presets.PRESET_NAMES)} (--scale is the former name)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    p.add_argument("--workers", type=_positive, default=1,
                   help="sweep workers, and chapters executed at once (default 1)")
    p.add_argument("--fuse", action="store_true", help="train runs differing only in sigma_w/seed as one network")
    p.add_argument("--tree", type=Path, default=None,
                   help="where the chapters are executed and built (default: _build/reproduce/PRESET)")
    p.add_argument("--against", type=_preset_or_file, default="book", metavar="PRESET",
                   help="the preset (or verdict file) whose verdicts it ends by comparing with (default: book)")
    p.set_defaults(func=cmd_reproduce)
    args = parser.parse_args(argv)
    try:
        if getattr(args, "preset", "") is None:  # the one place the command line reads the environment
            args.preset = presets.preset_from_environment().name
        return args.func(args)
    except (ValueError, FileNotFoundError, data.DatasetError, ResultsError, SweepError,
            reproduce.ReproduceError) as e:
        parser.exit(2, f"{parser.prog} {args.command}: error: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
