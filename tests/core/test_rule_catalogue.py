"""The verdict rules written out for the appendix: rules in source order, the helpers they refer to, their
docstrings as MyST, and each Part's catalogue."""

import re
import sys

import pytest

from fibook import rule_catalogue

TOY_CLAIMS = '''
from fibook.claims import rule

MARGIN = 2.0


def shared(x):
    """Whether ``x`` is finite; see :func:`deeper`."""


def deeper(x):
    """What :func:`shared` leans on."""


def unreferenced(x):
    """Named by no rule."""


@rule("MARGIN", fixed="2026-12-05, before its data")
def second(x):
    """``yes`` when :func:`~toy.shared` holds and sigma_w moves by more than +-``MARGIN``,
    else ``no``.

    A second paragraph, on lambda and rho."""


@rule()
def first(x):
    """Read before :meth:`Arm.spread` exists."""
'''


@pytest.fixture
def toy(monkeypatch):
    import types

    module = types.ModuleType("toy_claims")
    monkeypatch.setitem(sys.modules, "toy_claims", module)
    exec(compile(TOY_CLAIMS, "toy_claims.py", "exec"), module.__dict__)
    return module


def test_rules_of_lists_the_marked_functions_of_a_module_in_source_order(toy):
    assert [f.__name__ for f in rule_catalogue.rules_of(toy)] == ["second", "first"]


def test_helpers_of_follows_references_from_the_rules_and_not_beyond(toy):
    assert [f.__name__ for f in rule_catalogue.helpers_of(toy)] == ["shared", "deeper"]


def test_docstring_markdown_turns_roles_literals_and_names_into_myst(toy):
    assert rule_catalogue.docstring_markdown(toy.second) == (
        "`yes` when `shared` holds and $\\sigma_w$ moves by more than ±`MARGIN`, else `no`.\n\n"
        "A second paragraph, on $\\lambda$ and $\\rho$.")
    assert rule_catalogue.docstring_markdown(toy.first) == "Read before `spread` exists."


def test_rule_catalogue_gives_each_rule_its_thresholds_and_date_then_what_rules_share(toy):
    page = rule_catalogue.rule_catalogue(toy)
    assert page.index("### `second`") < page.index("### `first`") < page.index("### What several rules share")
    assert "Thresholds: `MARGIN = 2.0`.\n\nFixed: 2026-12-05, before its data." in page
    assert "`deeper`: What `shared` leans on." in page and "unreferenced" not in page


@pytest.mark.parametrize("modules", [["fibook.forgetting.claims." + m for m in ("question", "sgd_remembers",
                                      "optimizers", "time_lr_l2_batch", "depth", "clocks")],
                                     ["fibook.shape.claims"], ["fibook.layerwise.claims"]], ids=["I", "II", "III"])
def test_the_book_catalogue_holds_every_rule_of_each_part_in_myst(modules):
    import importlib

    from fibook.forgetting.claims import chapters, conditions

    loaded = [importlib.import_module(m) for m in modules]
    page = (rule_catalogue.chapters_catalogue(chapters.CHAPTERS, conditions) if len(loaded) > 1
            else rule_catalogue.rule_catalogue(loaded[0]))
    names = [f.__name__ for m in loaded for f in rule_catalogue.rules_of(m)]
    assert names and all(f"### `{n}`" in page for n in names)
    assert not re.search(r":(func|meth|class|data|attr):`|``", page)


SHARED = '''
def shared(x):
    """Whether ``x`` is finite."""


def unused(x):
    """Named by no rule."""
'''

CHAPTER = '''
from fibook.claims import rule


@rule(fixed="2026-12-06")
def decides(x):
    """``yes`` when :func:`shared` holds."""
'''


def test_a_part_of_one_module_per_chapter_lists_each_chapter_then_what_its_rules_share(monkeypatch):
    import types

    loaded = []
    for name, text in (("toy_shared", SHARED), ("toy_chapter", CHAPTER)):
        module = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, module)
        exec(compile(text, f"{name}.py", "exec"), module.__dict__)
        loaded.append(module)
    shared, chapter = loaded
    assert rule_catalogue.helpers_of(shared) == []  # no rule of its own refers to it
    assert [f.__name__ for f in rule_catalogue.helpers_of(shared, [chapter.decides])] == ["shared"]
    page = rule_catalogue.chapters_catalogue([(chapter, "A chapter")], shared)
    assert page.index("### A chapter (`toy_chapter`)") < page.index("#### `decides`") < page.index(
        "### What several rules share") < page.index("`shared`: Whether `x` is finite.")
    assert "unused" not in page and "Fixed: 2026-12-06." in page
