"""The verdict rules written out for the reader: every rule of a Part's ``claims`` module with its docstring,
its thresholds and when it was fixed, and the conditions several rules share. The appendix page "How the
verdicts are decided" (``chapters/appendix/verdict_rules.ipynb``) is this module's output for the three Parts.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

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
        values = thresholds_of(fn)
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
