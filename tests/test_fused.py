"""A fused population computes and trains exactly like its models one at a time."""

import dataclasses

import pytest
import torch

from fibook.data import DEBIAN_FASHION_MNIST
from fibook.forgetting.fused import Single, fuse
from fibook.forgetting.models import build_model, init_sigma_w_, member_weight_norms, weight_norms
from fibook.forgetting.train import TrainConfig, check_population, train_population


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


@pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(), reason="Fashion-MNIST not installed")
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
        for key in ("train_loss", "val_loss", "test_acc", "weight_norm"):
            assert b.history[key] == pytest.approx(a.history[key], rel=1e-6), key
        assert b.history["layer_norms"][-1] == pytest.approx(a.history["layer_norms"][-1], rel=1e-6)
    assert separate[0].history["train_loss"] != separate[1].history["train_loss"]


def test_population_members_may_differ_only_in_sigma_and_seed():
    with pytest.raises(ValueError, match="may differ only in sigma_w, seed; these differ: lr"):
        check_population([TrainConfig(lr=0.1), TrainConfig(lr=0.2, sigma_w=2.0)])
