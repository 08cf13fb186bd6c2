"""The optimizers: Muon's orthogonalization and its agreement with torch.optim.Muon, weight-decay semantics."""

import pytest
import torch

from fibook.forgetting.models import init_sigma_w_, resnet9, weight_layers, weight_norms
from fibook.forgetting.optimizers import OPTIMIZERS, Muon, OptimizerSpec, make_optimizer, newton_schulz


@pytest.mark.parametrize("shape", [(128, 576), (512, 4608), (300, 40)])
def test_newton_schulz_singular_values_near_one(shape):
    g = torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    o = newton_schulz(g, dtype=None)
    s = torch.linalg.svdvals(o)
    assert s.min() > 0.6 and s.max() < 1.2, (s.min().item(), s.max().item())
    u, _, vh = torch.linalg.svd(g, full_matrices=False)
    polar = u @ vh  # the exact orthogonal factor U V^T
    cos = (o * polar).sum() / (o.norm() * polar.norm())
    assert cos > 0.97  # not exactly U V^T: the quintic trades accuracy for speed


def test_newton_schulz_rejects_non_matrices():
    with pytest.raises(ValueError, match="a matrix or a \\(K, m, n\\) stack"):
        newton_schulz(torch.randn(2, 3, 4, 5))


def test_batched_newton_schulz_equals_one_matrix_at_a_time():
    g = torch.randn(3, 20, 50, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    batched = newton_schulz(g, dtype=None)
    for k in range(3):
        assert torch.allclose(batched[k], newton_schulz(g[k], dtype=None), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("nesterov,wd", [(True, 0.0), (False, 0.1)])
def test_muon_matches_torch_muon_on_2d_parameters(nesterov, wd):
    gen = torch.Generator().manual_seed(1)
    shapes = [(64, 32), (16, 48)]
    ours = [torch.nn.Parameter(torch.randn(s, generator=gen)) for s in shapes]
    ref = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    start = [p.detach().clone() for p in ours]
    opt_a = Muon(ours, lr=0.02, momentum=0.95, nesterov=nesterov, weight_decay=wd)
    opt_b = torch.optim.Muon(ref, lr=0.02, momentum=0.95, nesterov=nesterov, weight_decay=wd)
    for _ in range(5):
        for a, b in zip(ours, ref, strict=True):
            g = torch.randn(a.shape, generator=gen)
            a.grad, b.grad = g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
    for a, b, a0 in zip(ours, ref, start, strict=True):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)
        assert (a.detach() - a0).norm() > 0.05  # the parameters did move


def muon_steps(sigma_w, steps=3):
    torch.manual_seed(0)
    model = resnet9(8, in_channels=1)
    init_sigma_w_(model, sigma_w, seed=0)
    opt = make_optimizer("muon", model, lr=0.02)
    x = torch.randn(16, 1, 28, 28)
    y = torch.arange(16) % 10
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return weight_norms(model)


def test_muon_does_not_renormalize_weights():
    small, large = muon_steps(0.1), muon_steps(2.5)
    hidden = list(small)[1:-2]  # Muon's layers: not the first conv, not the head, not the total
    for name in hidden:
        assert large[name] / small[name] > 5, name  # 25x at init; a renormalizing Muon would force 1


def test_muon_groups_hidden_convs_and_adamw_for_the_rest():
    model = resnet9(4)
    opt = make_optimizer("muon", model, lr=0.02, weight_decay=0.01, adam_lr=1e-3)
    muon, adamw = opt.optimizers
    layers = weight_layers(model)
    muon_ids = {id(p) for g in muon.param_groups for p in g["params"]}
    assert muon_ids == {id(m.weight) for _, m in layers[1:-1]}
    assert isinstance(adamw, torch.optim.AdamW) and adamw.param_groups[0]["lr"] == 1e-3
    n_adamw = sum(len(g["params"]) for g in adamw.param_groups)
    assert len(muon_ids) + n_adamw == len(list(model.parameters()))


def test_sgd_weight_decay_is_coupled_l2_on_weights_only():
    torch.manual_seed(0)
    model = resnet9(4, in_channels=1)
    init_sigma_w_(model, 1.0)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.fill_(1.5)  # a non-zero BN gamma would shrink if it were decayed
    before = [p.detach().clone() for p in model.parameters()]
    opt = make_optimizer("sgd", model, lr=0.1, weight_decay=0.5)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(torch.randn(8, 1, 28, 28)), torch.arange(8)).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    opt.step()
    weights = {id(m.weight) for _, m in weight_layers(model)}
    for p, w0, g in zip(model.parameters(), before, grads, strict=True):
        decay = 0.5 if id(p) in weights else 0.0
        assert torch.allclose(p.detach(), w0 - 0.1 * (g + decay * w0), atol=1e-6)


def test_adamw_weight_decay_is_decoupled():
    p = torch.nn.Parameter(torch.ones(3, 3))
    model = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False))
    model[0].weight = p
    opt = make_optimizer("adamw", model, lr=0.1, weight_decay=0.2)
    p.grad = torch.zeros(3, 3)
    opt.step()  # zero gradient: only the decoupled decay acts
    assert torch.allclose(p.detach(), torch.full((3, 3), 1 - 0.1 * 0.2))


def test_bad_optimizer_arguments_are_explained():
    model = resnet9(4)
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'; choose one of: sgd, msgd, adam, adamw, muon"):
        make_optimizer("lamb", model, lr=0.1)
    with pytest.raises(ValueError, match="learning rate must be a finite number > 0"):
        make_optimizer("sgd", model, lr=0.0)
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        make_optimizer("adamw", model, lr=0.1, weight_decay=-1)
    with pytest.raises(ValueError, match="bad option.* momentum for optimizer 'adam'; it takes: betas, eps"):
        make_optimizer("adam", model, lr=0.1, momentum=0.9)
    assert set(OPTIMIZERS) == {"sgd", "msgd", "adam", "adamw", "muon"}


def test_the_registry_names_each_optimizers_clock_and_defaults():
    assert {n: s.clock for n, s in OPTIMIZERS.items()} == {"sgd": "T_SGD", "msgd": "T_SGD", "adam": "T_adapt",
                                                           "adamw": "T_adapt", "muon": "T_adapt"}
    assert OPTIMIZERS["msgd"].defaults["momentum"] == 0.9 and OPTIMIZERS["sgd"].defaults["momentum"] == 0.0
    assert [n for n, s in OPTIMIZERS.items() if s.needs_population] == ["muon"]
    with pytest.raises(ValueError, match="optimizer 'lion': unknown clock 'T_lion'; choose one of: T_SGD"):
        OptimizerSpec("lion", "Lion", "T_lion", OPTIMIZERS["adam"].build)
    opt = make_optimizer("msgd", resnet9(4), lr=0.1)  # the default reaches the method
    assert opt.param_groups[0]["momentum"] == 0.9
    assert make_optimizer("msgd", resnet9(4), lr=0.1, momentum=0.5).param_groups[0]["momentum"] == 0.5


@pytest.mark.parametrize("name,options", [("sgd", {"momentum": 1.0}), ("msgd", {"momentum": 2}),
                                          ("msgd", {"momentum": -0.1}), ("muon", {"momentum": 1.5}),
                                          ("adam", {"betas": (0.9, 1.0)}), ("adamw", {"betas": (-0.1, 0.999)})])
def test_momentum_outside_zero_one_is_refused(name, options):
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\), got"):
        make_optimizer(name, resnet9(4), lr=0.1, **options)
    edge = {k: (0.0, 0.999) if k == "betas" else 0.999 for k in options}
    make_optimizer(name, resnet9(4), lr=0.1, **edge)  # just inside the range is accepted
