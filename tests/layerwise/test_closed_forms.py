"""Part III closed forms and simulations, checked against independent computations.

Closed forms vs Monte Carlo over sampled networks, surrogate vs literal gradient descent, the reduced (X-free)
update vs autograd on the full data matrix, and pinned reference values (derived independently of this code).
"""

import numpy as np
import pytest
import torch

from fibook.layerwise import closed_forms as lw
from fibook.layerwise import simulation as sim

# (depth, eta1, eta2) -> (L1 with the 2p term, L1 without it, L2, exact-GD L1 or None), h = 1000.
PINNED = {
    (2, 13500, 13500): (0.94776258, 0.94776222, 0.87887982, 0.94841910),
    (2, 1350, 25650): (0.94773027, 0.94773020, 0.89254703, 0.94781184),
    (2, 31500, 31500): (0.87995554, 0.87995356, 0.59250370, 0.88355814),
    (2, 3150, 59850): (0.87900492, 0.87900454, 0.72548371, 0.87958996),
    (3, 15, 15): (0.94190050, 0.94190005, 0.85990714, None),
    (3, 1.5, 28.5): (0.94190009, 0.94190000, 0.87987220, None),
    (3, 50, 50): (0.81101125, 0.81100625, 0.10273281, None),
    (3, 5, 95): (0.81100118, 0.81100023, 0.49921506, None),
}


@pytest.mark.parametrize("key", list(PINNED))
def test_pinned_reference_values(key):
    depth, e1, e2 = key
    l1, l1_code, l2, l1_exact = PINNED[key]
    assert lw.closed_form_loss(depth, 1000, e1, e2, 1) == pytest.approx(l1, abs=1e-8)
    assert lw.closed_form_loss(depth, 1000, e1, e2, 1, variant="official_code") == pytest.approx(l1_code, abs=1e-8)
    assert lw.closed_form_loss(depth, 1000, e1, e2, 2) == pytest.approx(l2, abs=1e-8)
    assert lw.closed_form_loss(depth, 1000, e1, e2, 0) == pytest.approx(1.001, abs=1e-12)
    if l1_exact is not None:
        assert lw.exact_one_step_loss(1000, e1, e2) == pytest.approx(l1_exact, abs=1e-8)


def _random_cases():
    """Random (depth, h, eta1, eta2) in the paper's regime: S ~ h^1.5 (depth 2), S ~ h^0.75 (depth 3)."""
    rng = np.random.default_rng(7)
    cases = []
    for depth, power in ((2, 1.5), (3, 0.75)):
        for _ in range(2):
            h = int(rng.choice([16, 24, 32]))
            budget = rng.uniform(0.5, 2.0) * h**power
            frac = rng.uniform(0.1, 0.9)
            cases.append((depth, h, frac * budget, (1 - frac) * budget))
    return cases


@pytest.mark.parametrize("depth,h,eta1,eta2", _random_cases())
def test_closed_forms_agree_with_monte_carlo(depth, h, eta1, eta2):
    mc = sim.simulate(depth, h, eta1, eta2, steps=2, surrogate=True, draws=3000, seed=11)
    for step in (0, 1, 2):
        z = (mc.mean[step] - lw.closed_form_loss(depth, h, eta1, eta2, step)) / mc.sem[step]
        assert abs(z) < 3, (step, z)


@pytest.mark.parametrize("depth,h", [(2, 16), (3, 32)])
def test_monte_carlo_rejects_the_step1_formula_without_the_2p_term(depth, h):
    budget = 2 * h**1.5 if depth == 2 else 2 * h**0.75
    mc = sim.simulate(depth, h, 0.5 * budget, 0.5 * budget, steps=1, draws=6000, seed=3)
    z = (mc.mean[1] - lw.closed_form_loss(depth, h, 0.5 * budget, 0.5 * budget, 1, "official_code")) / mc.sem[1]
    assert z > 5


@pytest.mark.parametrize("h", [16, 32])
def test_exact_one_step_formula_agrees_with_literal_gd(h):
    budget = 2 * h**1.5
    mc = sim.simulate(2, h, 0.3 * budget, 0.7 * budget, steps=1, surrogate=False, draws=3000, seed=5)
    z = (mc.mean[1] - lw.exact_one_step_loss(h, 0.3 * budget, 0.7 * budget)) / mc.sem[1]
    assert abs(z) < 3


def test_surrogate_gap_shrinks_like_one_over_width_at_step_one():
    widths = np.array([128, 256, 512])
    gaps = []
    for h in widths:
        budget = 2 * h**1.5
        sur = sim.simulate(2, h, 0.3 * budget, 0.7 * budget, steps=1, surrogate=True, draws=3, seed=1)
        ex = sim.simulate(2, h, 0.3 * budget, 0.7 * budget, steps=1, surrogate=False, draws=3, seed=1)
        gaps.append(abs(ex.mean[1] - sur.mean[1]))
    slope = np.polyfit(np.log(widths), np.log(gaps), 1)[0]
    assert abs(slope + 1) < 0.2, slope


def _literal_gd(setup, x, rates, steps, y=None):
    """Autograd on the full training loss (1/2n)||X W a / c - Y||^2, Y = X beta unless given, one problem
    (draw 0)."""
    y = x @ setup.beta[0] if y is None else y
    ws = [w[0].clone() for w in setup.weights]
    a = None if setup.a is None else setup.a[0]
    for _ in range(steps):
        ws = [w.detach().requires_grad_(True) for w in ws]
        prod = ws[0]
        for w in ws[1:]:
            prod = prod @ w
        out = x @ (prod if a is None else prod @ a) / setup.c
        loss = ((out - y) ** 2).sum() / (2 * x.shape[0])
        grads = torch.autograd.grad(loss, ws)
        ws = [w.detach() - r * g for w, r, g in zip(ws, rates, grads, strict=True)]
    return ws


@pytest.mark.parametrize("depth,init,data", [(2, "orthogonal", "orthogonal"), (3, "orthogonal", "orthogonal"),
                                             (2, "gaussian", "gaussian"), (4, "gaussian", "gaussian")])
def test_reduced_update_equals_literal_gd_on_the_data_matrix(depth, init, data):
    h = 12
    setup = sim.sample_setup(depth, h, 1, init, data, seed=2)
    gen = torch.Generator().manual_seed(9)
    if data == "orthogonal":
        q, _ = torch.linalg.qr(torch.randn(h, h, generator=gen, dtype=torch.float64))
        x = h**0.5 * q
        setup = sim.LinearSetup(setup.depth, h, setup.weights, setup.a, setup.beta, None, setup.c)
    else:
        x = torch.randn(h, h, generator=gen, dtype=torch.float64)
        setup = sim.LinearSetup(setup.depth, h, setup.weights, setup.a, setup.beta, (x.T @ x / h)[None], setup.c)
    rates = sim.layer_rates(depth, 0.7 * h, 1.3 * h)
    _, _, reduced = sim.descend(setup.weights, lambda w: sim.gradient(setup, w),
                                lambda w: sim.population_loss(setup, w), lambda w, g, t: rates, 2)
    literal = _literal_gd(setup, x, rates, 2)
    for w_red, w_lit in zip(reduced, literal, strict=True):
        assert torch.max(torch.abs(w_red[0] - w_lit)) < 1e-12


def assert_reduced_is_literal_gd(setup, x, y):
    """Two steps of the reduced update on ``setup`` equal literal GD on the data matrix ``x`` and labels ``y``, and
    its train loss is the literal one."""
    depth, h = setup.depth, setup.h
    rates = sim.layer_rates(depth, 0.7 * h, 1.3 * h) if depth == 2 else sim.layer_rates(depth, 0.7, 1.3)
    _, _, reduced = sim.descend(setup.weights, lambda w: sim.gradient(setup, w),
                                lambda w: sim.population_loss(setup, w), lambda w, g, t: rates, 2)
    for w_red, w_lit in zip(reduced, _literal_gd(setup, x, rates, 2, y=y), strict=True):
        assert torch.max(torch.abs(w_red[0] - w_lit)) < 1e-12
    out = x @ sim.output_map(setup, reduced)[0]
    assert sim.train_loss(setup, reduced).item() == pytest.approx(((out - y) ** 2).sum().item() / (2 * h), rel=1e-12)


@pytest.mark.parametrize("depth", [2, 3])
def test_label_noise_enters_the_reduced_update_and_training_loss_as_on_the_data_matrix(depth):
    h, rho = 12, 0.3
    noisy = sim.sample_setup(depth, h, 1, "gaussian", "gaussian", seed=4, noise=rho)
    clean = sim.sample_setup(depth, h, 1, "gaussian", "gaussian", seed=4)
    assert all(torch.equal(a, b) for a, b in zip(noisy.weights, clean.weights, strict=True))
    assert torch.equal(noisy.beta, clean.beta)
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(h, h, generator=gen, dtype=torch.float64)
    xi = torch.randn(*clean.beta.shape[1:], generator=gen, dtype=torch.float64) * rho**0.5
    setup = sim.LinearSetup(depth, h, clean.weights, clean.a, clean.beta, (x.T @ x / h)[None], clean.c,
                            (x.T @ xi / h)[None], (xi**2).sum()[None] / h)
    assert_reduced_is_literal_gd(setup, x, x @ clean.beta[0] + xi)
    assert clean.noise_xt is None and noisy.noise_xt.shape == clean.beta.shape and noisy.noise_sq.item() > 0


@pytest.mark.parametrize("depth", [2, 3])
def test_orthogonal_label_noise_enters_as_the_statistics_of_the_n_noisy_labels(depth):
    """Y = X beta + xi with X = sqrt(n) Q_x (n = d = h) and xi i.i.d. N(0, rho) on the n labels: literal GD on the
    data matrix equals the reduced update with X^T xi / n = Q_x^T xi / sqrt(n) and ||xi||^2 / n, and the second
    of these is the squared norm of the first, as sample_setup draws them."""
    h, rho = 12, 0.3
    noisy = sim.sample_setup(depth, h, 1, "orthogonal", "orthogonal", seed=4, noise=rho)
    clean = sim.sample_setup(depth, h, 1, "orthogonal", "orthogonal", seed=4)
    assert all(torch.equal(a, b) for a, b in zip(noisy.weights, clean.weights, strict=True))
    assert torch.equal(noisy.beta, clean.beta) and noisy.sigma is None and clean.noise_xt is None
    assert noisy.noise_sq.item() == pytest.approx((noisy.noise_xt**2).sum().item(), rel=1e-14)
    gen = torch.Generator().manual_seed(9)
    q = sim.haar(1, h, gen)[0]
    x = h**0.5 * q
    xi = torch.randn(*clean.beta.shape[1:], generator=gen, dtype=torch.float64) * rho**0.5
    xt = q.T @ xi / h**0.5
    assert torch.max(torch.abs(xt - x.T @ xi / h)) < 1e-14  # Q_x^T xi / sqrt(n) is X^T xi / n
    assert (xt**2).sum().item() == pytest.approx((xi**2).sum().item() / h, rel=1e-12)  # and ||.||^2 = ||xi||^2 / n
    setup = sim.LinearSetup(depth, h, clean.weights, clean.a, clean.beta, None, clean.c, xt[None],
                            (xi**2).sum()[None] / h)
    assert_reduced_is_literal_gd(setup, x, x @ clean.beta[0] + xi)


def test_orthogonal_noise_statistics_match_a_brute_force_simulation_of_the_labels():
    """The entries of Q_x^T xi / sqrt(n), computed from a Haar Q_x and n x h label noise over many draws, have
    mean 0, variance rho / n and no correlation, as do sample_setup's noise_xt; ||xi||^2 / n has mean rho h."""
    h, rho, draws = 6, 0.5, 6000
    gen = torch.Generator().manual_seed(11)
    q = sim.haar(draws, h, gen)
    xi = torch.randn(draws, h, h, generator=gen, dtype=torch.float64) * rho**0.5
    brute = (q.transpose(-1, -2) @ xi / h**0.5).reshape(draws, -1).numpy()
    drawn = sim.sample_setup(2, h, draws, "orthogonal", "orthogonal", seed=5, noise=rho)
    ours = drawn.noise_xt.reshape(draws, -1).numpy()
    for z in (brute, ours):
        cov = z.T @ z / draws / (rho / h)  # (h^2, h^2): the identity, each entry within ~4 sd of 1/sqrt(draws)
        assert np.max(np.abs(z.mean(axis=0))) / (rho / h) ** 0.5 < 4.5 / draws**0.5
        assert np.max(np.abs(np.diag(cov) - 1)) < 4.5 * (2 / draws) ** 0.5
        assert np.max(np.abs(cov - np.diag(np.diag(cov)))) < 4.5 / draws**0.5
    sq = [(xi**2).sum(dim=(-2, -1)).numpy() / h, drawn.noise_sq.numpy()]
    for v in sq:  # ||xi||^2 / n is rho chi^2_{nh} / n (n = h): mean rho h, sd rho sqrt(2) per draw
        assert abs(v.mean() - rho * h) < 4.5 * rho * 2**0.5 / draws**0.5


@pytest.mark.parametrize("depth", [2, 3])
def test_the_label_snr_of_orthogonal_data_is_the_signal_variance_over_the_noise(depth):
    """The mean square of the entries of X beta (X = sqrt(n) Q_x) is signal_variance exactly: 1/h at depth 2
    (rho = 0.001 is SNR 1 at h = 1000, the official setting), 1 deeper."""
    h = 10
    setup = sim.sample_setup(depth, h, 3, "orthogonal", "orthogonal", seed=2)
    q = sim.haar(3, h, torch.Generator().manual_seed(3))
    labels = h**0.5 * q @ setup.beta
    ms = (labels**2).mean(dim=(-2, -1))
    assert torch.allclose(ms, torch.full_like(ms, sim.signal_variance(depth, h)), rtol=1e-12)
    assert sim.signal_variance(2, 1000) == 0.001


def test_gradient_norms_show_the_sqrt_width_gap():
    h = 48
    rows = sim.gradient_norms(sim.sample_setup(2, h, 3, seed=4))
    for r in rows:
        assert r["A_op"] == pytest.approx(h**-1.5, rel=1e-10)
        assert r["A_F"] == pytest.approx(h**-1.0, rel=1e-10)
        assert r["B_op"] == pytest.approx(h**-2.0, rel=1e-10)
        assert r["B_F"] == pytest.approx(h**-1.5, rel=1e-10)


def test_split_curvature_matches_finite_differences_and_the_sign_tables():
    h, budget, t = 1000, 2 * 1000**1.5, 50.0
    for depth, b in ((2, budget), (3, 2 * 1000**0.5)):
        for step in (1, 2):
            dt = t * b / budget
            f = [lw.closed_form_loss(depth, h, b / 2 + d, b / 2 - d, step) for d in (-dt, 0.0, dt)]
            fd = (f[0] - 2 * f[1] + f[2]) / dt**2
            assert lw.split_curvature(depth, h, b, step) == pytest.approx(fd, rel=1e-3)
    # step 1: equal rates are a maximum; step 2 (depth 2): a minimum for alpha in [1, 1.5] at h >= 512
    for hh in (512, 1000, 2048):
        for alpha in (1.0, 1.25, 1.5):
            assert lw.split_curvature(2, hh, 2 * hh**alpha, 1) < 0
            assert lw.split_curvature(2, hh, 2 * hh**alpha, 2) > 0
        for alpha in (0.0, 0.25, 0.5):
            assert lw.split_curvature(3, hh, 2 * hh**alpha, 2) > 0
    assert lw.split_curvature(2, 256, 2 * 256**1.5, 2) < 0  # below the width window
    # the depth-2 window at h = 1000 is 503 <= eta <= 4.44e4 per layer
    assert lw.split_curvature(2, 1000, 2 * 495, 2) < 0 < lw.split_curvature(2, 1000, 2 * 510, 2)
    assert lw.split_curvature(2, 1000, 2 * 4.40e4, 2) > 0 > lw.split_curvature(2, 1000, 2 * 4.48e4, 2)


def test_closed_form_broadcasts_over_rate_arrays():
    e1 = np.array([[10.0], [200.0], [3000.0]])
    e2 = np.array([[5.0, 50.0, 500.0, 5000.0]])
    grid = lw.closed_form_loss(2, 256, e1, e2, 2)
    assert grid.shape == (3, 4)
    assert grid[2, 1] == pytest.approx(float(lw.closed_form_loss(2, 256, 3000.0, 50.0, 2)), rel=1e-15)


@pytest.mark.parametrize("kwargs,match", [
    ({"depth": 4}, r"depth must be one of \(2, 3\)"),
    ({"step": 3}, r"step must be one of \(0, 1, 2\)"),
    ({"eta1": -1.0}, r"learning rate eta1 must be finite and >= 0"),
    ({"eta2": np.array([1.0, -2.0])}, r"learning rate eta2 must be finite and >= 0"),
    ({"h": 0}, r"width h must be finite and > 0"),
    ({"variant": "code"}, r"variant must be one of \('paper', 'official_code'\)"),
])
def test_bad_input_is_rejected_with_what_is_allowed(kwargs, match):
    args = {"depth": 2, "h": 64, "eta1": 1.0, "eta2": 2.0, "step": 1} | kwargs
    with pytest.raises(ValueError, match=match):
        lw.closed_form_loss(**args)


def test_simulation_rejects_bad_settings():
    with pytest.raises(ValueError, match=r"init must be one of \('orthogonal', 'gaussian'\)"):
        sim.simulate(2, 8, 1.0, 1.0, init="uniform", draws=2)
    with pytest.raises(ValueError, match="width h must be finite and > 0"):
        sim.simulate(2, -8, 1.0, 1.0, draws=2)
    with pytest.raises(ValueError, match="learning rate eta2 must be finite and >= 0"):
        sim.simulate(3, 8, 1.0, -1.0, draws=2)
    with pytest.raises(ValueError, match="steps must be a non-negative integer"):
        sim.simulate(3, 8, 1.0, 1.0, steps=-1, draws=2)


def test_best_splits_reports_both_ends_of_a_symmetric_curve_on_any_rounding():
    e1, e2 = lw.budget_grid(27000.0)
    loss = lw.closed_form_loss(2, 1000, e1, e2, 1)
    assert lw.best_splits(e1, loss, 27000.0) == pytest.approx((0.05, 0.95))
    # The same curve with its ends pushed apart by rounding-size noise either way: the answer does not move.
    for nudge in (+1e-15, -1e-15):
        noisy = loss.copy()
        noisy[0] *= 1 + nudge
        assert lw.best_splits(e1, noisy, 27000.0) == pytest.approx((0.05, 0.95))


def test_best_splits_tie_boundary_is_rtol_relative_to_the_minimum():
    eta1 = np.array([1.0, 2.0, 3.0])
    low = 2.0
    just_in = np.array([low * (1 + 0.99 * lw.TIE_RTOL), 5.0, low])
    just_out = np.array([low * (1 + 1.01 * lw.TIE_RTOL), 5.0, low])
    assert lw.best_splits(eta1, just_in, 4.0) == (0.25, 0.75)
    assert lw.best_splits(eta1, just_out, 4.0) == (0.75,)
    assert lw.best_splits(eta1, np.array([3.0, 1.0, 2.0]), 4.0) == (0.5,)
    with pytest.raises(ValueError, match="non-finite"):
        lw.best_splits(eta1, np.array([1.0, np.nan, 2.0]), 4.0)
    with pytest.raises(ValueError, match="one length"):
        lw.best_splits(eta1, np.array([1.0, 2.0]), 4.0)
