"""The book's verdicts as data: every row of a chapter's "claim | paper | ours | agrees?" table is a
:class:`Claim` record, and every chapter that runs writes its rows to the verdict file of its scale.

A record holds the claim, the paper's number, ours (with the setting it was measured in), the verdict text, the
rule that decided it (the qualified name of the tested fibook function) with the values of the named thresholds
it reads, and the ids of the results-store runs it read (none when the chapter computes its numbers itself). The
verdict text begins with one of the words of :data:`VERDICTS`; :attr:`Claim.verdict` is that word, and it is what
two scales are compared on (their numbers always differ).

``data/verdicts/SCALE.json`` (under ``$FIBOOK_VERDICTS`` when set) holds ``{"scale": ..., "chapters": {NAME:
[record, ...]}}``; a chapter replaces its own rows under a lock, so chapters executed side by side never lose
each other's rows, and a file is rewritten only when its contents change. ``python -m fibook verdicts --scale X
[--against book]`` prints a scale's rows, or only the rows whose verdict differs from another scale's.
"""

from __future__ import annotations

import contextlib
import fcntl
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fibook.paths import verdicts_dir

# The words a verdict text begins with, strongest agreement first. "own": a result of fibook's own, which the
# paper does not state; "n/a": the claim is not the paper's (a control); "consistent": agrees by construction or
# with numbers inferred from the paper's own figures.
VERDICTS = ("yes", "qualitatively", "weakly", "partly", "consistent", "no", "not resolved", "not tested", "n/a",
            "own")
_WORDS = sorted((v if v != "own" else "our own" for v in VERDICTS), key=len, reverse=True)  # "not ..." before "no"
_LEAD = re.compile(rf"^({'|'.join(map(re.escape, _WORDS))})(?![\w])")
TEXT_COMPARED = ("consistent", "n/a", "own")  # classes whose text, not only their class, is compared across scales


def verdict_class(agrees: str) -> str:
    """The word of :data:`VERDICTS` that the verdict text ``agrees`` begins with ("our own ..." is ``own``).

    >>> verdict_class("no: selected before it fits the training set")
    'no'
    """
    m = _LEAD.match(agrees.strip())
    if m is None:
        raise ValueError(f"a verdict must begin with one of {', '.join(VERDICTS)} (or 'our own'); got {agrees!r}")
    word = m.group(1)
    return "own" if word == "our own" else word


def rule(*constants: str, fixed: str = "") -> Callable[[Callable], Callable]:
    """Mark a function as a verdict rule that reads the named module-level ``constants`` as its thresholds;
    a :class:`Claim` built with ``rule=fn`` records the function's name and those constants' values. ``fixed``
    says when the rule was fixed and which of its results existed then (kept as ``fn.fixed``)."""
    def mark(fn: Callable) -> Callable:
        module = sys.modules[fn.__module__]
        missing = [c for c in constants if not hasattr(module, c)]
        if missing:
            raise ValueError(f"rule {fn.__qualname__} names thresholds {missing} that {fn.__module__} does not define")
        fn.thresholds = constants
        fn.fixed = fixed
        return fn
    return mark


UNTHRESHOLDED = ("consistent", "own")  # the verdict classes a row may take without a tested threshold


@rule()
def not_thresholded(agrees: str) -> str:
    """A verdict given without a threshold set before the data: ``agrees`` unchanged when its class is
    ``consistent`` (agrees by construction, or a number is reported beside the paper's without a test) or ``own``
    (a result the paper does not state); any other class (``yes``, ``no``, ...) needs a tested rule, so it is a
    ValueError here."""
    if verdict_class(agrees) not in UNTHRESHOLDED:
        raise ValueError(f"the verdict {agrees!r} claims more than a report: decide it with a tested rule")
    return agrees


def _thresholds(fn: Callable) -> dict[str, float]:
    module = sys.modules[fn.__module__]
    return {name: getattr(module, name) for name in getattr(fn, "thresholds", ())}


def rules_of(module) -> list[Callable]:
    """The verdict rules a claims ``module`` defines (its functions marked with :func:`rule`), in source order."""
    found = [f for f in vars(module).values()
             if callable(f) and hasattr(f, "thresholds") and getattr(f, "__module__", None) == module.__name__]
    return sorted(found, key=lambda f: f.__code__.co_firstlineno)


_ROLE = re.compile(r":(?:func|meth|class|data|attr|mod):`~?(?:[\w.\s]+\.\s*)?(\w+)`")  # a target may wrap
_PROSE = ((re.compile(r"``([^`]+)``"), lambda m: f"`{m.group(1)}`"), (re.compile(r"\+-"), lambda m: "±"),
          *((re.compile(rf"\b{word}\b"), lambda m, tex=tex: f"${tex}$")
            for word, tex in (("sigma_w", r"\sigma_w"), ("lambda", r"\lambda"), ("rho", r"\rho"), ("eta", r"\eta"))))


def docstring_markdown(fn: Callable) -> str:
    """A rule's docstring as MyST prose: a cross-reference (``:func:`~a.b``` and the like) becomes the inline code
    of its last name, a double-backquoted literal single-backquoted, ``+-`` becomes ±, the names sigma_w,
    lambda, rho and eta become math, and the lines of a paragraph are joined."""
    text = _ROLE.sub(r"``\1``", inspect.getdoc(fn) or "")
    for pattern, replacement in _PROSE:
        text = pattern.sub(replacement, text)
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def helpers_of(module) -> list[Callable]:
    """The functions of ``module`` that its rules' docstrings refer to (``:func:`name```), and those theirs refer
    to, that are not rules themselves (the conditions and error bars several rules share), in source order."""
    rules = rules_of(module)
    own = {n: f for n, f in vars(module).items()
           if inspect.isfunction(f) and f.__module__ == module.__name__ and f not in rules}
    found: dict[str, Callable] = {}
    reading = rules
    while reading:
        named = {m.group(1) for fn in reading for m in _ROLE.finditer(inspect.getdoc(fn) or "")}
        reading = [own[n] for n in sorted(named) if n in own and n not in found]
        found.update((f.__name__, f) for f in reading)
    return sorted(found.values(), key=lambda f: f.__code__.co_firstlineno)


def rule_catalogue(module) -> str:
    """The verdict rules of a claims ``module`` as a MyST page section: per rule (:func:`rules_of`) a heading with
    its name, its docstring (:func:`docstring_markdown`), the values of the thresholds it reads and, where
    recorded, when it was fixed and which results existed then; then the shared conditions the rules refer to
    (:func:`helpers_of`), each with its docstring."""
    parts = []
    for fn in rules_of(module):
        lines = [f"### `{fn.__name__}`", "", docstring_markdown(fn), ""]
        values = _thresholds(fn)
        if values:
            lines.append("Thresholds: " + ", ".join(f"`{k} = {v!r}`" for k, v in values.items()) + ".")
        if fn.fixed:
            lines.append(("" if not values else "\n") + f"Fixed: {fn.fixed}.")
        parts.append("\n".join(lines).rstrip())
    helpers = helpers_of(module)
    if helpers:
        parts.append("### What several rules share\n\n" + "\n\n".join(
            f"`{fn.__name__}`: {docstring_markdown(fn)}" for fn in helpers))
    return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class Claim:
    """One row of a chapter's comparison with its paper.

    ``ours`` states the setting it was measured in (scale, dataset, model); ``agrees`` is the verdict text,
    beginning with a word of :data:`VERDICTS`. ``rule`` is the function that decided it (given as the function, it
    is stored as its qualified name and its thresholds are read from its :func:`rule` mark; given as a name, the
    ``thresholds`` are given too). ``runs`` are the ids of the results-store runs the row read. ``key`` names the
    row across scales when the claim's text carries numbers of the scale (default: the claim's text).
    """

    claim: str
    paper: str
    ours: str
    agrees: str
    rule: str | Callable = ""
    thresholds: Mapping[str, float] = field(default_factory=dict)
    runs: tuple[str, ...] = ()
    key: str = ""

    def __post_init__(self):
        verdict_class(self.agrees)
        if callable(self.rule):
            fn = self.rule
            object.__setattr__(self, "rule", f"{fn.__module__}.{fn.__qualname__}")
            object.__setattr__(self, "thresholds", {**_thresholds(fn), **self.thresholds})
        object.__setattr__(self, "thresholds", dict(self.thresholds))
        object.__setattr__(self, "runs", tuple(sorted(set(self.runs))))
        if not self.key:
            object.__setattr__(self, "key", self.claim)

    @property
    def verdict(self) -> str:
        """The verdict's class: the word of :data:`VERDICTS` its text begins with."""
        return verdict_class(self.agrees)

    def record(self, chapter: str, scale: str) -> dict:
        """The row as the verdict file stores it (every field, its verdict class, its chapter and scale)."""
        if not self.rule:
            raise ValueError(f"claim {self.claim!r} of chapter {chapter!r} names no rule: every verdict is decided "
                             "by a tested fibook function, given as rule=")
        return {"chapter": chapter, "scale": scale, "verdict": self.verdict, **asdict(self)}


def verdicts_path(scale: str) -> Path:
    """``data/verdicts/SCALE.json`` (under ``$FIBOOK_VERDICTS`` when set)."""
    return verdicts_dir() / f"{scale}.json"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_verdicts(source: str | Path) -> dict:
    """The verdict file of scale ``source`` (a scale name, or the path of a verdict file):
    ``{"scale": ..., "chapters": {NAME: [record, ...]}}``. A missing file says which command writes it."""
    named = str(source).endswith(".json")
    path = Path(source) if named else verdicts_path(str(source))
    if not path.is_file():
        raise FileNotFoundError(f"no verdict file {path}" + ("" if named else
                                f": chapters write it when they run at that scale (make reproduce SCALE={source})"))
    try:
        data = json.loads(path.read_text())
        chapters = data["chapters"]
        for name, rows in chapters.items():
            for r in rows:
                if r["chapter"] != name:
                    raise ValueError(f"a row of chapter {name!r} says it belongs to {r['chapter']!r}")
                if r["verdict"] != verdict_class(r["agrees"]):
                    raise ValueError(f"a row of {name!r} has verdict {r['verdict']!r} for {r['agrees']!r}")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"verdict file {path} is not a verdict file ({e}); delete it and rerun the chapters that "
                         "write it") from e
    return data


def write_chapter(chapter: str, scale: str, claims: Sequence[Claim], path: Path | None = None) -> Path:
    """Replace chapter ``chapter``'s rows in the verdict file of ``scale`` by ``claims``; the file is written
    (atomically) only when its contents change. Returns its path."""
    path = verdicts_path(scale) if path is None else path
    records = json.loads(json.dumps([c.record(chapter, scale) for c in claims]))  # as read back: lists, not tuples
    with _locked(path):
        data = read_verdicts(path) if path.is_file() else {"scale": scale, "chapters": {}}
        if data["scale"] != scale:
            raise ValueError(f"verdict file {path} holds scale {data['scale']!r}, not {scale!r}")
        if data["chapters"].get(chapter) == records:
            return path
        data["chapters"][chapter] = records
        data["chapters"] = dict(sorted(data["chapters"].items()))
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    return path


def rows(data: Mapping, order: Sequence[str] = ()) -> list[dict]:
    """Every record of a verdict file, chapters in ``order`` first (then by name), rows in their chapter's order."""
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(data["chapters"], key=lambda n: (rank.get(n, len(rank)), n))
    return [r for n in names for r in data["chapters"][n]]


def changed(ours: Mapping, reference: Mapping, order: Sequence[str] = ()) -> list[dict]:
    """The rows whose verdict differs between two verdict files, matched on (chapter, key): their classes differ,
    or, for the classes of :data:`TEXT_COMPARED`, their texts. Then the rows found in one file only (the missing
    side reads ``(no such row)``), and one row per chapter that only one file holds (``(chapter not run)``):
    ``{"chapter", "claim", "reference", "ours"}``."""
    def differs(a: Mapping, b: Mapping) -> bool:
        return a["verdict"] != b["verdict"] or (a["verdict"] in TEXT_COMPARED and a["agrees"] != b["agrees"])

    both = set(ours["chapters"]) & set(reference["chapters"])
    index = {(r["chapter"], r["key"]): r for r in rows(reference) if r["chapter"] in both}
    out, seen = [], set()
    for r in rows(ours, order):
        if r["chapter"] not in both:
            continue
        k = (r["chapter"], r["key"])
        seen.add(k)
        ref = index.get(k)
        if ref is None or differs(r, ref):
            out.append({"chapter": r["chapter"], "claim": r["claim"],
                        "reference": "(no such row)" if ref is None else ref["agrees"], "ours": r["agrees"]})
    out += [{"chapter": ref["chapter"], "claim": ref["claim"], "reference": ref["agrees"], "ours": "(no such row)"}
            for k, ref in index.items() if k not in seen]
    rank = {name: i for i, name in enumerate(order)}
    one_side = sorted(set(ours["chapters"]) ^ set(reference["chapters"]), key=lambda n: (rank.get(n, len(rank)), n))
    out += [{"chapter": name, "claim": "(every claim)",
             "reference": "(recorded)" if name in reference["chapters"] else "(chapter not run)",
             "ours": "(recorded)" if name in ours["chapters"] else "(chapter not run)"} for name in one_side]
    return out


def counts(records: Sequence[Mapping]) -> dict[str, int]:
    """How many rows have each verdict class, in the order of :data:`VERDICTS` (classes with none left out)."""
    tally = {v: 0 for v in VERDICTS}
    for r in records:
        tally[r["verdict"]] += 1
    return {v: n for v, n in tally.items() if n}


def tested(records: Sequence[Mapping]) -> list[Mapping]:
    """The records decided by a significance test: their rule names a ``CONFIDENCE`` threshold, and the test ran
    (the verdict is not ``not tested`` or ``n/a``)."""
    return [r for r in records if "CONFIDENCE" in r["thresholds"] and r["verdict"] not in ("not tested", "n/a")]


def family_wise_line(records: Sequence[Mapping]) -> str:
    """How many of ``records`` a significance test decided, and the Bonferroni bound on the chance that at least
    one of them reports an effect that is not there (:func:`fibook.stats.family_wise_error`; the tests are not
    corrected for multiplicity, so the bound is what a reader should allow for); empty when none was tested."""
    from fibook.stats import family_wise_error

    found = tested(records)
    if not found:
        return ""
    levels = sorted({r["thresholds"]["CONFIDENCE"] for r in found})
    level = f"the {100 * (1 - levels[0]):g} % level" if len(levels) == 1 else \
        f"levels of {100 * (1 - levels[-1]):g} to {100 * (1 - levels[0]):g} %"
    bound = sum(family_wise_error(1, r["thresholds"]["CONFIDENCE"]) for r in found)
    return (f"{len(found)} decided by tests at {level} each, uncorrected: the chance that "
            f"at least one of them reports an effect that is not there is at most {100 * min(1.0, bound):.0f} % "
            "(Bonferroni)")


def markdown_table(table: Sequence[Mapping[str, object]]) -> str:
    """Rows of equal keys as a Markdown table (the keys of the first row are the header); a pipe in a header or a
    cell is escaped, so it cannot end the cell."""
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = list(table[0])
    lines = ["| " + " | ".join(cell(k) for k in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(r[k]) for k in header) + " |" for r in table]
    return "\n".join(lines)


def book_table(data: Mapping, contents: Sequence[tuple[str, str]]) -> list[dict]:
    """The table of the claims of a verdict file and their verdict classes, in the order of ``contents``: each
    chapter's (document path without suffix, title); the chapter cell links to its page, where the
    chapter's own table gives our number and the verdict's reason."""
    out = []
    for doc, name in contents:
        stem = Path(doc).stem
        for r in data["chapters"].get(stem, []):
            out.append({"chapter": f"{{doc}}`{name} <{doc}>`", "claim": r["claim"], "paper's number": r["paper"],
                        "verdict": r["verdict"]})
    return out
