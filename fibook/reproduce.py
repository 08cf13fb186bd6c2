"""Rerun the whole book at one preset: ``make reproduce PRESET=NAME [DEVICE=...]`` (``python -m fibook reproduce``).

In four steps, each resumable:

1. the plan and its estimated cost on this device (:func:`fibook.forgetting.cost.reproduce_plan`), printed before
   anything is trained;
2. every experiment's missing runs at that preset (:func:`fibook.forgetting.sweep.run_sweep`: finished runs are kept,
   shared runs are copied, an interrupted sweep continues where it stopped);
3. every chapter executed at that preset into its own tree ``_build/reproduce/PRESET`` (a copy of the book's
   sources; the stored outputs of ``chapters/`` are never touched). A chapter whose notebook, package code and
   results files are unchanged since its last successful execution there is not executed again
   (:func:`chapter_key`); an executed notebook replaces its copy only when it ran to the end; the introduction,
   which gathers every chapter's verdicts, runs after the others;
4. that tree built into its own HTML book, ``_build/reproduce/PRESET/_build/html``.

It ends with the verdicts that changed against the book's (:func:`fibook.claims.changed`). Any chapter error, or
a NaN in a chapter's printed output or in a verdict record, fails the command after every chapter has been tried.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from fibook.paths import PROJECT_ROOT, results_dir
from fibook.presets import get_preset

# what a book tree is built from (the appendix includes requirements.txt)
SOURCES = ("_config.yml", "_toc.yml", "references.bib", "requirements.txt", "_static", "chapters")
STAMPS = ".reproduced.json"  # in the tree: chapter -> the key of its last successful execution there
# a chapter's own error, or the timeout that ended a hung cell
ERROR_LINE = re.compile(r"^(\w*(Error|Exception|Interrupt)|nbclient\.exceptions\.CellTimeout)")
NAN = re.compile(r"(?<![\w.])[-+]?nan(?![\w])", re.IGNORECASE)


class ReproduceError(RuntimeError):
    """A reproduction cannot start or finish; the message says what failed and the command that fixes it."""


def default_tree(preset: str) -> Path:
    """Where the chapters of ``preset`` are executed and built: ``_build/reproduce/PRESET`` of the checkout."""
    return PROJECT_ROOT / "_build" / "reproduce" / get_preset(preset).name


def contents(root: Path = PROJECT_ROOT) -> list[tuple[str, str]]:
    """The book's notebooks in the order of ``_toc.yml``: (the caption of their Part, their path relative to
    ``root``); the root page's Part is ``""``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    entries = [("", toc["root"])] + [(part.get("caption", ""), c["file"]) for part in toc.get("parts", [])
                                     for c in part.get("chapters", [])]
    return [(caption, f"{f}.ipynb") for caption, f in entries if (root / f"{f}.ipynb").is_file()]


def tests_claims(path: Path) -> bool:
    """Whether the notebook at ``path`` ends in a claims table (its code calls ``claims_table``), so it records
    verdicts; reference pages (the appendix) do not."""
    cells = json.loads(path.read_text())["cells"]
    return any("claims_table(" in "".join(c["source"]) for c in cells if c["cell_type"] == "code")


def chapters(root: Path = PROJECT_ROOT) -> list[str]:
    """The notebooks of the book in the order of ``_toc.yml``, as paths relative to ``root``."""
    return [path for _, path in contents(root)]


GREEK = {name: chr(0x3B1 + i) for i, name in enumerate(
    ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
     "omicron", "pi", "rho", "varsigma", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"))}


def plain(text: str) -> str:
    """``text`` with its inline math ``$...$`` as plain text (Greek letters as letters, braces dropped), for a link's
    text, where math is not typeset: ``$\\sigma_w$`` becomes ``σ_w``."""
    def math(m: re.Match) -> str:
        return re.sub(r"\\([A-Za-z]+)", lambda g: GREEK.get(g.group(1), g.group(1)), m.group(1)).translate(
            {ord("{"): None, ord("}"): None})

    return re.sub(r"\$([^$]+)\$", math, text)


def title(notebook: Path) -> str:
    """A notebook's title: the text of its first level-1 heading (else its file name)."""
    for cell in json.loads(notebook.read_text())["cells"]:
        m = re.search(r"^# (.+)$", "".join(cell["source"]), re.MULTILINE) if cell["cell_type"] == "markdown" else None
        if m:
            return m.group(1).strip()
    return notebook.stem


def _digest(folder: Path, pattern: str) -> str:
    """A hash of the files under ``folder`` that match ``pattern``: their paths relative to it and their bytes."""
    h = hashlib.sha256()
    for p in sorted(folder.glob(pattern)):
        h.update(str(p.relative_to(folder)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def chapter_key(notebook: Path, preset: str) -> str:
    """What a chapter's execution depends on: its cells' sources, the preset, the package's code and the results
    files of that preset. Outputs are not part of it, so a re-stored book chapter keeps its key."""
    cells = [(c["cell_type"], "".join(c["source"])) for c in json.loads(notebook.read_text())["cells"]]
    code = _digest(PROJECT_ROOT / "fibook", "**/*.py")
    data = _digest(results_dir(), f"*/{preset}.jsonl")
    return hashlib.sha256(json.dumps([cells, preset, code, data]).encode()).hexdigest()


def copy_sources(tree: Path, root: Path = PROJECT_ROOT) -> None:
    """Make ``tree`` a copy of the book's sources in ``root``, keeping the chapters already executed there: a
    chapter's notebook is copied only when the tree has none (its stamp decides whether it is executed again)."""
    tree.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        src, dst = root / name, tree / name
        if not src.exists():
            continue
        if src.is_file():
            shutil.copy2(src, dst)
            continue
        for path in src.rglob("*"):
            if path.is_dir() or ".ipynb_checkpoints" in path.parts:
                continue
            target = dst / path.relative_to(src)
            if path.suffix == ".ipynb" and target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def nan_outputs(notebook: Path) -> list[str]:
    """The printed outputs of an executed notebook that contain a NaN: ``cell N: <the line>``."""
    found = []
    for i, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] + [out.get("data", {}).get(k, "") for k in ("text/plain", "text/markdown")]
            for line in "".join("".join(t) for t in texts).splitlines():
                if NAN.search(line):
                    found.append(f"cell {i}: {line.strip()[:160]}")
    return found


def failed_page(source: Path, target: Path, preset: str, error: str) -> None:
    """Write ``target`` as the notebook ``source`` without outputs, under a note that it failed at ``preset`` with
    ``error``: the built page of a chapter that did not run shows no number of another preset."""
    nb = json.loads(source.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    note = f"```{{warning}}\nThis chapter failed at the '{preset}' preset: {error}\n```\n"
    nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": [note]})
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


@dataclass
class Execution:
    """What happened to one chapter: ``executed``, ``unchanged`` (skipped) or ``failed`` (with why)."""

    chapter: str
    outcome: str
    detail: str = ""


def execute(chapter: str, tree: Path, preset: str, root: Path = PROJECT_ROOT) -> Execution:
    """Execute ``root/chapter`` at ``preset`` (``$FIBOOK_PRESET``); on success the executed notebook replaces
    ``tree/chapter``. A chapter error, a cell that runs past the preset's ``cell_timeout`` or a NaN in its printed
    outputs is a failure."""
    source, target = root / chapter, tree / chapter
    partial = target.with_name(target.stem + ".partial.ipynb")
    env = os.environ | {"FIBOOK_PRESET": preset, "FIBOOK_VERDICTS": str(tree / "verdicts")}
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", str(source),
           "--output-dir", str(partial.parent), "--output", partial.name, "--ExecutePreprocessor.record_timing=False",
           f"--ExecutePreprocessor.timeout={get_preset(preset).cell_timeout}"]
    done = subprocess.run(cmd, env=env, cwd=source.parent, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        lines = [x.strip() for x in done.stderr.splitlines() if x.strip()]
        errors = [x for x in lines if ERROR_LINE.match(x)]
        error = (errors or lines or ["no message"])[-1][:300]
        failed_page(source, target, preset, error)
        return Execution(chapter, "failed", error)
    nans = nan_outputs(partial)
    os.replace(partial, target)
    if nans:
        return Execution(chapter, "failed", "NaN in its output: " + "; ".join(nans[:3]))
    return Execution(chapter, "executed")


def execute_chapters(preset: str, tree: Path, workers: int = 1, log=print,
                     root: Path = PROJECT_ROOT) -> list[Execution]:
    """Execute every chapter of the book in ``root`` at ``preset`` into ``tree`` (``workers`` at a time), skipping
    those whose :func:`chapter_key` matches their last successful execution there and whose verdict rows the tree's
    verdict file still holds."""
    preset = get_preset(preset).name
    copy_sources(tree, root)
    stamp_file = tree / STAMPS
    stamps = json.loads(stamp_file.read_text()) if stamp_file.is_file() else {}
    recorded = tree_verdicts(tree, preset)
    todo, results = [], []
    for chapter in chapters(root):
        key = chapter_key(root / chapter, preset)
        rows_lost = "claims_table(" in (root / chapter).read_text() and Path(chapter).stem not in recorded
        if stamps.get(chapter) == key and (tree / chapter).is_file() and not rows_lost:
            results.append(Execution(chapter, "unchanged"))
        else:
            todo.append((chapter, key))
    intro = chapters(root)[0]  # the introduction reads every chapter's verdicts: it runs after them, and with them
    if todo and intro not in {c for c, _ in todo}:
        results = [e for e in results if e.chapter != intro]
        todo.append((intro, chapter_key(root / intro, preset)))
    log(f"chapters at '{preset}': {len(todo)} to execute, {len(results)} unchanged since their last execution")
    waves = [[t for t in todo if t[0] != intro], [t for t in todo if t[0] == intro]]
    n = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for wave in waves:
            futures = {pool.submit(execute, chapter, tree, preset, root): (chapter, key) for chapter, key in wave}
            for future in concurrent.futures.as_completed(futures):
                chapter, key = futures[future]
                outcome = future.result()
                results.append(outcome)
                n += 1
                log(f"  [{n}/{len(todo)}] {chapter}: {outcome.outcome}"
                    + (f": {outcome.detail}" if outcome.detail else ""))
                if outcome.outcome == "executed":
                    stamps[chapter] = key
                    stamp_file.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    order = {c: i for i, c in enumerate(chapters(root))}
    return sorted(results, key=lambda e: order[e.chapter])


def tree_verdicts(tree: Path, preset: str) -> dict:
    """The chapters' verdict rows recorded in ``tree`` at ``preset`` (``TREE/verdicts/PRESET.json``), by chapter."""
    from fibook.claims import read_verdicts

    path = tree / "verdicts" / f"{preset}.json"
    return read_verdicts(path)["chapters"] if path.is_file() else {}


def build(tree: Path) -> Path:
    """Build ``tree`` into HTML (warnings as errors, as ``make book``); returns the index page's path."""
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(tree), "-W", "-n", "--keep-going"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise ReproduceError(f"the book at {tree} did not build:\n{tail}")
    return tree / "_build" / "html" / "index.html"


def plan_table(rows: list[dict], device: str, workers: int) -> tuple[list[dict], str]:
    """The plan of :func:`fibook.forgetting.cost.reproduce_plan` as a table to print, and its total: runs to train,
    images, and the estimated hours on ``device`` at ``workers`` runs at a time."""
    table = [{"experiment": r["experiment"], "runs to train": r["missing"], "precision": r["precision"] or "—",
              "training images": f"{r['images']:,}", "evaluation images": f"{r['eval_images']:,}",
              "PFLOP": f"{r['flops'] / 1e15:,.3g}", f"hours on {device}": f"{r['hours']:.2g}"} for r in rows]
    runs, hours = sum(r["missing"] for r in rows), sum(r["hours"] for r in rows)
    total = (f"{runs} runs to train, {sum(r['images'] for r in rows):,} training images: about {hours:.2g} hours on "
             f"{device} one run at a time, {hours / workers:.2g} with {workers} worker(s)") if runs else \
        "every run of this preset is in its results files: nothing to train"
    return table, total


def reproduce(preset: str, device: str = "auto", workers: int = 1, tree: Path | None = None, fuse: bool = False,
              against: str | None = "book", log=print) -> int:
    """Steps 1-4 of the module's docstring, then the verdicts recorded in the tree that differ from ``against``'s
    (a preset, read from the verdict folder, or a verdict file). The tree's verdict file is then copied into the
    verdict folder (``python -m fibook verdicts`` reads it there), unless that is the file it was compared with: a
    rerun of the committed book's preset never overwrites the committed verdicts. Returns 0, or 1 when a run failed,
    a chapter failed, a verdict record holds a NaN or the book did not build (everything is tried first)."""
    from fibook import claims
    from fibook.forgetting import cost, sweep
    from fibook.forgetting.devices import check_device, resolve_device
    from fibook.forgetting.experiments import EXPERIMENTS, runs

    start = time.monotonic()
    preset = get_preset(preset).name
    device = check_device(device)
    shown_device = str(resolve_device(device))
    tree = default_tree(preset) if tree is None else Path(tree)
    sweep.check_data([c for name in EXPERIMENTS for c in runs(name, preset)])
    log(f"== plan at preset '{preset}' on {shown_device}: every experiment's missing runs, then "
        f"{len(chapters())} chapters into {tree}")
    table, total = plan_table(cost.reproduce_plan(preset, device, fuse=fuse), shown_device, workers)
    log(claims.markdown_table(table))
    log(total)
    log("== sweeps")
    failed_runs = 0
    for n, name in enumerate(EXPERIMENTS, 1):
        counts = sweep.run_sweep(name, preset, workers=workers, device=device, fuse=fuse)
        log(f"[{n}/{len(EXPERIMENTS)}] {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if counts["failed"]:
            failed_runs += counts["failed"]
            log(f"  {counts['failed']} run(s) of {name} failed: `python -m fibook status {name} --preset {preset}`; "
                "a rerun retries them, and the chapters read what finished")
    log("== chapters")
    executed = execute_chapters(preset, tree, workers=workers, log=log)
    failed = [e for e in executed if e.outcome == "failed"]
    ours = tree / "verdicts" / f"{preset}.json"
    records = claims.rows(claims.read_verdicts(ours)) if ours.is_file() else []
    nan_rows = [r for r in records if any(NAN.search(str(r[k])) for k in ("paper", "ours", "agrees"))]
    for r in nan_rows:
        log(f"NaN in a verdict record of {r['chapter']}: {r['claim']}: {r['ours']}")
    log("== book")
    try:
        log(f"built {build(tree)}")
        built = True
    except ReproduceError as e:
        log(str(e))
        built = False
    reference = None
    if against is not None:
        reference = Path(against) if against.endswith(".json") else claims.verdicts_path(against)
        if not records or not reference.is_file():
            log(f"== no verdicts to compare: {'none recorded' if not records else f'no verdict file {reference}'}")
        else:
            diff = claims.changed(claims.read_verdicts(ours), claims.read_verdicts(reference),
                                    [Path(c).stem for c in chapters()])
            log(f"== verdicts at '{preset}' that differ from {reference}: {len(diff)} of {len(records)} rows")
            if diff:
                log(claims.markdown_table(diff))
    published = claims.verdicts_path(preset)
    if records and (reference is None or published.resolve() != reference.resolve()):
        published.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ours, published)
        log(f"verdicts at '{preset}' recorded in {published}")
    log(f"reproduce at '{preset}' took {(time.monotonic() - start) / 60:.1f} min")
    if failed_runs or failed or nan_rows or not built:
        log(f"failed: {failed_runs} run(s), {len(failed)} chapter(s), {len(nan_rows)} verdict record(s) with a NaN; "
            f"the book {'built' if built else 'did not build'}"
            + "".join(f"\n  {e.chapter}: {e.detail}" for e in failed))
        return 1
    return 0


def verdict_overview(preset: str) -> list[tuple[str, list[dict]]]:
    """What the book found at ``preset``, read from its verdict file, Part by Part (those with a chapter that
    :func:`tests_claims`): a line counting the Part's verdicts by class, and the table of its claims
    (:func:`fibook.claims.book_table`). No file yet: one line saying how to write it, and no rows."""
    from fibook import claims

    preset = get_preset(preset).name
    if not claims.verdicts_path(preset).is_file():
        return [(f"No verdicts are recorded at the '{preset}' preset yet: `make reproduce PRESET={preset}` writes "
                 "them.", [])]
    data = claims.read_verdicts(preset)
    entries = [(caption, "/" + str(Path(path).with_suffix("")), plain(title(PROJECT_ROOT / path)))
               for caption, path in contents() if caption]
    testing = {caption for caption, path in contents() if caption and tests_claims(PROJECT_ROOT / path)}
    entries = [e for e in entries if e[0] in testing]
    out = []
    for caption in dict.fromkeys(c for c, _, _ in entries):
        part = [(doc, name) for c, doc, name in entries if c == caption]
        table = claims.book_table(data, part)
        tally = ", ".join(f"{n} {v}" for v, n in claims.counts(table).items())
        tests = claims.family_wise_line([r for doc, _ in part for r in data["chapters"].get(Path(doc).stem, [])])
        out.append((f"{caption}: {len(table)} claims ({tally})" + (f"; {tests}" if tests else "")
                    if table else f"{caption}: no verdicts recorded", table))
    return out
