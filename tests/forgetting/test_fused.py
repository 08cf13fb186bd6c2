"""A fused population computes and trains exactly like its models one at a time."""

import dataclasses

import pytest
import torch

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.fused import Single, fuse
from fibook.forgetting.models import (
    build_model,
    init_sigma_w_,
    member_init_geometry,
    member_weight_norms,
    weight_layers,
    weight_norms,
    weight_snapshot,
)
from fibook.forgetting.train import check_population, train_population

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("arch", ["resnet9", "resnet20"])
def test_fused_forward_and_gradients_equal_per_model(arch):
    models = [init_sigma_w_(build_model(arch, 4, in_channels=1).double(), s, seed=i)
              for i, s in enumerate((0.3, 1.0, 2.0))]
    net = fuse(models)
    xs = [torch.randn(6, 1, 28, 28, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
          for i in range(3)]
    out = net(torch.cat(xs, dim=1))
    out.sum().backward()
    for k, (m, x) in enumerate(zip(models, xs, strict=True)):
        ref = Single(m)(x)
        assert torch.allclose(out[:, k], ref[:, 0], rtol=1e-10, atol=1e-12)
        ref.sum().backward()
    fused_norms = member_weight_norms(net, 3)
    for k, m in enumerate(models):
        assert fused_norms[k] == pytest.approx(weight_norms(m), rel=1e-12)
    first_conv = next(mod for mod in net.modules() if isinstance(mod, torch.nn.Conv2d))
    per_model = first_conv.weight.grad.reshape(3, -1)
    for k, m in enumerate(models):
        ref_conv = next(mod for mod in m.modules() if isinstance(mod, torch.nn.Conv2d))
        assert torch.allclose(per_model[k], ref_conv.weight.grad.reshape(-1), rtol=1e-9, atol=1e-12)


@pytest.mark.fmnist
@pytest.mark.parametrize("optimizer,lr,options", [("msgd", 0.05, {}), ("adamw", 1e-3, {}),
                                                  ("muon", 0.02, {"ns_dtype": "float64"})])
def test_fused_training_equals_one_at_a_time(optimizer, lr, options):
    base = dict(width=4, epochs=2, n_train=256, n_val=128, n_test=128, batch_size=64, optimizer=optimizer, lr=lr,
                weight_decay=1e-3, precision="fp64", options=options)
    configs = [TrainConfig(sigma_w=s, seed=i, **base) for i, s in enumerate((0.3, 1.0, 2.0))]
    separate = train_population(configs, "cpu")
    together = train_population([dataclasses.replace(c, fused=True) for c in configs], "cpu")
    for a, b in zip(separate, together, strict=True):
        assert a.status == b.status == "ok"
        for key in ("train_loss", "val_loss", "test_acc", "weight_norm", "init_distance", "init_cosine"):
            assert b.history[key] == pytest.approx(a.history[key], rel=1e-6), key
        for key in ("layer_norms", "layer_distance", "layer_cosine"):
            assert b.history[key][-1] == pytest.approx(a.history[key][-1], rel=1e-6), key
    assert separate[0].history["train_loss"] != separate[1].history["train_loss"]


def test_init_geometry_of_a_fused_population_matches_each_model_computed_directly():
    models = [init_sigma_w_(build_model("resnet9", 4, in_channels=1).double(), s, seed=i)
              for i, s in enumerate((0.5, 2.0))]
    net = fuse(models)
    init = weight_snapshot(net)
    starts = [[w.clone() for w in weight_snapshot(m)] for m in models]
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for _, layer in weight_layers(net):
            layer.weight.mul_(0.8).add_(0.1 * torch.randn(layer.weight.shape, generator=gen, dtype=torch.float64))
        moved = [fused_weights.reshape(2, -1) for fused_weights in weight_snapshot(net)]
    rows = member_init_geometry(net, init, 2)
    for k, start in enumerate(starts):
        now = [m[k] for m in moved]
        w0 = [s.reshape(-1) for s in start]
        assert rows[k]["distance"] == pytest.approx(
            [float((a - b).norm()) for a, b in zip(now, w0, strict=True)], rel=1e-12)
        assert rows[k]["cosine"] == pytest.approx(
            [float(a @ b / (a.norm() * b.norm())) for a, b in zip(now, w0, strict=True)], rel=1e-12)
        flat_now, flat_0 = torch.cat(now), torch.cat(w0)
        assert rows[k]["total_distance"] == pytest.approx(float((flat_now - flat_0).norm()), rel=1e-12)
        assert rows[k]["total_cosine"] == pytest.approx(
            float(flat_now @ flat_0 / (flat_now.norm() * flat_0.norm())), rel=1e-12)
    assert all(c < 1 for c in rows[0]["cosine"])
    with pytest.raises(ValueError, match="snapshot has 1 weights, the model 9"):
        member_init_geometry(net, init[:1], 2)


def test_population_members_may_differ_only_in_sigma_and_seed():
    with pytest.raises(ValueError, match="may differ only in sigma_w, seed; these differ: lr"):
        check_population([TrainConfig(lr=0.1), TrainConfig(lr=0.2, sigma_w=2.0)])
