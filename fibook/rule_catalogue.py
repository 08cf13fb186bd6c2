"""The verdict rules written out for the reader: every rule of a Part's ``claims`` module (or, in Part I, of each
chapter's claims module) with its docstring, its thresholds and when it was fixed, and the conditions several rules
share. The appendix page "How the verdicts are decided" (``chapters/appendix/verdict_rules.ipynb``) is this
module's output for the three Parts.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence

from fibook.claims import thresholds_of


def rules_of(module) -> list[Callable]:
    """The verdict rules a claims ``module`` defines (its functions marked with
    :func:`fibook.claims.rule`), in source order."""
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


def helpers_of(module, rules: Sequence[Callable] | None = None) -> list[Callable]:
    """The functions of ``module`` that ``rules`` (default: the module's own, :func:`rules_of`) refer to in their
    docstrings (``:func:`name```), and those theirs refer to, that are not rules themselves (the conditions and
    error bars several rules share), in source order."""
    own_rules = rules_of(module)
    own = {n: f for n, f in vars(module).items()
           if inspect.isfunction(f) and f.__module__ == module.__name__ and f not in own_rules}
    found: dict[str, Callable] = {}
    reading = own_rules if rules is None else list(rules)
    while reading:
        named = {m.group(1) for fn in reading for m in _ROLE.finditer(inspect.getdoc(fn) or "")}
        reading = [own[n] for n in sorted(named) if n in own and n not in found]
        found.update((f.__name__, f) for f in reading)
    return sorted(found.values(), key=lambda f: f.__code__.co_firstlineno)


def helper_catalogue(modules: Sequence, rules: Sequence[Callable], level: int = 3) -> str:
    """The section "What several rules share": each function of ``modules`` that ``rules`` refer to
    (:func:`helpers_of`) with its docstring; empty when there is none."""
    helpers = [fn for module in modules for fn in helpers_of(module, rules)]
    if not helpers:
        return ""
    return f"{'#' * level} What several rules share\n\n" + "\n\n".join(
        f"`{fn.__name__}`: {docstring_markdown(fn)}" for fn in helpers)


def rule_catalogue(module, level: int = 3, shared: Sequence = ()) -> str:
    """The verdict rules of a claims ``module`` as a MyST page section: per rule (:func:`rules_of`) a heading of
    ``level`` with its name, its docstring (:func:`docstring_markdown`), the values of the thresholds it reads and,
    where recorded, when it was fixed and which results existed then; then the shared conditions the rules refer to,
    in ``module`` and in the modules ``shared`` (:func:`helper_catalogue`)."""
    parts = []
    for fn in rules_of(module):
        lines = [f"{'#' * level} `{fn.__name__}`", "", docstring_markdown(fn), ""]
        values = thresholds_of(fn)
        if values:
            lines.append("Thresholds: " + ", ".join(f"`{k} = {v!r}`" for k, v in values.items()) + ".")
        if fn.fixed:
            lines.append(("" if not values else "\n") + f"Fixed: {fn.fixed}.")
        parts.append("\n".join(lines).rstrip())
    helpers = helper_catalogue([module, *shared], rules_of(module), level)
    return "\n\n".join(parts + ([helpers] if helpers else [])) + "\n"


def chapters_catalogue(chapters: Sequence[tuple[object, str]], shared) -> str:
    """The rules of a Part whose claims live in one module per chapter: per ``(module, title)`` of ``chapters`` a
    heading with the chapter's title and its module's :func:`rule_catalogue` one level below, then what the rules
    of every chapter take from the module ``shared`` (:func:`helper_catalogue`)."""
    sections = [f"### {title} (`{module.__name__.rsplit('.', 1)[-1]}`)\n\n{rule_catalogue(module, level=4)}"
                for module, title in chapters]
    every_rule = [fn for module, _ in chapters for fn in rules_of(module)]
    return "\n".join(sections) + "\n" + helper_catalogue([shared], every_rule) + "\n"
