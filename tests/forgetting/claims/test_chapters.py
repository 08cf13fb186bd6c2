"""The Part I claims modules in the book's order (:mod:`fibook.forgetting.claims.chapters`), when each of their
rules was fixed, and every chapter's verdicts on grids of every shape the presets run (2 or 6 sigma_w, 1 or 3
seeds, 2 or 300 epochs): each row gives a :class:`fibook.claims.Verdict` (no exception, no nan), names the rule that
decided it with that rule's thresholds, and the runs it read."""

import dataclasses
import importlib
import pkgutil
import re

import pytest
from synthetic import grid_records

import fibook.forgetting.claims as package
from fibook.claims import Finding, Verdict, thresholds_of
from fibook.forgetting.arms import arms
from fibook.forgetting.claims import chapters, clocks, conditions, depth, optimizers, sgd_remembers, time_lr_l2_batch
from fibook.forgetting.collapse import clock_point
from fibook.forgetting.loading import Finished
from fibook.forgetting.noise import NoiseFloor
from fibook.paths import PROJECT_ROOT
from fibook.reproduce import NAN
from fibook.rule_catalogue import rules_of

SHAPES = {"2 σ_w, 1 seed, 2 epochs": ((0.1, 2.5), (0,), 2),
          "6 σ_w, 3 seeds, 300 epochs": ((0.1, 0.224, 0.5, 1.0, 2.5, 5.0), (0, 1, 2), 300)}
NOISE = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.5, n_test=3000, seeds=3)
# the rules that compare spreads, which need every selected predictor to interpolate (conditions.condition)
SPREAD_RULES = ("erases", "keeps_spread", "l2_erases", "falls_with_l2", "l2_lowers", "rises_with_batch",
                "large_spread", "above_seed_noise", "falls_with_clock", "collapses", "clock_or_rate")


def diverge_largest(records):
    """The runs at the largest sigma_w diverged at epoch 1 (their history stops there)."""
    top = max(r.config.sigma_w for r in records)
    return [dataclasses.replace(r, status="diverged", diverged_epoch=1, history={k: v[:2] for k, v in
                                                                                 r.history.items()})
            if r.config.sigma_w == top else r for r in records]


def make(shape, spread, show=("optimizer", "lr", "weight_decay"), longer=1, diverged=False, **kw):
    """An arm of ``shape`` (its epochs times ``longer``), its largest sigma_w diverged with ``diverged``."""
    sigmas, seeds, epochs = SHAPES[shape]
    records = grid_records(spread, sigmas, seeds, epochs * longer, **kw)
    (a,) = arms(diverge_largest(records) if diverged else records, show=show)
    return a


def finished(*arm_list):
    runs = sum(len(a.records) for a in arm_list)
    return Finished("x", "smoke", list(arm_list), runs, runs, len(arm_list))


def rows_of_every_chapter(shape, noise, tau, diverged=False):
    def a(spread, **kw):
        return make(shape, spread, tau=tau, diverged=diverged, **kw)

    sgd, late = a(10.0), a(9.0)
    opt = [sgd, a(3.0, optimizer="adam", lr=1e-3), a(2.0, optimizer="adamw", lr=1e-3, wd=0.01),
           a(4.0, optimizer="muon", lr=0.02), a(9.0, optimizer="msgd"), a(1.0, lr=0.1, wd=0.05)]
    long_clock = [a(1.0, optimizer="adam", lr=1e-2, longer=2)]
    out = {"optimizers": optimizers.optimizer_claims(opt, "smoke", noise, long_clock=long_clock, quick_sgd=sgd,
                                                     quick=opt)}
    l2 = finished(a(10.0, lr=0.01), a(2.0, lr=0.1), a(1.5, lr=0.1, wd=0.06), a(5.0, lr=0.01, wd=0.06))
    l2_clock = finished(a(10.0), a(8.0, wd=0.01), a(5.0, wd=0.06))
    batch = finished(*(a(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    longer = finished(sgd, a(9.0, longer=2))
    out["time_lr_l2_batch"] = time_lr_l2_batch.time_l2_batch_claims(longer, l2, l2_clock, batch, [0.01, 0.1],
                                                                    [0.0, 0.06], "smoke", noise)
    out["sgd_remembers"] = sgd_remembers.sgd_remembers_claims(sgd, finished(sgd), late, finished(late), "smoke", noise)
    deep = [a(2.0, show=("arch",), arch=arch) for arch in ("resnet9", "resnet20")]
    out["depth"] = depth.depth_claims(finished(*deep), "smoke")
    clocked = opt + long_clock + [a(6.0, optimizer="adam", lr=2e-3)]
    points = [clock_point("x", p, noise) for p in clocked]
    raw_points = [clock_point("x", p, noise, momentum="raw") for p in clocked]
    rungs = [a(s, optimizer="adam", lr=lr, longer=k) for s, lr, k in ((4.0, 1e-2, 1), (4.5, 5e-3, 2), (6.0, 2.5e-3, 4))]
    pair = [a(8.0, batch_size=64), a(7.5, batch_size=128, longer=4)]
    out["clocks"] = clocks.clock_claims(points, noise, "smoke", raw_points=raw_points) + clocks.ladder_claims(
        finished(*rungs), finished(*pair), noise, "smoke")
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("noise", [NOISE, None], ids=["noise floor", "no noise floor"])
@pytest.mark.parametrize("tau", [1, None], ids=["interpolating", "not interpolating"])
@pytest.mark.parametrize("diverged", [False, True], ids=["", "largest sigma_w diverged"])
def test_every_row_gives_a_verdict_with_its_rule_and_runs_on_every_grid(shape, noise, tau, diverged):
    for chapter, rows in rows_of_every_chapter(shape, noise, tau, diverged).items():
        assert rows, chapter
        for r in rows:
            assert isinstance(r.finding, Finding) and isinstance(r.verdict, Verdict)
            assert not NAN.search(r.ours) and not NAN.search(r.agrees), (chapter, r)
            module, name = r.rule.rsplit(".", 1)
            assert module.startswith("fibook.forgetting.claims."), (chapter, r.claim)
            decided_by = getattr(importlib.import_module(module), name)  # a marked rule, its thresholds recorded
            assert r.thresholds == thresholds_of(decided_by), (chapter, r.claim)
            assert r.runs, (chapter, r.claim)
            assert r.record(chapter, "smoke")["verdict"] == r.verdict.value
            if (tau is None or diverged and shape.startswith("2")) and r.rule.rsplit(".", 1)[1] in SPREAD_RULES:
                # nothing fits, or a single sigma_w is left: no spread is judged
                assert r.verdict is Verdict.NOT_TESTED, (chapter, r.claim, r.agrees)
        keys = [r.key for r in rows]
        assert len(keys) == len(set(keys)), chapter


def test_one_seed_without_a_noise_floor_cannot_judge_a_difference():
    rows = {r.claim: r for r in rows_of_every_chapter("2 σ_w, 1 seed, 2 epochs", None, 1)["optimizers"]}
    adam = rows["Adam largely erases the σ_w dependence"]
    assert adam.agrees.startswith("not tested: no error bar")
    assert "no error bar: no pooled std of a one-seed spread" in adam.ours
    assert adam.thresholds == {"ERASES_FRACTION": 0.5, "CONFIDENCE": 0.95}


def test_three_seeds_judge_differences_paired_without_a_noise_floor():
    rows = {r.claim: r for r in rows_of_every_chapter("6 σ_w, 3 seeds, 300 epochs", None, 1)["optimizers"]}
    # Adam 3 pp against half of SGD's 10 pp, the seeds 0.3 pp apart at the largest sigma_w in both arms
    adam = rows["Adam largely erases the σ_w dependence"]
    assert adam.verdict is Verdict.QUALITATIVELY and "(3 seeds; seed bootstrap" in adam.ours


def test_rows_that_wait_for_a_sweep_under_way_still_name_their_rule():
    shape = "6 σ_w, 3 seeds, 300 epochs"
    rungs = [make(shape, 4.0, optimizer="adam", lr=1e-2, tau=1)]
    waiting = chapters.clocks.ladder_claims(Finished("clock_ladder", "smoke", rungs, 18, 72, 4),
                                   Finished("tsgd_pair", "smoke", [], 0, 36, 2), NOISE, "smoke")
    assert [r.verdict for r in waiting] == [Verdict.NOT_TESTED] * 3
    assert [r.rule.rsplit(".", 1)[1] for r in waiting] == ["clock_or_rate", "clock_or_rate_where_fitting",
                                                           "collapses"]
    assert waiting[0].thresholds == waiting[1].thresholds == {"EQUIVALENCE_PP": 2.0, "CLOCK_RHO": -0.5,
                                                              "CONFIDENCE": 0.95}


def test_the_equal_clock_rows_are_keyed_by_mechanism_and_how_the_pair_differs_not_by_rate():
    rows = rows_of_every_chapter("2 σ_w, 1 seed, 2 epochs", NOISE, 1)["clocks"]
    pairs = [r for r in rows if r.claim.startswith("equal") and " vs " in r.claim]  # not tsgd_pair's own row
    assert pairs and all(re.fullmatch(r"equal T_\w+, equal spread: [\w +]+, (\w+ ×[\d.]+(, )?)+", r.key)
                         for r in pairs)
    assert all(r.rule == "fibook.forgetting.claims.clocks.collapses" for r in pairs)


def test_every_rule_of_part_one_says_when_it_was_fixed():
    marked = {fn.__name__: fn for module, _ in chapters.CHAPTERS for fn in rules_of(module)}
    assert {"erases", "collapses", "clock_or_rate", "large_spread", "every_sigma_interpolates"} <= set(marked)
    rows = chapters.fixed_rows()
    named = {r["rule"]: r["fixed"] for r in rows}
    assert set(marked) <= set(named)
    assert all(r["fixed"] for r in rows) and all(r["fixed"] in conditions.FIXED.values() for r in rows)
    assert {name for name in marked if named[name] == conditions.FIXED["ladder"]} == {"clock_or_rate"}  # before data
    assert {name for name, fn in marked.items() if "CONFIDENCE" in fn.thresholds} >= {
        "erases", "keeps_spread", "l2_erases", "falls_with_l2", "l2_lowers", "rises_with_batch", "large_spread",
        "above_seed_noise", "falls_with_clock", "collapses", "clock_or_rate", "common_norm", "radial_kept"}


def test_the_chapters_are_every_claims_module_of_part_one_in_the_books_order():
    toc = (PROJECT_ROOT / "_toc.yml").read_text()
    names = [module.__name__.rsplit(".", 1)[1] for module, _ in chapters.CHAPTERS]
    shared = {"conditions", "chapters"}
    assert set(names) == {m.name for m in pkgutil.iter_modules(package.__path__)} - shared
    positions = [toc.index(f"chapters/part1_forgetting/{name}") for name in names]
    assert positions == sorted(positions)


def test_a_rule_of_one_chapter_reads_a_shared_threshold_from_the_shared_module():
    # the margin is defined once, and each rule that names it records the same value
    assert thresholds_of(clocks.collapses)["EQUIVALENCE_PP"] == conditions.EQUIVALENCE_PP
    assert thresholds_of(time_lr_l2_batch.l2_erases)["EQUIVALENCE_PP"] == conditions.EQUIVALENCE_PP
