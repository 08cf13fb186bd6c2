"""Architectures and the sigma_w initialization."""

import math

import pytest
import torch
from torch import nn

from fibook.forgetting.models import (
    build_model,
    cifar_resnet,
    fan_in,
    init_sigma_w_,
    resnet9,
    weight_layers,
    weight_norms,
)


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def test_resnet9_matches_myrtle_shape_and_size():
    model = resnet9(64)
    assert 6.55e6 < n_params(model) < 6.60e6  # 6.57M in Page (2018)
    convs = [m for _, m in weight_layers(model) if isinstance(m, nn.Conv2d)]
    assert [c.out_channels for c in convs] == [64, 128, 128, 128, 256, 512, 512, 512]
    assert all(c.bias is None for c in convs)
    head = weight_layers(model)[-1][1]
    assert isinstance(head, nn.Linear) and head.bias is None and head.in_features == 512
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    assert resnet9(16, in_channels=1)(torch.randn(2, 1, 28, 28)).shape == (2, 10)


@pytest.mark.parametrize("depth,millions", [(20, 0.27), (56, 0.85), (110, 1.73)])
def test_cifar_resnets_have_he_et_al_sizes(depth, millions):
    model = cifar_resnet(depth)
    assert abs(n_params(model) / 1e6 - millions) < 0.01
    convs = [m for _, m in weight_layers(model) if isinstance(m, nn.Conv2d)]
    assert len(convs) == depth - 1  # 6n+1 convs, then the linear head
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_bad_architectures_are_explained():
    with pytest.raises(ValueError, match="6n\\+2"):
        cifar_resnet(51)
    with pytest.raises(ValueError, match="unknown architecture 'vgg'; choose resnet9, or resnetD"):
        build_model("vgg", 16)
    with pytest.raises(ValueError, match="width must be a positive"):
        build_model("resnet9", 0)


def test_init_std_per_layer_matches_sigma_over_sqrt_fan_in():
    model = resnet9(64)
    init_sigma_w_(model, 0.7, seed=3)
    for name, layer in weight_layers(model):
        w = layer.weight.double()
        if w.numel() < 50_000:
            continue
        target = 0.7 / math.sqrt(fan_in(w))
        assert abs(w.std().item() / target - 1) < 0.02, name
        assert abs(w.mean().item()) < 5 * target / math.sqrt(w.numel()), name


def test_common_random_numbers_scale_weights_exactly():
    a, b = resnet9(8), resnet9(8)
    init_sigma_w_(a, 1.0, seed=5)
    init_sigma_w_(b, 2.5, seed=5)
    na, nb = weight_norms(a), weight_norms(b)
    for name in na:
        assert nb[name] / na[name] == pytest.approx(2.5, rel=1e-6)
    other = resnet9(8)
    init_sigma_w_(other, 1.0, seed=6)
    assert not torch.equal(weight_layers(other)[0][1].weight, weight_layers(a)[0][1].weight)


def test_init_resets_batchnorm_and_biases():
    model = cifar_resnet(20)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight)
            m.running_mean.fill_(3.0)
    init_sigma_w_(model, 1.0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert torch.all(m.weight == 1) and torch.all(m.bias == 0) and torch.all(m.running_mean == 0)
    assert torch.all(weight_layers(model)[-1][1].bias == 0)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1"])
def test_bad_sigma_w_is_rejected(bad):
    with pytest.raises(ValueError, match="sigma_w must be a finite number > 0"):
        init_sigma_w_(resnet9(4), bad)


def test_weight_norm_total_is_root_sum_of_squares():
    model = resnet9(4)
    norms = weight_norms(model)
    total = math.sqrt(sum(float(m.weight.detach().double().pow(2).sum()) for _, m in weight_layers(model)))
    assert norms["total"] == pytest.approx(total, rel=1e-12)
