"""Verdicts as records: the Verdict and Finding of a rule, rules with thresholds, the per-preset verdict file, the
diff of two presets, the table a chapter shows."""

import json
import multiprocessing
import re
import sys

import pytest

from fibook import claims
from fibook.claims import (
    Claim,
    Finding,
    Verdict,
    changed,
    counts,
    family_wise_line,
    finding_of,
    markdown_table,
    not_thresholded,
    read_verdicts,
    rule,
    table_rows,
    write_chapter,
    yes_or_no,
)

LIMIT = 2.0


@rule("LIMIT")
def above_limit(x: float) -> Finding:
    return yes_or_no(x > LIMIT)


def finding(text: str) -> Finding:
    """The finding a verdict text shows: the longest verdict phrase it begins with as a whole word."""
    for v in sorted(Verdict, key=lambda v: -len(v.phrase)):
        try:
            return finding_of(text, v.value)
        except ValueError:
            continue
    raise ValueError(f"no verdict phrase begins {text!r}")


@pytest.mark.parametrize("text, verdict", [
    ("yes", Verdict.YES), ("yes (a shift of 2.0 decades)", Verdict.YES), ("yes; not with unequal δ", Verdict.YES),
    ("no", Verdict.NO), ("no: within noise", Verdict.NO), ("no (∝ h^0.67, as derived) (upper edge)", Verdict.NO),
    ("not tested: SGD's selected predictor does not interpolate", Verdict.NOT_TESTED),
    ("not tested yet", Verdict.NOT_TESTED), ("not resolved (draws disagree)", Verdict.NOT_RESOLVED),
    ("qualitatively", Verdict.QUALITATIVELY), ("weakly (ρ = -0.40)", Verdict.WEAKLY),
    ("partly: only Adam", Verdict.PARTLY), ("consistent by construction", Verdict.CONSISTENT),
    ("n/a (not in the paper)", Verdict.NOT_APPLICABLE), ("our own result: no", Verdict.OWN),
    ("our own observation", Verdict.OWN),
])
def test_a_finding_prints_its_phrase_then_its_reason_and_reads_back_from_its_record(text, verdict):
    f = finding_of(text, verdict.value)
    assert f.verdict is verdict and f.text == text == str(f)
    assert f.reason == text[len(verdict.phrase):]


def test_a_verdict_text_must_begin_with_its_verdicts_phrase_as_a_whole_word():
    with pytest.raises(ValueError, match="does not begin with the verdict 'no'"):
        finding_of("not tested yet", "no")
    with pytest.raises(ValueError, match="does not begin"):
        finding_of("yesterday", "yes")
    with pytest.raises(ValueError):
        finding_of("maybe", "perhaps")  # not a Verdict


@pytest.mark.parametrize("reason", ["yesterday", "x", ": trailing "])
def test_a_reason_that_would_run_into_the_verdict_or_end_in_a_space_is_refused(reason):
    with pytest.raises(ValueError, match="joining punctuation"):
        Finding(Verdict.YES, reason)


def test_a_claim_takes_a_finding_not_a_string():
    with pytest.raises(TypeError, match="a Finding"):
        Claim("c", "p", "o", "yes", rule="r")
    with pytest.raises(TypeError, match="a Verdict"):
        Finding("yes")


def test_a_note_follows_the_reason_and_the_verdict_is_kept():
    f = Finding(Verdict.QUALITATIVELY).with_note("; unstable: SGD")
    assert f.verdict is Verdict.QUALITATIVELY and f.text == "qualitatively; unstable: SGD"


def test_only_consistent_and_own_may_go_without_a_threshold():
    assert not_thresholded(Finding(Verdict.OWN, " observation")).text == "our own observation"
    assert not_thresholded(Finding(Verdict.CONSISTENT)).verdict is Verdict.CONSISTENT
    for v in set(Verdict) - {Verdict.OWN, Verdict.CONSISTENT}:
        with pytest.raises(ValueError, match="decide it with a tested rule"):
            not_thresholded(Finding(v))


def test_markdown_table_escapes_pipes_and_newlines():
    text = markdown_table([{"a": "x|y", "b": "two\nlines"}, {"a": 1, "b": 2.5}])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| 1 | 2.5 |"]
    header = markdown_table([{"max |·|": 1}]).splitlines()[0]
    assert header == "| max \\|·\\| |"  # a pipe in a header would split it into cells (and unmake the table)


def test_claim_rows_have_the_four_columns():
    rows = table_rows([Claim("c", "26.5 pp", "8.6 pp (book)", Finding(Verdict.QUALITATIVELY))])
    assert list(rows[0]) == ["claim", "paper's number", "ours (preset, dataset, model)", "agrees?"]


def test_a_rule_given_as_a_function_records_its_name_and_threshold_values():
    c = Claim("c", "p", "o", above_limit(2.5), rule=above_limit)
    assert c.rule == f"{__name__}.above_limit" and c.thresholds == {"LIMIT": 2.0}
    assert c.verdict is Verdict.YES and Claim("c", "p", "o", above_limit(1.5), rule=above_limit).verdict is Verdict.NO


def test_a_rule_keeps_when_it_was_fixed():
    assert above_limit.fixed == ""
    dated = rule("LIMIT", fixed="2026-12-05, before any run")(lambda x: yes_or_no(True))
    assert dated.fixed == "2026-12-05, before any run" and dated.thresholds == ("LIMIT",)


def test_a_rule_that_names_a_missing_threshold_is_refused():
    with pytest.raises(ValueError, match="NOPE"):
        rule("NOPE")(above_limit)


def test_a_row_without_a_rule_cannot_be_recorded():
    with pytest.raises(ValueError, match="names no rule"):
        Claim("c", "p", "o", Finding(Verdict.YES)).record("ch", "smoke")


def test_runs_are_sorted_and_unique_and_the_key_defaults_to_the_claim():
    c = Claim("c", "p", "o", Finding(Verdict.YES), rule="r", runs=("b", "a", "b"))
    assert c.runs == ("a", "b") and c.key == "c"


def rows_of(*pairs):
    return [Claim(f"claim {k}", "p", "o", finding(v), rule="r") for k, v in pairs]


def test_write_replaces_one_chapters_rows_and_keeps_the_others(tmp_path):
    path = tmp_path / "smoke.json"
    write_chapter("b", "smoke", rows_of((1, "yes")), path)
    write_chapter("a", "smoke", rows_of((1, "no")), path)
    write_chapter("b", "smoke", rows_of((1, "qualitatively"), (2, "yes")), path)
    data = read_verdicts(path)
    assert list(data["chapters"]) == ["a", "b"]
    assert [r["verdict"] for r in data["chapters"]["b"]] == ["qualitatively", "yes"]
    assert data["chapters"]["a"][0] | {"thresholds": None} == {
        "chapter": "a", "preset": "smoke", "verdict": "no", "claim": "claim 1", "paper": "p", "ours": "o",
        "agrees": "no", "rule": "r", "thresholds": None, "runs": [], "key": "claim 1"}


def test_an_unchanged_chapter_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "book.json"
    write_chapter("a", "book", rows_of((1, "yes")), path)
    before = path.stat().st_mtime_ns
    path.touch()
    touched = path.stat().st_mtime_ns
    write_chapter("a", "book", rows_of((1, "yes")), path)
    assert path.stat().st_mtime_ns == touched and touched >= before


def test_a_file_of_another_preset_is_refused(tmp_path):
    path = tmp_path / "book.json"
    write_chapter("a", "book", rows_of((1, "yes")), path)
    with pytest.raises(ValueError, match="holds preset 'book'"):
        write_chapter("a", "smoke", rows_of((1, "yes")), path)


def test_a_broken_verdict_file_says_so_and_a_missing_one_names_the_command(tmp_path):
    bad = tmp_path / "book.json"
    bad.write_text(json.dumps({"preset": "book", "chapters": {"a": [{"agrees": "maybe", "chapter": "a"}]}}))
    with pytest.raises(ValueError, match="is not a verdict file"):
        read_verdicts(bad)
    bad.write_text(json.dumps({"preset": "book", "chapters": {"a": [{"agrees": "yes", "verdict": "no",
                                                                       "chapter": "a"}]}}))
    with pytest.raises(ValueError, match="'yes' does not begin with the verdict 'no'"):
        read_verdicts(bad)
    with pytest.raises(FileNotFoundError, match="gpu.json$"):
        read_verdicts(tmp_path / "gpu.json")


def test_a_missing_preset_names_the_command_that_writes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_VERDICTS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make reproduce PRESET=gpu"):
        read_verdicts("gpu")


def test_a_file_written_under_the_former_name_scale_reads_as_preset(tmp_path):
    old = tmp_path / "gpu.json"
    old.write_text(json.dumps({"scale": "gpu", "chapters": {"a": [
        {"chapter": "a", "scale": "gpu", "verdict": "yes", "claim": "c", "paper": "p", "ours": "o", "agrees": "yes",
         "rule": "r", "thresholds": {}, "runs": [], "key": "c"}]}}))
    data = read_verdicts(old)
    assert data["preset"] == "gpu" and data["chapters"]["a"][0]["preset"] == "gpu"
    assert "scale" not in data and "scale" not in data["chapters"]["a"][0]
    write_chapter("b", "gpu", rows_of((1, "no")), old)  # rewritten under the new name
    assert json.loads(old.read_text())["preset"] == "gpu"


def _write(path, chapter):
    write_chapter(chapter, "smoke", rows_of((1, "yes")), path)


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_chapters_written_side_by_side_all_survive(tmp_path):
    path = tmp_path / "smoke.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write, args=(path, f"ch{i}")) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert sorted(read_verdicts(path)["chapters"]) == [f"ch{i}" for i in range(8)]


def test_changed_lists_only_rows_whose_verdict_class_differs_and_rows_on_one_side(tmp_path):
    book, smoke = tmp_path / "book.json", tmp_path / "smoke.json"
    write_chapter("a", "book", rows_of((1, "yes"), (2, "qualitatively"), (3, "no")), book)
    write_chapter("b", "book", rows_of((1, "yes")), book)  # not run at smoke: left out
    write_chapter("a", "smoke", [Claim("claim 1", "p", "other number", Finding(Verdict.YES, " (same order)"), rule="r"),
                                 *rows_of((2, "not tested: too short"), (4, "yes"))], smoke)
    diff = changed(read_verdicts(smoke), read_verdicts(book))
    assert [(d["chapter"], d["claim"], d["reference"], d["ours"]) for d in diff] == [
        ("a", "claim 2", "qualitatively", "not tested: too short"), ("a", "claim 4", "(no such row)", "yes"),
        ("a", "claim 3", "no", "(no such row)"), ("b", "(every claim)", "(recorded)", "(chapter not run)")]
    assert changed(read_verdicts(book), read_verdicts(book)) == []


def test_changed_compares_the_text_of_own_consistent_and_na_rows(tmp_path):
    book, gpu = tmp_path / "book.json", tmp_path / "gpu.json"
    write_chapter("a", "book", rows_of((1, "our own result: yes"), (2, "consistent (inferred)"), (3, "yes")), book)
    write_chapter("a", "gpu", rows_of((1, "our own result: no"), (2, "consistent (inferred)"), (3, "yes (more)")),
                  gpu)
    assert [d["claim"] for d in changed(read_verdicts(gpu), read_verdicts(book))] == ["claim 1"]


def test_counts_follow_the_order_of_the_classes():
    recs = [{"verdict": v} for v in ("no", "yes", "no", "not tested")]
    assert list(counts(recs).items()) == [("yes", 1), ("no", 2), ("not tested", 1)]


def record(verdict, thresholds):
    return {"verdict": finding(verdict).verdict.value, "agrees": verdict, "thresholds": thresholds}


TESTED_AT = {"CONFIDENCE": 0.95, "EQUIVALENCE_PP": 2.0}


def test_tested_rows_are_those_a_significance_test_decided():
    recs = [record("yes", TESTED_AT), record("no", TESTED_AT), record("not resolved: within noise", TESTED_AT),
            record("not tested yet", TESTED_AT), record("not tested: no error bar", TESTED_AT),
            record("n/a (not in the paper)", TESTED_AT),
            record("yes", {"LIMIT": 2.0}), record("consistent (inferred)", {})]  # no test: a threshold alone
    assert claims.tested(recs) == recs[:3]  # "not resolved" ran a test; "not tested" and "n/a" did not
    assert claims.tested([]) == [] and claims.tested(recs[3:]) == []


@pytest.mark.parametrize(("k", "bound"), [(1, 5), (3, 15), (19, 95), (20, 100), (25, 100)])
def test_the_family_wise_line_bounds_the_chance_of_a_false_effect_by_k_times_alpha(k, bound):
    recs = [record("yes", TESTED_AT)] * k + [record("not tested yet", TESTED_AT), record("yes", {"LIMIT": 2.0})]
    line = family_wise_line(recs)
    assert line.startswith(f"{k} decided by tests at the 5 % level each, uncorrected")
    assert line.endswith(f"is at most {bound} % (Bonferroni, one test per row)")
    assert bound == round(100 * min(1.0, k * 0.05))


def test_the_family_wise_line_reads_each_rows_own_level_and_is_empty_without_a_test():
    recs = [record("yes", {"CONFIDENCE": 0.99}), record("no", {"CONFIDENCE": 0.9})]
    assert family_wise_line(recs) == ("2 decided by tests at levels of 1 to 10 % each, uncorrected: the chance that "
                                      "at least one of them reports an effect that is not there is at most 11 % "
                                      "(Bonferroni, one test per row)")  # 1 % + 10 %
    assert family_wise_line([record("not tested yet", TESTED_AT), record("yes", {"LIMIT": 2.0})]) == ""
    assert family_wise_line([]) == ""


def stored_claims_tables(path):
    """The verdict column of every claims table stored in a notebook's outputs (unescaped)."""

    verdicts = []
    for cell in json.loads(path.read_text())["cells"]:
        for out in cell.get("outputs", []):
            md = "".join(out.get("data", {}).get("text/markdown", ""))
            if md.startswith("| claim |"):
                for line in md.splitlines()[2:]:
                    cells = re.split(r"(?<!\\)\|", line)[1:-1]
                    verdicts.append(cells[-1].strip().replace("\\|", "|"))
    return verdicts


def test_the_book_verdict_file_is_what_the_stored_chapters_show():
    from fibook.paths import PROJECT_ROOT
    from fibook.reproduce import chapters

    data = read_verdicts(PROJECT_ROOT / "data" / "verdicts" / "book.json")
    assert data["preset"] == "book"
    with_claims = [PROJECT_ROOT / c for c in chapters() if "claims_table(" in (PROJECT_ROOT / c).read_text()]
    assert len(with_claims) >= 11
    assert sorted(data["chapters"]) == sorted(p.stem for p in with_claims)
    for path in with_claims:
        rows = data["chapters"][path.stem]
        assert [r["agrees"] for r in rows] == stored_claims_tables(path), path.stem
        assert all(r["rule"] and r["preset"] == "book" for r in rows), path.stem
