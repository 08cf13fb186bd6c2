"""The book's verdicts as data: every row of a chapter's "claim | paper | ours | agrees?" table is a
:class:`Claim` record, and every chapter that runs writes its rows to the verdict file of its preset.

A verdict rule (a tested function of a Part's ``claims`` module, marked with :func:`rule`) returns a
:class:`Finding`: a :class:`Verdict` and the reason printed after it. A record holds the claim, the paper's number,
ours (with the setting it was measured in), the verdict and its text, the rule that decided it (its qualified name)
with the values of the named thresholds it reads, and the ids of the results-store runs it read (none when the
chapter computes its numbers itself). Two presets are compared on the verdict (their numbers always differ).

``data/verdicts/PRESET.json`` (under ``$FIBOOK_VERDICTS`` when set) holds ``{"preset": ..., "chapters": {NAME:
[record, ...]}}``; a chapter replaces its own rows under a lock, so chapters executed side by side never lose
each other's rows, and a file is rewritten only when its contents change. ``python -m fibook verdicts --preset X
[--against book]`` prints a preset's rows, or only the rows whose verdict differs from another preset's.

Serves every chapter's closing table, the introduction's table of all claims, and the appendix page on how the
verdicts are decided.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fibook.paths import verdicts_dir


class Verdict(enum.Enum):
    """What a row of a claims table says about the paper's claim, strongest agreement first.

    ``CONSISTENT``: agrees by construction, or with numbers inferred from the paper's own figures;
    ``NOT_APPLICABLE``: the claim is not the paper's (a control); ``OWN``: a result of the book's own, which the
    paper does not state. The value is the word a verdict file stores; :attr:`phrase` is how a table prints it.
    """

    YES = "yes"
    QUALITATIVELY = "qualitatively"
    WEAKLY = "weakly"
    PARTLY = "partly"
    CONSISTENT = "consistent"
    NO = "no"
    NOT_RESOLVED = "not resolved"
    NOT_TESTED = "not tested"
    NOT_APPLICABLE = "n/a"
    OWN = "own"

    @property
    def phrase(self) -> str:
        """The words a table prints for the verdict (``our own`` for :attr:`OWN`, else its value)."""
        return "our own" if self is Verdict.OWN else self.value


TEXT_COMPARED = (Verdict.CONSISTENT, Verdict.NOT_APPLICABLE, Verdict.OWN)  # compared across presets by their text too
UNTHRESHOLDED = (Verdict.CONSISTENT, Verdict.OWN)  # the verdicts a row may take without a tested threshold


@dataclass(frozen=True)
class Finding:
    """A rule's decision: the :class:`Verdict` and the reason printed right after its phrase, joining punctuation
    included (``": selected before it fits the training set"``, ``" (a shift of 2.0 decades)"``; empty for none).

    >>> Finding(Verdict.NO, ": selected before it fits the training set").text
    'no: selected before it fits the training set'
    """

    verdict: Verdict
    reason: str = ""

    def __post_init__(self):
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"a finding's verdict is a Verdict ({', '.join(v.name for v in Verdict)}); "
                            f"got {self.verdict!r}")
        if self.reason and (self.reason[0].isalnum() or self.reason != self.reason.rstrip()):
            raise ValueError(f"a reason begins with its joining punctuation or a space and ends without one, so it "
                             f"reads after {self.verdict.phrase!r}; got {self.reason!r}")

    @property
    def text(self) -> str:
        """The verdict as the table prints it: its phrase, then the reason."""
        return self.verdict.phrase + self.reason

    def __str__(self) -> str:
        return self.text

    def with_note(self, note: str) -> Finding:
        """The same verdict with ``note`` (joining punctuation included) after its reason."""
        return Finding(self.verdict, self.reason + note)


def yes_or_no(holds: bool) -> Finding:
    """``yes`` when the rule's condition ``holds``, else ``no`` (no reason printed)."""
    return Finding(Verdict.YES if holds else Verdict.NO)


@dataclass(frozen=True)
class Quoted:
    """A number a paper states: its ``value`` (a number, or a range as a tuple), its ``text`` as the book prints it,
    and its ``source`` (where the paper, or a secondary summary of it, states it). Each Part keeps its paper's
    quoted numbers in one registry, its ``paper`` module."""

    value: float | tuple[float, ...]
    text: str
    source: str

    def __str__(self) -> str:
        return self.text


def finding_of(text: str, verdict: str) -> Finding:
    """The finding a verdict file records as ``verdict`` (a :class:`Verdict` value) and ``text``; ValueError unless
    ``text`` begins with that verdict's phrase as a whole word."""
    v = Verdict(verdict)
    rest = text[len(v.phrase):]
    if not text.startswith(v.phrase) or (rest and rest[0].isalnum()):
        raise ValueError(f"the text {text!r} does not begin with the verdict {v.phrase!r}")
    return Finding(v, rest)


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


def thresholds_of(fn: Callable) -> dict[str, float]:
    """The values of the thresholds rule ``fn`` reads (its :func:`rule` mark), by name."""
    module = sys.modules[fn.__module__]
    return {name: getattr(module, name) for name in getattr(fn, "thresholds", ())}


@rule()
def not_thresholded(finding: Finding) -> Finding:
    """A verdict given without a threshold set before the data: ``finding`` unchanged when its verdict is
    ``consistent`` (agrees by construction, or a number is reported beside the paper's without a test) or ``own``
    (a result the paper does not state); any other verdict (``yes``, ``no``, ...) needs a tested rule, so it is a
    ValueError here."""
    if finding.verdict not in UNTHRESHOLDED:
        raise ValueError(f"the verdict {finding.text!r} claims more than a report: decide it with a tested rule")
    return finding


@dataclass(frozen=True)
class Claim:
    """One row of a chapter's comparison with its paper.

    ``ours`` states the setting it was measured in (preset, dataset, model); ``finding`` is the verdict and its
    reason (:class:`Finding`). ``rule`` is the function that decided it (given as the function, it is stored as its
    qualified name and its thresholds are read from its :func:`rule` mark; given as a name, the ``thresholds`` are
    given too). ``runs`` are the ids of the results-store runs the row read. ``key`` names the row across presets
    when the claim's text carries numbers of the preset (default: the claim's text).
    """

    claim: str
    paper: str
    ours: str
    finding: Finding
    rule: str | Callable = ""
    thresholds: Mapping[str, float] = field(default_factory=dict)
    runs: tuple[str, ...] = ()
    key: str = ""

    def __post_init__(self):
        if not isinstance(self.finding, Finding):
            raise TypeError(f"claim {self.claim!r}: its verdict is a Finding (a Verdict and a reason), decided by a "
                            f"rule; got {self.finding!r}")
        if callable(self.rule):
            fn = self.rule
            object.__setattr__(self, "rule", f"{fn.__module__}.{fn.__qualname__}")
            object.__setattr__(self, "thresholds", {**thresholds_of(fn), **self.thresholds})
        object.__setattr__(self, "thresholds", dict(self.thresholds))
        object.__setattr__(self, "runs", tuple(sorted(set(self.runs))))
        if not self.key:
            object.__setattr__(self, "key", self.claim)

    @property
    def verdict(self) -> Verdict:
        """The row's :class:`Verdict`."""
        return self.finding.verdict

    @property
    def agrees(self) -> str:
        """The verdict as the table's "agrees?" column prints it."""
        return self.finding.text

    def record(self, chapter: str, preset: str) -> dict:
        """The row as the verdict file stores it (every field, the verdict's value and text, chapter and preset)."""
        if not self.rule:
            raise ValueError(f"claim {self.claim!r} of chapter {chapter!r} names no rule: every verdict is decided "
                             "by a tested fibook function, given as rule=")
        return {"chapter": chapter, "preset": preset, "verdict": self.verdict.value, "claim": self.claim,
                "paper": self.paper, "ours": self.ours, "agrees": self.agrees, "rule": self.rule,
                "thresholds": dict(self.thresholds), "runs": list(self.runs), "key": self.key}


def verdicts_path(preset: str) -> Path:
    """``data/verdicts/PRESET.json`` (under ``$FIBOOK_VERDICTS`` when set)."""
    return verdicts_dir() / f"{preset}.json"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _former_names(data: dict) -> dict:
    """``data`` with the former key ``scale`` (of the file and of each row) renamed ``preset``."""
    if "scale" not in data:
        return data
    def rename(d: dict) -> dict:
        return {("preset" if k == "scale" else k): v for k, v in d.items()}

    out = rename(data)
    out["chapters"] = {name: [rename(r) for r in rows] for name, rows in data["chapters"].items()}
    return out


def read_verdicts(source: str | Path) -> dict:
    """The verdict file of preset ``source`` (a preset name, or the path of a verdict file):
    ``{"preset": ..., "chapters": {NAME: [record, ...]}}``; a file written before the size presets were so called
    names its preset ``scale`` and reads the same. A missing file says which command writes it."""
    named = str(source).endswith(".json")
    path = Path(source) if named else verdicts_path(str(source))
    if not path.is_file():
        raise FileNotFoundError(f"no verdict file {path}" + ("" if named else
                                f": chapters write it when they run at that preset (make reproduce PRESET={source})"))
    try:
        data = _former_names(json.loads(path.read_text()))
        chapters = data["chapters"]
        for name, rows in chapters.items():
            for r in rows:
                if r["chapter"] != name:
                    raise ValueError(f"a row of chapter {name!r} says it belongs to {r['chapter']!r}")
                finding_of(r["agrees"], r["verdict"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"verdict file {path} is not a verdict file ({e}); delete it and rerun the chapters that "
                         "write it") from e
    return data


def write_chapter(chapter: str, preset: str, claims: Sequence[Claim], path: Path | None = None) -> Path:
    """Replace chapter ``chapter``'s rows in the verdict file of ``preset`` by ``claims``; the file is written
    (atomically) only when its contents change. Returns its path."""
    path = verdicts_path(preset) if path is None else path
    records = json.loads(json.dumps([c.record(chapter, preset) for c in claims]))  # as read back: lists, not tuples
    with _locked(path):
        data = read_verdicts(path) if path.is_file() else {"preset": preset, "chapters": {}}
        if data["preset"] != preset:
            raise ValueError(f"verdict file {path} holds preset {data['preset']!r}, not {preset!r}")
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
        return a["verdict"] != b["verdict"] or (Verdict(a["verdict"]) in TEXT_COMPARED and a["agrees"] != b["agrees"])

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
    """How many rows have each verdict, by the verdict's value in the order of :class:`Verdict` (those with none
    left out)."""
    tally = {v.value: 0 for v in Verdict}
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
    corrected for multiplicity, so the bound is what a reader should allow for); empty when none was tested. Each
    row counts as one test at its level, and so does a row that combines several tests (a trend read step by step,
    a ladder's rungs), for which the bound is approximate; the line says so."""
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
            "(Bonferroni, one test per row)")


def table_rows(claims: Sequence[Claim]) -> list[dict[str, str]]:
    """The claims as the rows of a chapter's closing table: claim, paper's number, ours (preset, dataset, model),
    agrees? (the verdict's text)."""
    return [{"claim": c.claim, "paper's number": c.paper, "ours (preset, dataset, model)": c.ours,
             "agrees?": c.agrees} for c in claims]


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
