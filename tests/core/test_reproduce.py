"""The whole-book rerun: chapters executed at a preset into their own tree, resumed, failures and NaNs reported."""

import json

import pytest

from fibook import reproduce
from fibook.reproduce import NAN, chapters, execute_chapters, nan_outputs

pytestmark = pytest.mark.slow


def notebook(*sources: str, title: str = "A chapter") -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [f"# {title}\n"]}]
    cells += [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [s]}
              for s in sources]
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture
def book(tmp_path):
    root = tmp_path / "src"
    (root / "chapters" / "part").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/intro\nparts:\n  - caption: 'Part A: a'\n"
                                   "    chapters:\n      - file: chapters/part/ok\n      - file: chapters/part/bad\n"
                                   "      - file: chapters/part/nan\n      - file: chapters/part/notes\n"
                                   "      - file: chapters/part/claims\n")
    (root / "chapters" / "part" / "notes.md").write_text("# Notes\n")  # not a notebook: not executed
    pages = {"intro": notebook("print('intro')", title="Intro"),
             "part/ok": notebook("import os\nprint('preset', os.environ['FIBOOK_PRESET'])"),
             "part/bad": notebook("raise ValueError('this chapter cannot run at this preset')"),
             "part/nan": notebook("print(f'2.7 ± {float(\"nan\")} pp')"),
             "part/claims": notebook("from fibook.notebook import claims_table\n"
                                     "from fibook.claims import Claim, Finding, Verdict\n"
                                     "claims_table([Claim('c', 'p', 'o', Finding(Verdict.YES), rule='r')], "
                                     "chapter='claims', preset='smoke')")}
    for name, nb in pages.items():
        (root / "chapters" / f"{name}.ipynb").write_text(json.dumps(nb))
    return root


def outputs(path):
    return "".join("".join(o.get("text", "")) for c in json.loads(path.read_text())["cells"]
                   for o in c.get("outputs", []))


def test_chapters_follow_the_table_of_contents_and_skip_pages_that_are_not_notebooks(book):
    assert chapters(book) == ["chapters/intro.ipynb", "chapters/part/ok.ipynb", "chapters/part/bad.ipynb",
                              "chapters/part/nan.ipynb", "chapters/part/claims.ipynb"]


def test_every_chapter_is_tried_and_a_second_call_executes_only_what_changed(book, tmp_path):
    tree, logs = tmp_path / "tree", []
    first = {e.chapter: e for e in execute_chapters("smoke", tree, workers=2, root=book, log=logs.append)}
    assert {c: e.outcome for c, e in first.items()} == {
        "chapters/intro.ipynb": "executed", "chapters/part/ok.ipynb": "executed",
        "chapters/part/bad.ipynb": "failed", "chapters/part/nan.ipynb": "failed",
        "chapters/part/claims.ipynb": "executed"}
    assert list(reproduce.tree_verdicts(tree, "smoke")) == ["claims"]  # the tree's own verdict file
    failed_page = json.loads((tree / "chapters/part/bad.ipynb").read_text())["cells"]
    assert "failed at the 'smoke' preset" in "".join(failed_page[1]["source"])
    assert outputs(tree / "chapters/part/bad.ipynb") == ""
    assert "this chapter cannot run at this preset" in first["chapters/part/bad.ipynb"].detail
    assert "NaN in its output" in first["chapters/part/nan.ipynb"].detail
    assert "preset smoke" in outputs(tree / "chapters/part/ok.ipynb")
    assert outputs(book / "chapters/part/ok.ipynb") == ""  # the sources keep their (here: no) outputs
    assert not (tree / "chapters/part/bad.partial.ipynb").exists()
    assert [line for line in logs if "failed" in line][0].startswith("  [")

    (tree / "verdicts" / "smoke.json").unlink()  # its rows lost: the chapter that writes them runs again
    second = {e.chapter: e.outcome for e in execute_chapters("smoke", tree, root=book, log=logs.append)}
    assert second == {"chapters/intro.ipynb": "executed", "chapters/part/ok.ipynb": "unchanged",
                      "chapters/part/bad.ipynb": "failed", "chapters/part/nan.ipynb": "failed",
                      "chapters/part/claims.ipynb": "executed"}

    (book / "chapters/part/bad.ipynb").write_text(json.dumps(notebook("print('fixed')")))
    (book / "chapters/part/nan.ipynb").write_text(json.dumps(notebook("print('no longer')")))
    third = {e.chapter: e.outcome for e in execute_chapters("smoke", tree, root=book, log=logs.append)}
    assert third == {"chapters/intro.ipynb": "executed", "chapters/part/ok.ipynb": "unchanged",
                     "chapters/part/bad.ipynb": "executed", "chapters/part/nan.ipynb": "executed",
                     "chapters/part/claims.ipynb": "unchanged"}
    fourth = {e.outcome for e in execute_chapters("smoke", tree, root=book, log=logs.append)}
    assert fourth == {"unchanged"}
    assert {e.outcome for e in execute_chapters("book", tmp_path / "other", root=book, log=logs.append)} \
        == {"executed"}


def test_a_cell_that_runs_past_the_presets_time_limit_fails_its_chapter(book, tmp_path, monkeypatch):
    """A hung kernel (one that lost its reply waits for ever) must end the chapter, not the whole rerun."""
    from dataclasses import replace

    from fibook import presets
    monkeypatch.setitem(presets.PRESETS, "smoke", replace(presets.PRESETS["smoke"], cell_timeout=2))
    (book / "chapters/part/ok.ipynb").write_text(json.dumps(notebook("import time\ntime.sleep(120)")))
    (tmp_path / "tree" / "chapters" / "part").mkdir(parents=True)
    result = reproduce.execute("chapters/part/ok.ipynb", tmp_path / "tree", "smoke", root=book)
    assert result.outcome == "failed" and "timed out" in result.detail, result
    assert presets.PRESETS["book"].cell_timeout > presets.PRESETS["smoke"].cell_timeout


def test_a_chapter_key_changes_with_its_sources_and_scale_not_its_outputs(book):
    path = book / "chapters/part/ok.ipynb"
    key = reproduce.chapter_key(path, "smoke")
    assert reproduce.chapter_key(path, "book") != key
    nb = json.loads(path.read_text())
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["preset smoke\n"]}]
    path.write_text(json.dumps(nb))
    assert reproduce.chapter_key(path, "smoke") == key
    nb["cells"][1]["source"] = ["print(1)"]
    path.write_text(json.dumps(nb))
    assert reproduce.chapter_key(path, "smoke") != key


@pytest.mark.parametrize("line, found", [
    ("2.7 ± nan pp", True), ("NaN", True), ("value -nan", True), ("x = nan,", True),
    ("finance", False), ("nano", False), ("Nancy", False), ("banana", False), ("fibook.nan_outputs", False),
])
def test_nan_is_found_as_a_word_only(line, found):
    assert bool(NAN.search(line)) is found


def test_nan_outputs_reads_markdown_tables_too(tmp_path):
    nb = notebook("x")
    nb["cells"][1]["outputs"] = [{"output_type": "display_data", "data": {"text/markdown": "| a |\n|---|\n| nan |"}}]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb))
    assert nan_outputs(path) == ["cell 1: | nan |"]


def test_a_chapter_tests_claims_when_its_code_calls_claims_table(tmp_path):
    nb = notebook("x")
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb))
    assert not reproduce.tests_claims(path)
    nb["cells"][1]["source"] = ["claims_table(rows, chapter='x', preset=preset.name)"]
    path.write_text(json.dumps(nb))
    assert reproduce.tests_claims(path)
    assert reproduce.tests_claims(reproduce.PROJECT_ROOT / "chapters/part1_forgetting/clocks.ipynb")
    assert not reproduce.tests_claims(reproduce.PROJECT_ROOT / "chapters/appendix/verdict_rules.ipynb")


def test_the_intro_lists_the_book_verdicts_by_part(tmp_path, monkeypatch):
    from fibook.claims import Claim, Finding, Verdict, write_chapter

    monkeypatch.setenv("FIBOOK_VERDICTS", str(tmp_path))
    ((line, rows),) = reproduce.verdict_overview("smoke")
    assert rows == [] and "make reproduce PRESET=smoke" in line
    write_chapter("sgd_remembers", "smoke", [
        Claim("spread", "26.5 pp", "8.6 pp", Finding(Verdict.QUALITATIVELY), rule="r"),
        Claim("fits", "yes", "4 of 5", Finding(Verdict.NOT_TESTED, ": one does not"), rule="r")])
    write_chapter("two_steps", "smoke", [Claim("step 1", "unequal", "unequal", Finding(Verdict.YES), rule="r")])
    overview = reproduce.verdict_overview("smoke")
    assert len(overview) == 3  # the three Parts; the appendix tests no claim
    (one, rows1), (two, rows2), (three, rows3) = overview
    assert one == "Part I: Forgetting initialization: 2 claims (1 qualitatively, 1 not tested)"
    assert two == "Part II: Initialization shape: no verdicts recorded" and rows2 == []
    assert [r["verdict"] for r in rows1 + rows3] == ["qualitatively", "not tested", "yes"]
    assert rows1[0] == {"chapter": "{doc}`SGD remembers </chapters/part1_forgetting/sgd_remembers>`",
                        "claim": "spread", "paper's number": "26.5 pp", "verdict": "qualitatively"}


@pytest.mark.parametrize("text, shown", [
    ("Optimizers: which methods forget $\\sigma_w$, and on what clock",
     "Optimizers: which methods forget σ_w, and on what clock"),
    ("$\\alpha$ and $\\eta_{1}$, $x^2$", "α and η_1, x^2"), ("no math", "no math"), ("$\\nabla$", "nabla"),
])
def test_plain_writes_inline_math_as_text(text, shown):
    assert reproduce.plain(text) == shown
