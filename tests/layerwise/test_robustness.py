"""The robustness engine of Part III: split preferences and the transition verdict on curves with known answers,
the step-2 window against the roots of its closed-form polynomial, and literal-GD shapes where they hold."""

import json
from dataclasses import replace

import numpy as np
import pytest

from fibook import stats
from fibook.claims import Verdict
from fibook.layerwise import claims
from fibook.layerwise import robustness as rb
from fibook.layerwise import simulation as sim
from fibook.layerwise.scheduler import Setting

SPLITS = np.arange(1, 20) / 20


def test_equal_is_preferred_only_when_the_all_equal_point_alone_is_best():
    v = (SPLITS - 0.5) ** 2
    assert rb.preferred(SPLITS, v, 0.5) == "equal"
    assert rb.preferred(SPLITS, -v, 0.5) == "unequal"  # both ends tie: two best splits
    assert rb.preferred(SPLITS, (SPLITS - 0.55) ** 2, 0.5) == "unequal"
    nearly = 1.0 + v
    nearly[0] = 1.0 + 2e-9  # an end just above the tie tolerance (1e-9 relative) of the minimum 1 ...
    assert rb.preferred(SPLITS, nearly, 0.5) == "equal"
    nearly[0] = 1.0 + 0.5e-9  # ... and one within it: a tie, so not one best split
    assert rb.preferred(SPLITS, nearly, 0.5) == "unequal"


def test_the_transition_needs_unequal_at_step_one_and_equal_at_every_later_step():
    assert rb.transition_holds({1: "unequal", 2: "equal", 4: "equal"}) == "yes"
    assert rb.transition_holds({1: "unequal", 2: "equal", 4: "unequal"}) == "no"
    assert rb.transition_holds({1: "equal", 2: "equal"}) == "no"
    assert rb.transition_holds({1: "unequal", 2: "mixed"}) == "not resolved"
    assert rb.transition_holds({1: "mixed", 2: "equal", 8: "diverged"}) == "diverged"
    # a step that contradicts the transition in every draw decides, whatever the others show
    assert rb.transition_holds({1: "mixed", 2: "unequal"}) == "no"
    assert rb.transition_holds({1: "equal", 2: "mixed"}) == "no"
    assert rb.transition_holds({1: "unequal", 2: "equal", 4: "unequal", 8: "diverged"}) == "no"
    assert rb.transition_holds({1: "mixed", 2: "equal", 4: "mixed"}) == "not resolved"
    with pytest.raises(ValueError, match="step 1 and a later step"):
        rb.transition_holds({2: "equal"})


def test_a_claim_about_later_steps_only_reads_those_steps():
    prefs = {1: "mixed", 2: "equal"}
    assert rb.claim_holds(prefs, (2,)) == "yes" and rb.transition_holds(prefs) == "not resolved"
    assert rb.claim_holds({1: "unequal", 2: "unequal"}, (2,)) == "no"
    assert rb.claim_holds({1: "unequal", 2: "mixed"}, (2,)) == "not resolved"
    assert rb.claim_holds({1: "unequal", 2: "equal", 4: "diverged"}, (2, 4)) == "diverged"
    assert rb.claim_holds({1: "unequal", 2: "equal", 4: "unequal"}, (1, 2)) == "yes"  # step 4 is not claimed
    assert rb.claim_holds({1: "unequal", 2: "equal", 4: "unequal"}, (1, 2, 4)) == "no"
    assert rb.claim_holds({1: "unequal", 2: "mixed", 4: "unequal"}, (2, 4)) == "no"
    assert rb.claim_holds({1: "equal", 2: "equal", 4: "equal"}, (2, 4)) == "yes"  # step 1 is not claimed
    with pytest.raises(ValueError, match="must be among the checked steps"):
        rb.claim_holds({1: "unequal", 2: "equal"}, (2, 4))
    deep = [c for c in rb.robustness_cases(256) if c.setting.depth >= 4]
    assert [c.claim_steps for c in deep] == [(2,), (2,)]
    shallow = {c.name: c.claim_steps for c in rb.robustness_cases(256) if c.setting.depth < 4 and c.claimed}
    assert shallow == {}  # the depth-2 cases read every step they check


def test_a_preference_is_mixed_when_one_draw_disagrees_and_diverged_from_the_step_a_draw_blows_up():
    bowl = (SPLITS - 0.5) ** 2
    test = np.stack([np.ones_like(SPLITS), 1 + bowl, 1 - bowl], axis=1)[:, :, None].repeat(3, axis=2)
    train = np.ones_like(test)
    curve = rb.SplitCurve(Setting("linear", 2, "gaussian", 1.0), SPLITS, test, train, 2)
    assert curve.equal == 0.5 and rb.preference(curve, 1) == "equal" and rb.preference(curve, 2) == "unequal"
    test2 = test.copy()
    test2[:, 1, 2] = 1 - bowl  # one of three draws prefers the ends at step 1
    curve = rb.SplitCurve(curve.setting, SPLITS, test2, train, 2)
    assert rb.preference(curve, 1) == "mixed" and rb.draws_agreeing(curve, 1, "equal") == 2
    train2 = train.copy()
    train2[3, 2, 0] = 1e3 * (1 + 1e-9)  # just above the divergence factor at step 2 only
    curve = rb.SplitCurve(curve.setting, SPLITS, test, train2, 2)
    assert rb.preference(curve, 1) == "equal" and rb.preference(curve, 2) == "diverged"
    assert np.isnan(curve.mean(2)[3]) and np.isfinite(curve.mean(1)).all()
    train2[3, 2, 0] = 1e3  # at the factor: not diverged
    assert rb.preference(rb.SplitCurve(curve.setting, SPLITS, test, train2, 2), 2) == "unequal"


def test_the_all_equal_grid_point_of_deep_nets_is_the_nearest_to_one_over_k():
    curve = rb.SplitCurve(Setting("linear", 4, "orthogonal", 1.0), SPLITS, np.ones((19, 2, 1)),
                          np.ones((19, 2, 1)), 3)
    assert curve.equal == 0.35
    assert rb.SplitCurve(curve.setting, SPLITS, curve.test, curve.train, 7).equal == 0.15


def _depth3_window(h):
    """Roots in kappa (eta = kappa sqrt h) of h^2 dL2/dp = -8 kappa sqrt h + 2 + 34 kappa^2 + 32 kappa^4
    + (10 + 74 kappa^2 + 36 kappa^4 + 4 kappa^6) / h: equal rates are a minimum where it is negative."""
    c = np.zeros(7)
    c[0], c[1], c[2], c[4], c[6] = 2 + 10 / h, -8 * h**0.5, 34 + 74 / h, 32 + 36 / h, 4 / h
    roots = np.roots(c[::-1])
    real = np.sort(roots[np.abs(roots.imag) < 1e-9].real)
    real = real[real > 0]
    return real[0] * h**0.5, real[1] * h**0.5


@pytest.mark.parametrize("h", [256, 1000, 16384])
def test_the_depth_three_window_matches_the_roots_of_its_polynomial(h):
    lo, hi = rb.step2_window(3, h, 1e-3, 1e6, points=20000)
    want_lo, want_hi = _depth3_window(h)
    step = np.log(1e9) / 19999  # the log grid's spacing
    assert abs(np.log(lo / want_lo)) < 2 * step and abs(np.log(hi / want_hi)) < 2 * step


def test_a_window_cut_by_its_grid_or_empty_is_an_error():
    with pytest.raises(ValueError, match="reaches an end"):
        rb.step2_window(3, 1000, 1.0, 10.0)
    with pytest.raises(ValueError, match="nowhere"):
        rb.step2_window(3, 1000, 1e4, 1e5)


def test_a_window_in_two_pieces_is_an_error(monkeypatch):
    def two_pieces(depth, h, budget, step):
        return np.where((budget > 4) & (budget < 8) | (budget > 16) & (budget < 32), 1.0, -1.0)

    monkeypatch.setattr(rb, "split_curvature", two_pieces)
    with pytest.raises(ValueError, match="not one interval"):
        rb.step2_window(3, 1000, 1.0, 100.0)
    monkeypatch.setattr(rb, "split_curvature", lambda d, h, b, s: np.where((b > 4) & (b < 32), 1.0, -1.0))
    assert rb.step2_window(3, 1000, 1.0, 100.0) == pytest.approx((2.0, 16.0), rel=2e-3)


def test_window_edges_scale_as_derived_lower_h_over_2_at_depth_2_and_upper_h_to_two_thirds_at_depth_3():
    hs = 2.0 ** np.arange(8, 15)
    two = np.array([rb.step2_window(2, h, 1, 1e9) for h in hs])
    three = np.array([rb.step2_window(3, h, 1e-3, 1e6) for h in hs])
    assert claims.scales_like(stats.log_slope(hs, two[:, 0]), 1.0, 0.05).verdict is Verdict.YES
    assert claims.scales_like(stats.log_slope(hs, three[:, 1]), 2 / 3, 0.05).verdict is Verdict.YES
    assert claims.scales_like(stats.log_slope(hs, three[:, 1]), 1.0, 0.05).verdict is Verdict.NO


def test_scales_like_boundaries():
    fit = stats.Slope(0.7, 0.01, 7)
    assert claims.scales_like(fit, 0.6 + 1e-6, 0.1).verdict is Verdict.YES
    assert claims.scales_like(fit, 0.6 - 1e-6, 0.1).verdict is Verdict.NO
    assert claims.scales_like(stats.Slope(0.7, 0.1, 7), 0.7, 0.1).verdict is Verdict.NOT_RESOLVED


def test_literal_gd_with_mild_label_noise_keeps_the_transition_at_small_width():
    h = 256  # the step-2 minimum needs h of a few hundred at S ~ h^1.5 (the width boundary)
    setting = Setting("linear", 2, "gaussian", rb.paper_budget(27000, h), 10.0)
    curve = rb.split_curve(setting, h, 2, 2)
    prefs = {t: rb.preference(curve, t) for t in (1, 2)}
    assert prefs == {1: "unequal", 2: "equal"} and rb.transition_holds(prefs) == "yes"
    assert claims.midpoint_kind(curve.mean(2)) == "min"  # at step 1 the Gaussian curve is tilted, not peaked


def test_the_plan_runs_variants_at_the_simulation_width_and_the_papers_settings_at_its_width():
    plan = rb.robustness_plan(256, 5, 1000, 3)
    cases = rb.robustness_cases(256)
    assert [c.name for c, _, _ in plan] == [c.name for c in cases]
    for case, h, draws in plan:
        assert (h, draws) == ((1000, 3) if case.width == "paper" else (256, 5))
        assert case.setting == next(c for c in rb.robustness_cases(h) if c.name == case.name).setting
    assert {c.name for c, _, _ in plan if c.width == "paper"} == {
        "label noise SNR 1, orthogonal (the paper's setting)", "Gaussian, S = 0.854 h^1.5 (the paper's 27000), "
        "steps 1–8", "Gaussian, S = 1.42 h^1.5 (the paper's 45000)"}
    assert all(c.own for c in cases if "variant" in c.name)
    assert {c.name for c in cases if c.width == "paper" and c.own} == {"Gaussian, S = 1.42 h^1.5 (the paper's 45000)"}
    same = rb.robustness_plan(1000, 5, 1000, 5)  # a variant that would repeat a paper-width run is left out
    assert [c.name for c, _, _ in same] == [c.name for c in cases if "(variant at the simulation width)" not in c.name]
    with pytest.raises(ValueError, match="must be positive"):
        rb.robustness_plan(256, 0, 1000, 1)


def test_paper_budgets_are_the_official_lr_max_at_width_1000_in_units_of_h_to_the_1_5():
    assert rb.paper_budget(27000, 1000) == pytest.approx(27000, rel=1e-14)
    assert rb.paper_budget(45000, 256) == pytest.approx(45000 / 1000**1.5 * 256**1.5, rel=1e-14)
    assert rb.paper_budget(27000, 1) == pytest.approx(0.8538149682454625)


def _book_run(name):
    """The (case, width, draws) of the book preset's robustness run named ``name``."""
    from fibook.presets import get_preset

    s = get_preset("book").layerwise
    (run,) = [r for r in rb.robustness_plan(s.sim_width, s.robust_draws, s.wide_width, s.wide_draws)
              if r[0].name == name]
    return run


def test_the_book_runs_the_papers_noisy_setting_orthogonal_at_snr_1_h_1000_lr_max_27000_five_draws():
    case, h, draws = _book_run("label noise SNR 1, orthogonal (the paper's setting)")
    assert (h, draws, case.steps, case.claim_steps, case.own) == (1000, 5, (1, 2), (1, 2), False)
    st = case.setting
    assert (st.model, st.depth, st.kind, st.snr) == ("linear", 2, "orthogonal", 1.0)
    assert st.budget == pytest.approx(27000, rel=1e-12)
    assert sim.signal_variance(2, h) / st.snr == pytest.approx(0.001)  # the official rho = 0.001


def test_the_book_runs_the_gaussian_variant_with_snr_1_at_h_256_as_its_own_result():
    case, h, draws = _book_run("label noise SNR 1, Gaussian data (variant)")
    assert (h, draws, case.own, case.setting.kind, case.setting.snr) == (256, 5, True, "gaussian", 1.0)
    assert case.setting.budget == pytest.approx(27000 / 1000**1.5 * 256**1.5)


def test_the_book_runs_the_papers_gaussian_45000_at_h_1000_five_draws_as_its_own_result():
    case, h, draws = _book_run("Gaussian, S = 1.42 h^1.5 (the paper's 45000)")  # the paper's claim there is not public
    assert (h, draws, case.steps, case.claim_steps, case.own) == (1000, 5, (1, 2), (1, 2), True)
    st = case.setting
    assert (st.model, st.depth, st.kind, st.snr, st.budget) == ("linear", 2, "gaussian", None, pytest.approx(45000))


def test_the_book_runs_the_papers_gaussian_27000_at_h_1000_five_draws_over_steps_1_2_4_8():
    case, h, draws = _book_run("Gaussian, S = 0.854 h^1.5 (the paper's 27000), steps 1–8")
    assert (h, draws, case.steps, case.claim_steps, case.own) == (1000, 5, (1, 2, 4, 8), (1, 2, 4, 8), False)
    st = case.setting
    assert (st.model, st.depth, st.kind, st.snr, st.budget) == ("linear", 2, "gaussian", None, pytest.approx(27000))


def test_orthogonal_label_noise_runs_along_a_split_grid():
    case = rb.Case("toy", "holds", Setting("linear", 2, "orthogonal", rb.paper_budget(27000, 32), 1.0), (1, 2))
    r = rb.run_case(case, 32, 2)
    assert np.isfinite(r.curve.test).all() and set(r.preferences) == {1, 2}


def test_a_case_result_names_its_best_splits_agreeing_draws_and_diverged_runs():
    steps = (1, 2)
    bowl = (SPLITS - 0.5) ** 2
    test = np.stack([np.ones_like(SPLITS), 1 - bowl, 1 + bowl], axis=1)[:, :, None].repeat(2, axis=2)
    train = np.ones_like(test)
    train[[0, 4], 2, 1] = np.inf  # two runs (splits 0.05 and 0.25, second draw) blow up at step 2
    curve = rb.SplitCurve(Setting("linear", 2, "gaussian", 1.0), SPLITS, test, train, 2)
    prefs = {t: rb.preference(curve, t) for t in steps}
    r = rb.CaseResult(rb.Case("toy", "holds", curve.setting, steps), 64, curve, prefs, rb.transition_holds(prefs))
    assert r.draws == 2 and r.transition == "diverged"
    assert r.step_text(1) == "unequal (φ = 0.05 and 0.95, 2/2 draws)"
    assert r.step_text(2) == "diverged (2 of 38 runs)"


def test_run_case_checks_every_step_of_its_case_on_one_curve():
    case = rb.Case("toy", "holds", Setting("linear", 2, "orthogonal", 0.85 * 32**1.5), (1, 2))
    r = rb.run_case(case, 32, 2)
    assert r.curve.test.shape == (rb.GRID_POINTS, 3, 2) and set(r.preferences) == {1, 2}
    assert r.preferences == {t: rb.preference(r.curve, t) for t in (1, 2)}
    assert r.transition == rb.transition_holds(r.preferences)


def test_window_fits_fit_the_edges_of_each_width():
    hs = np.array([256.0, 1024.0, 4096.0, 16384.0])
    edges, lo, hi = rb.window_fits(3, hs)
    assert edges == pytest.approx(np.array([rb.step2_window(3, h, 1e-3, 1e6) for h in hs]))
    want = np.polyfit(np.log(hs), np.log(edges[:, 1]), 1)[0]
    assert hi.slope == pytest.approx(want) and hi.n == 4 and lo.slope == pytest.approx(
        np.polyfit(np.log(hs), np.log(edges[:, 0]), 1)[0])
    with pytest.raises(ValueError, match="closed form at depths"):
        rb.window_fits(4, hs)


def _same_curves(a, b):
    return all(np.array_equal(getattr(a.curve, k), getattr(b.curve, k), equal_nan=True)
               for k in ("splits", "test", "train"))


class Interrupted(Exception):
    pass


REAL_SPLIT_CURVE = rb.split_curve


def _counting(monkeypatch, fail_after=None):
    """Count the split curves computed; the call after ``fail_after`` of them raises, as an interruption."""
    calls = []

    def counted(*args, **kwargs):
        if fail_after is not None and len(calls) >= fail_after:
            raise Interrupted
        calls.append(args[1:4])
        return REAL_SPLIT_CURVE(*args, **kwargs)

    monkeypatch.setattr(rb, "split_curve", counted)
    return calls


TOY = rb.Case("toy", "holds", Setting("linear", 2, "orthogonal", 0.85 * 16**1.5), (1, 2))
BLOWN = rb.Case("blown", "holds", Setting("linear", 2, "gaussian", 1e6), (1, 8))  # diverges: inf and NaN losses


def test_stored_runs_compute_each_curve_once_and_read_back_exactly_what_was_computed(tmp_path, monkeypatch):
    path, plan = tmp_path / "book.json", [(TOY, 16, 2), (BLOWN, 16, 1)]
    calls = _counting(monkeypatch)
    first = rb.stored_runs(plan, path)
    assert len(calls) == 2 and path.is_file()
    fresh = [rb.run_case(c, h, d) for c, h, d in plan]
    assert first[1].transition == "diverged"
    assert np.isnan(first[1].curve.train).any() and np.isinf(first[1].curve.test).any()
    again = rb.stored_runs(plan, path)
    assert len(calls) == 4  # run_case above computed two; the store computed nothing more
    for a, b, c in zip(first, again, fresh, strict=True):
        assert _same_curves(a, b) and _same_curves(a, c)
        assert a.preferences == b.preferences == c.preferences and a.transition == b.transition == c.transition
    records = json.loads(path.read_text())["curves"]
    assert [r["case"] for r in records] == ["toy", "blown"]
    assert all(r["provenance"]["git_commit"] and r["provenance"]["date"] for r in records)


def test_an_interrupted_store_resumes_and_a_changed_run_is_computed_again(tmp_path, monkeypatch):
    path, plan = tmp_path / "book.json", [(TOY, 16, 2), (BLOWN, 16, 1)]
    _counting(monkeypatch, fail_after=1)
    with pytest.raises(Interrupted):
        rb.stored_runs(plan, path)
    assert [r["case"] for r in json.loads(path.read_text())["curves"]] == ["toy"]  # the finished curve is kept
    calls = _counting(monkeypatch)
    rb.stored_runs(plan, path)
    assert calls == [(16, 8, 1)]  # only the missing curve: width 16, 8 steps, 1 draw
    wider = [(TOY, 16, 3), (BLOWN, 16, 1)]  # another draw count is another run; the old curve is dropped
    rb.stored_runs(wider, path)
    assert calls == [(16, 8, 1), (16, 2, 3)]
    keys = [r["key"] for r in json.loads(path.read_text())["curves"]]
    assert keys == [rb.run_key(c, h, d) for c, h, d in wider]
    assert rb.run_key(TOY, 16, 2) != rb.run_key(rb.Case("toy", "holds", replace(TOY.setting, snr=10.0), (1, 2)), 16, 2)


def test_a_file_that_is_not_a_robustness_store_says_which_and_what_to_do(tmp_path):
    path = tmp_path / "book.json"
    path.write_text('{"runs": []}')
    with pytest.raises(ValueError, match=r"book.json is not a robustness results file .* move it away"):
        rb.stored_runs([(TOY, 16, 2)], path)
