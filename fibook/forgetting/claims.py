"""The book's verdicts: every row of a chapter's "claim | paper | ours | agrees?" table, computed here.

A chapter cell that decides a verdict is one call of a function of this module; the rule behind each verdict and
its thresholds are named constants, stated in the docstring and in the chapter text before the figure, and
tested just above and just below each threshold. ``paper`` says what the paper reports (or that it does not),
``ours`` the number measured here with the setting it was measured in.

Part I (forgetting initialization, Das et al. 2026), read on the seed-averaged arms of
:mod:`fibook.forgetting.analysis`:

=================================  ==========================================================================
``ERASES_FRACTION = 0.5``          an arm "largely erases" the sigma_w dependence when its spread is below half
                                   of low-learning-rate SGD's (``optimizers``)
``COMMON_NORM_R = 0.5``            adaptive methods drive the weights to a common norm when the radial memory R
                                   (slope of log final norm on log sigma_w) of each is below 0.5
``KEEPS_FRACTION = 0.5``           training longer "leaves the spread" when the longest arm keeps more than
                                   half of the shortest arm's selected and last-epoch spreads
``ERASED_PP = 1.0``                L2 erases the memory outright when the spread is below 1 pp; below
                                   ``ERASES_FRACTION`` of the baseline's it does so qualitatively
``RANK_AGREES = 0.5``              spread rising with batch size: Spearman rank correlation above 0.5
``LARGE_SPREAD_PP = 5.0``          low-learning-rate SGD "keeps a large spread" across sigma_w from 5 pp up
``RADIAL_KEPT = 0.8``              the final weight norm "stays tied to sigma_w" when R exceeds 0.8
``NOISE_MULTIPLE = 3.0``           a spread is "far larger than seed noise" when the seed-mean spread exceeds
                                   3 x the largest per-sigma_w seed standard deviation
``CLOCK_RHO = -0.5``               "a larger clock leaves a smaller spread": Spearman rank correlation of spread
                                   with the clock at or below -0.5 across arms (weakly between -0.5 and 0)
``INVARIANCE_TOL = 1e-9``          BatchNorm scale invariance holds when the loss moves by less than 1e-9 and
                                   the gradient's cosine with the weight is below 1e-9 (float64)
``LOGIT_FLOOR = 1e-4``             sigma_w only scales the initial logits when the relative deviation from
                                   sigma_w logits(1) is below 1e-4 (float32 rounding lies below it)
(quoted figures)                   a recomputed clock agrees when it rounds to the paper's two digits
=================================  ==========================================================================
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from fibook.forgetting.analysis import Arm, Finished, effective_lr, seed_spreads, seed_std_pp, setting, sgd_with_l2
from fibook.forgetting.metrics import rank_correlation
from fibook.forgetting.optimizers import get_optimizer
from fibook.notebook import Claim, below

ERASES_FRACTION = 0.5
COMMON_NORM_R = 0.5
KEEPS_FRACTION = 0.5
ERASED_PP = 1.0
RANK_AGREES = 0.5
LARGE_SPREAD_PP = 5.0
RADIAL_KEPT = 0.8
NOISE_MULTIPLE = 3.0
CLOCK_RHO = -0.5
INVARIANCE_TOL = 1e-9
LOGIT_FLOOR = 1e-4


def arm_key(arm: Arm) -> str:
    """``sgd``, ``msgd``, ``adam``, ``adamw``, ``muon``, or ``sgd+L2`` for SGD with weight decay."""
    return arm.config.optimizer + ("+L2" if sgd_with_l2(arm.config) else "")


def interpolating(arm: Arm) -> str:
    """``3 of 5 σ_w interpolate``: sigma_w values at which every seed reached the interpolation threshold."""
    return f"{sum(arm.interpolated)} of {len(arm.sigmas)} σ_w interpolate"


def erases(arm: Arm, sgd: Arm) -> str:
    """``qualitatively`` when ``arm``'s spread is below ``ERASES_FRACTION`` of SGD's, else ``no``."""
    return "qualitatively" if arm.spread_pp < ERASES_FRACTION * sgd.spread_pp else "no"


def common_norm(adaptive: Sequence[Arm]) -> str:
    """``qualitatively`` when every adaptive arm's radial memory R is below ``COMMON_NORM_R``, else ``no``."""
    return "qualitatively" if all(a.radial_memory < COMMON_NORM_R for a in adaptive) else "no"


OPTIMIZER_CLAIMS = (  # key, the paper's number, the claim
    ("adam", "qualitative", "Adam largely erases the σ_w dependence"),
    ("adamw", "qualitative", "AdamW largely erases it too"),
    ("muon", "≈ 4.0 pp (secondary)", "Muon leaves a small spread"),
    ("sgd+L2", "≈ 0.3 pp at η = λ = 1e-2, T_L2 = 9.36 (secondary)", "SGD + L2 at a large T_L2 forgets"),
)


def optimizer_claims(arm_list: Sequence[Arm], scale: str) -> list[Claim]:
    """The ``optimizers`` chapter's rows: each method's spread against SGD's (:func:`erases`), momentum SGD
    (not in the paper) and the common-norm claim (:func:`common_norm`). An arm not run yet says so."""
    by_key = {arm_key(a): a for a in arm_list}
    sgd = by_key["sgd"]
    where = setting(sgd.config, scale)
    claims = []
    for key, paper, claim in OPTIMIZER_CLAIMS:
        a = by_key.get(key)
        if a is None:
            claims.append(Claim(claim, paper, f"not run yet at scale '{scale}'", "not tested"))
            continue
        clock, value = a.clock()
        ours = (f"{a.spread_pp:.1f} pp ({clock} = {value:.3g}; {interpolating(a)}) vs SGD {sgd.spread_pp:.1f} pp; "
                f"{where}")
        claims.append(Claim(claim, paper, ours, erases(a, sgd)))
    if "msgd" in by_key:
        m = by_key["msgd"]
        claims.append(Claim("momentum SGD at the same raw η", "no number given",
                            f"{m.spread_pp:.1f} pp vs SGD {sgd.spread_pp:.1f} pp; effective T_SGD = "
                            f"{m.clock()[1]:.3g} (η/(1−μ) = {effective_lr(m.config):g}) vs {sgd.clock()[1]:.3g}",
                            "n/a (not in the paper)"))
    adaptive = [by_key[k] for k in ("adam", "adamw") if k in by_key]
    if adaptive:
        radial = ", ".join(f"{get_optimizer(a.config.optimizer).label} {a.radial_memory:.2f}" for a in adaptive)
        claims.append(Claim("adaptive methods drive the weights to a common norm", "qualitative (secondary)",
                            f"R: {radial}; SGD {sgd.radial_memory:.2f}", common_norm(adaptive)))
    return claims


def keeps_spread(short: Arm, long: Arm) -> str:
    """``qualitatively`` when the longer arm keeps more than ``KEEPS_FRACTION`` of the shorter one's selected
    and last-epoch spreads, else ``no``."""
    kept = all(getattr(long, k) > KEEPS_FRACTION * getattr(short, k) for k in ("spread_pp", "final_spread_pp"))
    return "qualitatively" if kept else "no"


def l2_erases(base: Arm, both: Arm) -> str:
    """``yes`` below ``ERASED_PP``; ``qualitatively: k× smaller, not ≈ 0.3 pp`` below ``ERASES_FRACTION`` of the
    baseline's spread; else ``no``."""
    if both.spread_pp < ERASED_PP:
        return "yes"
    ratio = both.spread_pp / base.spread_pp
    return f"qualitatively: {1 / ratio:.1f}× smaller, not ≈ 0.3 pp" if ratio < ERASES_FRACTION else "no"


def falls_with_l2(rows: dict[float, Sequence[Arm]]) -> str:
    """Per learning rate, arms in rising L2 strength: ``qualitatively`` when the spread falls strictly along
    every row, ``partly: only at η = ...`` when along some, else ``no``."""
    falling = [lr for lr, r in rows.items() if all(x.spread_pp > y.spread_pp for x, y in itertools.pairwise(r))]
    if len(falling) == len(rows):
        return "qualitatively"
    return f"partly: only at η = {', '.join(f'{lr:g}' for lr in falling)}" if falling else "no"


def l2_not_lr(base: Arm, lr_only: Arm, both: Arm) -> str:
    """``yes`` when adding L2 at the large rate lowers the spread more than raising the rate alone did."""
    by_lr, by_l2 = base.spread_pp - lr_only.spread_pp, lr_only.spread_pp - both.spread_pp
    return "yes" if by_l2 > by_lr else "no: here the larger learning rate alone accounts for the drop"


def rises_with_batch(rho: float | None) -> str:
    """``qualitatively`` when the rank correlation of spread with batch size exceeds ``RANK_AGREES``."""
    return "qualitatively" if rho is not None and rho > RANK_AGREES else "no"


def _row(claim: str, paper: str, finished: Finished, needed: bool, ours: Callable[[], tuple[str, str]]) -> Claim:
    """A claim measured on ``finished``'s arms, or ``not tested yet`` while they are not all there."""
    if not needed:
        return Claim(claim, paper, f"not finished ({finished.progress})", "not tested yet")
    return Claim(claim, paper, *ours())


def time_l2_batch_claims(long: Finished, l2: Finished, batch: Finished, lrs: Sequence[float],
                         wds: Sequence[float], scale: str) -> list[Claim]:
    """The ``time_lr_l2_batch`` chapter's rows: longer training (:func:`keeps_spread`, shortest against longest
    arm), L2 at a large rate (:func:`l2_erases`), more L2 at a fixed rate (:func:`falls_with_l2`), L2 or the rate
    (:func:`l2_not_lr`), batch size (:func:`rises_with_batch`); ``lrs`` x ``wds`` is the L2 grid."""
    def where(f: Finished, show):
        return setting(f.arms[0].config, scale, show=show)

    long_arms = sorted(long.arms, key=lambda a: a.config.epochs)
    batch_arms = sorted(batch.arms, key=lambda a: a.config.batch_size)
    cells = {(a.config.lr, a.config.weight_decay): a for a in l2.arms}
    lo, hi, strongest = min(lrs), max(lrs), max(wds)
    base, lr_only, both = cells.get((lo, 0.0)), cells.get((hi, 0.0)), cells.get((hi, strongest))
    full = {lr: r for lr, r in ((lr, [cells.get((lr, w)) for w in wds]) for lr in lrs) if all(r)}

    def longer():
        short, longest = long_arms[0], long_arms[-1]
        return (f"{short.config.epochs} → {longest.config.epochs} epochs: selected {short.spread_pp:.1f} → "
                f"{longest.spread_pp:.1f} pp, last epoch {short.final_spread_pp:.1f} → "
                f"{longest.final_spread_pp:.1f} pp, R {short.radial_memory:.2f} → {longest.radial_memory:.2f} "
                f"({where(long, ('arch', 'lr'))})"), keeps_spread(short, longest)

    def large_rate_l2():
        return (f"{both.label}: {both.spread_pp:.1f} pp (T_L2 = {both.records[0].summary.clocks['T_L2']:.3g}; "
                f"{interpolating(both)}) vs {base.label}: {base.spread_pp:.1f} pp "
                f"({where(l2, ('arch', 'epochs'))})"), l2_erases(base, both)

    def more_l2():
        per_lr = "; ".join(f"η = {lr:g}: " + " → ".join(f"{a.spread_pp:.1f}" for a in r) + " pp"
                           for lr, r in full.items())
        return (f"λ = {', '.join(f'{w:g}' for w in wds)}: {per_lr} ({where(l2, ('arch', 'epochs'))})",
                falls_with_l2(full))

    def rate_or_l2():
        return (f"learning rate alone ({base.label} → {lr_only.label}): {base.spread_pp:.1f} → "
                f"{lr_only.spread_pp:.1f} pp (T_SGD ×{lr_only.clock()[1] / base.clock()[1]:.0f}); then adding "
                f"λ = {strongest:g}: {lr_only.spread_pp:.1f} → {both.spread_pp:.1f} pp "
                f"({where(l2, ('arch', 'epochs'))})"), l2_not_lr(base, lr_only, both)

    def batches():
        rho = rank_correlation([a.config.batch_size for a in batch_arms], [a.spread_pp for a in batch_arms])
        return (", ".join(f"b = {a.config.batch_size}: {a.spread_pp:.1f} pp" for a in batch_arms)
                + f"; rank correlation {'n/a' if rho is None else f'{rho:+.2f}'} "
                  f"({where(batch, ('arch', 'epochs', 'lr'))})"), rises_with_batch(rho)

    return [
        _row("training much longer leaves the spread", "≈ 26 pp after 5,000 epochs vs 26.5 pp at 300", long,
             len(long.arms) >= 2, longer),
        _row("a larger learning rate with L2 erases the memory", "≈ 0.3 pp at η = λ = 1e-2 (T_L2 = 9.36)", l2,
             bool(base and both), large_rate_l2),
        _row("at a fixed learning rate, more L2 (larger T_L2) leaves a smaller spread",
             "the paper's reading: T_L2 is the clock of explicit L2", l2, bool(full), more_l2),
        _row("it is the L2 term, not the larger learning rate, that erases it",
             "attributed to T_L2; no λ = 0 run at η = 1e-2 reported", l2, bool(base and lr_only and both),
             rate_or_l2),
        _row("larger batches forget more slowly (larger spread)", "qualitative (secondary)", batch,
             len(batch.arms) >= 3, batches),
    ]




def matches_quoted(value: float, quoted: str) -> str:
    """``yes`` when ``value`` rounded to two significant digits equals the paper's quoted figure (e.g. 7.3e-4)."""
    return "yes" if float(f"{value:.2g}") == float(quoted) else "no"


def scale_invariant(losses: Sequence[float], cosines: Sequence[float]) -> bool:
    """Whether a loss is invariant to scaling one weight: every ``|L(cW) - L(W)|`` (``losses[0]`` at c = 1 or
    any reference c) and every ``|cos(grad L, W)|`` below ``INVARIANCE_TOL`` (float64)."""
    return all(abs(v - losses[0]) < INVARIANCE_TOL for v in losses) and all(abs(c) < INVARIANCE_TOL for c in cosines)


def question_claims(t_sgd: float, t_long: float, losses: Sequence[float], cosines: Sequence[float],
                    logit_error: float, scale: str, width: int) -> list[Claim]:
    """The ``question`` chapter's rows: the paper's two quoted T_SGD values recomputed (:func:`matches_quoted`),
    BatchNorm scale invariance (:func:`scale_invariant`) and sigma_w scaling the initial logits (relative
    deviation below ``LOGIT_FLOOR``, float32)."""
    invariant = scale_invariant(losses, cosines)
    return [
        Claim("T_SGD of the headline run (η = 1e-3, b = 128, 300 epochs of 40,000 images)", "7.3e-4",
              f"{t_sgd:.3g} (arithmetic, drop_last)", matches_quoted(t_sgd, "7.3e-4")),
        Claim("T_SGD after 5,000 epochs", "1.2e-2", f"{t_long:.3g} (arithmetic)", matches_quoted(t_long, "1.2e-2")),
        Claim("BatchNorm makes the loss scale-invariant in each conv weight", "mechanism (fibook's reading)",
              "L(cW) = L(W) to 1e-9, |cos(∇L, W)| < 1e-9 for c = 0.1, 1, 10 (float64, width-4 ResNet-9)"
              if invariant else "L(cW) or cos(∇L, W) moved with c (float64, width-4 ResNet-9)",
              "yes" if invariant else "no"),
        Claim("at initialization σ_w only scales the logits", "mechanism (fibook's reading)",
              f"logits(σ_w) = σ_w · logits(1) to {below(logit_error, LOGIT_FLOOR)} relative with BatchNorm ε "
              f"negligible (float32, {scale} ResNet-9 w{width}, training-mode BatchNorm)",
              "yes" if logit_error < LOGIT_FLOOR else "no"),
    ]


def above_seed_noise(seed_spreads: Sequence[float], seed_std_pp: Sequence[float]) -> bool:
    """Whether the mean over seeds of the spread exceeds ``NOISE_MULTIPLE`` times the largest per-sigma_w
    standard deviation over seeds."""
    return float(np.mean(seed_spreads)) > NOISE_MULTIPLE * max(seed_std_pp)


def sgd_remembers_claims(arm: Arm, noise: Finished, scale: str) -> list[Claim]:
    """The ``sgd_remembers`` chapter's rows: spread at least ``LARGE_SPREAD_PP``, every sigma_w interpolating,
    radial memory above ``RADIAL_KEPT``, and the spread against seed noise (:func:`above_seed_noise`, on the
    ``seed_noise`` experiment's one arm once it has finished)."""
    where = setting(arm.config, scale, show=("arch", "epochs", "lr"))
    rows = [
        Claim("low-LR SGD keeps a large test-accuracy spread across σ_w", "26.5 pp (CIFAR-10, ResNet-9, 300 ep)",
              f"{arm.spread_pp:.1f} pp ({where})", "qualitatively" if arm.spread_pp >= LARGE_SPREAD_PP else "no"),
        Claim("every σ_w interpolates", "yes (≥ 99.5 % train acc)",
              f"{sum(arm.interpolated)} of {len(arm.sigmas)} σ_w reach 99.5 %",
              "yes" if all(arm.interpolated) else "no: not every σ_w interpolates at this budget"),
        Claim("the final weight norm stays tied to σ_w under SGD", "qualitative (secondary)",
              f"radial memory R = {arm.radial_memory:.2f}", "yes" if arm.radial_memory > RADIAL_KEPT else "no"),
    ]
    claim = ("the spread is far larger than seed-to-seed variation (verdict: mean spread > 3 × the largest "
             "per-σ_w seed std)")
    if not noise.arms:
        return rows + [Claim(claim, "seed noise not reported", f"not finished ({noise.progress})", "not tested yet")]
    (seeds,) = noise.arms
    per_seed, seed_std = seed_spreads(seeds), seed_std_pp(seeds)
    return rows + [Claim(claim, "seed noise not reported",
                         f"spread {np.mean(list(per_seed.values())):.1f} pp (mean of {len(per_seed)} seeds) vs "
                         f"per-σ_w seed std ≤ {max(seed_std.values()):.2f} pp (quick grid)",
                         "yes" if above_seed_noise(list(per_seed.values()), list(seed_std.values())) else "no")]


def deep_nets_fail(deep: Sequence[Arm]) -> str:
    """``qualitatively`` when no deeper ResNet interpolates at the largest sigma_w of its grid."""
    if all(not a.interpolated[-1] for a in deep):
        return "qualitatively"
    return "no: every deep net interpolates at the largest σ_w here"


def depth_claims(depth: Finished, scale: str) -> list[Claim]:
    """The ``depth`` chapter's row: deeper ResNets failing to interpolate at large sigma_w
    (:func:`deep_nets_fail`), arms listed from the shallowest."""
    arms = sorted(depth.arms, key=lambda a: int(a.config.arch.removeprefix("resnet")))
    deep = [a for a in arms if a.config.arch != "resnet9"]
    claim, paper = "deep ResNets at large σ_w fail to interpolate", "ResNet-56/110 (secondary)"
    if not deep:
        return [Claim(claim, paper, f"not finished ({depth.progress})", "not tested yet")]
    ours = "; ".join(f"{a.config.arch}: interpolates at {sum(a.interpolated)} of {len(a.sigmas)} σ_w"
                     for a in arms)
    return [Claim(claim, paper, f"{ours} ({setting(arms[0].config, scale, show=('epochs', 'lr'))})",
                  deep_nets_fail(deep))]


def falls_with_clock(rho: float | None) -> str:
    """``qualitatively`` at rho <= ``CLOCK_RHO``, ``weakly`` between it and 0, ``no`` from 0 up; ``not tested
    yet`` without a correlation (fewer than three arms)."""
    if rho is None:
        return "not tested yet"
    return "qualitatively" if rho <= CLOCK_RHO else "weakly (−0.5 < ρ < 0)" if rho < 0 else "no"


CLOCK_CLAIMS = (
    ("T_SGD", "larger batches (smaller T_SGD) forget more slowly; 26.5 pp at 7.3e-4 and ≈26 pp at 1.2e-2 "
              "(secondary)"),
    ("T_L2", "≈ 0.3 pp at T_L2 = 9.36 (secondary)"),
)


def clock_claims(points: dict[str, Sequence[tuple[float, float]]], where: str) -> list[Claim]:
    """The ``clocks`` chapter's rows: for T_SGD and T_L2, the rank correlation of spread with the clock over the
    arms timed on it (``points[clock]``: (clock value, spread pp) per arm; :func:`falls_with_clock`)."""
    rows = []
    for clock, paper in CLOCK_CLAIMS:
        pts = points.get(clock, [])
        rho = rank_correlation(*zip(*pts, strict=True)) if pts else None
        ours = (f"{len(pts)} arms; rank correlation of spread with {clock}: "
                + ("n/a (fewer than 3 arms)" if rho is None else f"{rho:+.2f}"))
        rows.append(Claim(f"a larger {clock} leaves a smaller spread", paper, f"{ours} ({where})",
                          falls_with_clock(rho)))
    return rows
