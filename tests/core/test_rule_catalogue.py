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


@pytest.mark.parametrize("part", ["forgetting", "shape", "layerwise"])
def test_the_book_catalogue_holds_every_rule_of_each_part_in_myst(part):
    import importlib

    module = importlib.import_module(f"fibook.{part}.claims")
    page = rule_catalogue.rule_catalogue(module)
    names = [f.__name__ for f in rule_catalogue.rules_of(module)]
    assert names and all(f"### `{n}`" in page for n in names)
    assert not re.search(r":(func|meth|class|data|attr):`|``", page)
