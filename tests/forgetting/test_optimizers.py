"""The optimizers: Muon's orthogonalization and its agreement with torch.optim.Muon, weight-decay semantics."""

import pytest
import torch

from fibook.forgetting.models import init_sigma_w_, resnet9, weight_layers, weight_norms
from fibook.forgetting.optimizers import (
    OPTIMIZERS,
    Muon,
    OptimizerSpec,
    as_matrices,
    make_optimizer,
    muon_momentum,
    muon_scale,
    muon_update,
    newton_schulz,
)


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


def test_muon_momentum_by_hand():
    buf = torch.tensor([1.0, 2.0, -4.0], dtype=torch.float64)
    grad = torch.tensor([3.0, -1.0, 0.5], dtype=torch.float64)
    before = buf.clone(), grad.clone()
    new_buf, update = muon_momentum(buf, grad, beta=0.75, nesterov=True)
    assert new_buf.tolist() == [0.75 * 1 + 0.25 * 3, 0.75 * 2 + 0.25 * -1, 0.75 * -4 + 0.25 * 0.5]  # 1.5, 1.25, -2.875
    assert update.tolist() == [0.25 * 3 + 0.75 * 1.5, 0.25 * -1 + 0.75 * 1.25, 0.25 * 0.5 + 0.75 * -2.875]
    plain_buf, plain = muon_momentum(buf, grad, beta=0.75, nesterov=False)
    assert torch.equal(plain_buf, new_buf) and torch.equal(plain, new_buf)  # without Nesterov: the buffer itself
    assert torch.equal(buf, before[0]) and torch.equal(grad, before[1])  # inputs untouched
    g = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    zero = torch.zeros_like(g)
    first_buf, first = muon_momentum(zero, g, beta=0.95)  # the first step from an empty buffer
    assert torch.allclose(first_buf, 0.05 * g, rtol=1e-15) and torch.allclose(first, (0.05 + 0.95 * 0.05) * g)


def test_as_matrices_and_scale_of_linear_conv_and_population_weights():
    linear = torch.randn(10, 20)
    assert as_matrices(linear).shape == (10, 20) and torch.equal(as_matrices(linear), linear)
    conv = torch.randn(16, 8, 3, 3)
    assert torch.equal(as_matrices(conv), conv.reshape(16, 72)) and torch.equal(as_matrices(conv)[3], conv[3].flatten())
    stacked = torch.randn(3 * 16, 8, 3, 3)  # three models' kernels along the output dimension
    matrices = as_matrices(stacked, population=3)
    assert matrices.shape == (3, 16, 72)
    for k in range(3):
        assert torch.equal(matrices[k], stacked[16 * k:16 * (k + 1)].reshape(16, 72))
    assert muon_scale(16, 72) == 1.0 and muon_scale(72, 72) == 1.0 and muon_scale(72, 16) == 4.5 ** 0.5


def reference_newton_schulz(m: torch.Tensor, steps: int = 5) -> torch.Tensor:
    """The quintic iteration written out plainly, one matrix, in the input's precision."""
    x = m.T if m.shape[0] > m.shape[1] else m
    x = x / torch.linalg.matrix_norm(x)
    for _ in range(steps):
        a = x @ x.T
        x = 3.4445 * x + (-4.7750 * a + 2.0315 * (a @ a)) @ x
    return x.T if m.shape[0] > m.shape[1] else x


@pytest.mark.parametrize("shape", [(32, 16, 3, 3), (64, 4, 3, 3), (40, 10)])
@pytest.mark.parametrize("nesterov", [True, False])
def test_muon_update_against_an_independent_computation(shape, nesterov):
    gen = torch.Generator().manual_seed(4)
    w, g, buf = (torch.randn(shape, dtype=torch.float64, generator=gen) for _ in range(3))
    before = w.clone(), g.clone(), buf.clone()
    lr, beta, wd = 0.02, 0.9, 0.1
    new_w, new_buf = muon_update(w, g, buf, lr=lr, momentum=beta, nesterov=nesterov, weight_decay=wd,
                                 ns_dtype=None)
    assert all(torch.equal(a, b) for a, b in zip((w, g, buf), before, strict=True))  # a pure function
    expected_buf = beta * buf + (1 - beta) * g
    assert torch.allclose(new_buf, expected_buf, rtol=1e-14, atol=1e-15)
    u = ((1 - beta) * g + beta * expected_buf if nesterov else expected_buf).reshape(shape[0], -1)
    rows, cols = u.shape
    scale = max(1.0, rows / cols) ** 0.5  # 1 for the wide 32 x 144 kernel, 4/3 for 64 x 36, 2 for 40 x 10
    expected = (1 - lr * wd) * w - lr * scale * reference_newton_schulz(u).reshape(shape)
    assert torch.allclose(new_w, expected, rtol=1e-12, atol=1e-14)
    direction = ((1 - lr * wd) * w - new_w).reshape(rows, cols) / (lr * scale)
    s = torch.linalg.svdvals(direction)  # the quintic's known spread around 1 (0.68 to 1.14 in float64)
    assert s.min() > 0.6 and s.max() < 1.2, (s.min().item(), s.max().item())
    left, _, right = torch.linalg.svd(u, full_matrices=False)
    polar = left @ right  # the exact orthogonal factor U V^T the iteration approximates
    assert (direction * polar).sum() / (direction.norm() * polar.norm()) > 0.97


def test_a_population_update_is_each_models_own_update():
    gen = torch.Generator().manual_seed(6)
    w, g, buf = (torch.randn(3 * 16, 8, 3, 3, dtype=torch.float64, generator=gen) for _ in range(3))
    options = dict(lr=0.02, momentum=0.95, weight_decay=0.01, ns_dtype=None)
    new_w, new_buf = muon_update(w, g, buf, population=3, **options)
    for k in range(3):
        part = slice(16 * k, 16 * (k + 1))
        own_w, own_buf = muon_update(w[part], g[part], buf[part], **options)
        assert torch.allclose(new_w[part], own_w, rtol=1e-12, atol=1e-14)
        assert torch.equal(new_buf[part], own_buf)


def test_muon_steps_are_muon_update_applied_in_place():
    gen = torch.Generator().manual_seed(7)
    params = [torch.nn.Parameter(torch.randn(s, generator=gen)) for s in ((24, 8), (16, 8, 3, 3))]
    weights = [p.detach().clone() for p in params]
    bufs = [torch.zeros_like(w) for w in weights]
    opt = Muon(params, lr=0.02, momentum=0.9, weight_decay=0.05)  # bf16 Newton-Schulz, as in training
    for _ in range(3):
        for i, p in enumerate(params):
            p.grad = torch.randn(p.shape, generator=gen)
            weights[i], bufs[i] = muon_update(weights[i], p.grad, bufs[i], lr=0.02, momentum=0.9, weight_decay=0.05)
        opt.step()
    for p, w, b in zip(params, weights, bufs, strict=True):
        assert torch.equal(p.detach(), w) and torch.equal(opt.state[p]["momentum_buffer"], b)


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
