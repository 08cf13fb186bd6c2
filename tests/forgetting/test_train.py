"""The trainer: determinism, what it records, divergence, and the scale-invariance identity it rests on."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from fibook.forgetting import experiments, metrics, splits
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.models import init_sigma_w_, resnet9, weight_layers
from fibook.forgetting.train import train
from fibook.presets import get_preset

pytestmark = pytest.mark.slow


def smoke_config(**kw):
    s = get_preset("smoke").forgetting
    base = dict(dataset=s.data.dataset, width=s.width, epochs=s.epochs, n_train=s.data.n_train,
                n_val=s.data.n_val, n_test=s.data.n_test, lr=0.05, precision=s.precision)
    return TrainConfig(**{**base, **kw})


@pytest.mark.fmnist
def test_same_config_same_numbers_and_every_quantity_recorded():
    a, b = train(smoke_config()), train(smoke_config())
    assert a.status == "ok" and a.history == b.history and a.summary == b.summary
    h = a.history
    e = a.config.epochs
    assert h["epoch"] == list(range(e + 1))
    for key in ("train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc", "weight_norm"):
        assert len(h[key]) == e + 1 and all(math.isfinite(v) for v in h[key]), key
    assert len(a.layer_names) == 9 and all(len(row) == 9 for row in h["layer_norms"])  # 8 convs + head
    assert h["init_distance"][0] == 0 and h["init_cosine"][0] == pytest.approx(1, abs=1e-12)
    assert h["layer_distance"][0] == [0] * 9 and h["layer_cosine"][0] == pytest.approx([1] * 9, abs=1e-12)
    for t in range(1, e + 1):  # ||W_t - W_0||^2 = ||W_t||^2 + ||W_0||^2 - 2 ||W_t|| ||W_0|| cos, layer by layer
        norms, norms0 = h["layer_norms"][t], h["layer_norms"][0]
        assert [d * d for d in h["layer_distance"][t]] == pytest.approx(
            [n * n + m * m - 2 * n * m * c for n, m, c in zip(norms, norms0, h["layer_cosine"][t], strict=True)],
            rel=1e-6)
        assert h["init_distance"][t] ** 2 == pytest.approx(sum(d * d for d in h["layer_distance"][t]), rel=1e-9)
        assert 0 < h["init_distance"][t] and h["init_cosine"][t] < 1
    steps = e * (a.config.n_train // a.config.batch_size)
    assert h["steps"][-1] == steps
    assert a.summary.clocks == pytest.approx(metrics.forgetting_clocks([0.05] * steps, 128, 0.0))
    assert a.summary.selected_epoch == metrics.selected_epoch(h["val_loss"])
    c = train(smoke_config(seed=1))
    assert c.history["train_loss"] != a.history["train_loss"]
    planned_steps, planned = experiments.planned_clocks(a.config)  # what the question chapter tabulates
    assert planned_steps == a.summary.steps and planned == a.summary.clocks


def test_planned_clocks_follow_the_schedule_and_the_whole_split():
    config = TrainConfig(n_train=None, batch_size=100, epochs=2, lr=0.1, schedule="cosine", weight_decay=0.01)
    steps, clocks = experiments.planned_clocks(config)
    assert steps == 2 * 50_000 // 100 == 2 * splits.train_split_size("fashion_mnist") // 100
    eta = [0.1 * 0.5 * (1 + math.cos(math.pi * k / steps)) for k in range(steps)]
    assert clocks == pytest.approx({"T_SGD": sum(e * e for e in eta) / 100, "T_L2": 0.01 * sum(eta),
                                    "T_adapt": sum(eta)})


@pytest.mark.fmnist
def test_smoke_run_learns_in_fp32_and_bf16():
    fp32 = train(smoke_config(epochs=3, lr=0.1, sigma_w=1.0))
    bf16 = train(dataclasses.replace(fp32.config, precision="bf16"))
    for run in (fp32, bf16):
        assert run.history["train_acc"][-1] > 0.4 > run.history["train_acc"][0]
    assert bf16.history["weight_norm"][0] == fp32.history["weight_norm"][0]
    assert bf16.history["train_loss"][1] == pytest.approx(fp32.history["train_loss"][1], rel=0.05)


@pytest.mark.fmnist
def test_divergence_is_recorded_not_raised():
    result = train(smoke_config(sigma_w=50.0, lr=10.0))
    assert result.status == "diverged" and result.diverged_epoch == 1
    assert result.history["epoch"] == [0]
    assert result.summary.selected_epoch is None
    steps = result.config.n_train // result.config.batch_size  # the one epoch it diverged in was taken
    assert result.summary.steps == steps and result.history["steps"] == [0]
    assert result.summary.clocks == pytest.approx(metrics.forgetting_clocks([10.0] * steps, 128, 0.0))


@pytest.mark.fmnist
def test_training_pins_one_cpu_thread_and_restores_the_callers_count():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        two = train(smoke_config(epochs=1))
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        assert train(smoke_config(epochs=1)).history == two.history
    finally:
        torch.set_num_threads(before)


def test_plain_sgd_grows_bn_weights_by_eta_squared_grad_squared():
    """Scale invariance (BN eps -> 0, float64): <grad, W> = 0, so one SGD step gives
    ||W_{k+1}||^2 - ||W_k||^2 = eta^2 ||g_k||^2 for every conv feeding a BatchNorm."""
    torch.manual_seed(0)
    model = resnet9(4, in_channels=1).double()
    init_sigma_w_(model, 0.8, seed=0)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eps = 1e-30  # torch requires eps > 0 in training mode; this is 0 next to any variance
    x, y = torch.randn(32, 1, 28, 28, dtype=torch.float64), torch.arange(32) % 10
    F.cross_entropy(model(x), y).backward()
    convs = [m for _, m in weight_layers(model)][:-1]
    before = [(m.weight.detach().clone(), m.weight.grad.clone()) for m in convs]
    eta = 0.3
    with torch.no_grad():
        for m in convs:
            m.weight -= eta * m.weight.grad
    for m, (w0, g) in zip(convs, before, strict=True):
        assert abs(float((g * w0).sum())) < 1e-10 * float(g.norm() * w0.norm())
        growth = float(m.weight.detach().pow(2).sum() - w0.pow(2).sum())
        assert growth == pytest.approx(eta**2 * float(g.pow(2).sum()), rel=1e-9)


def test_config_rejects_unknown_choices():
    with pytest.raises(ValueError, match="unknown schedule 'step'; choose one of: constant, cosine"):
        TrainConfig(schedule="step")
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        TrainConfig(precision="fp16")


@pytest.mark.parametrize("field,value,message", [
    ("epochs", 1.5, "epochs must be a whole number >= 1, got 1.5"),
    ("batch_size", 64.0, "batch_size must be a whole number >= 1, got 64.0"),
    ("width", True, "width must be a whole number >= 1, got True"),
    ("seed", -1, "seed must be a whole number >= 0, got -1"),
    ("n_train", 0, r"n_train must be a whole number >= 1 or None \(the whole split\), got 0"),
    ("sigma_w", 0.0, "sigma_w must be a finite number > 0, got 0.0"),
    ("lr", float("nan"), "lr must be a finite number > 0, got nan"),
    ("lr", "0.1", "lr must be a finite number > 0, got '0.1'"),
    ("weight_decay", -1e-4, "weight_decay must be a finite number >= 0, got -0.0001"),
    ("optimizer", None, "optimizer must be a string, got None"),
    ("options", [], "options must be a dict"),
    ("fused", 1, "fused must be True or False, got 1"),
])
def test_config_rejects_wrong_types_and_ranges_by_name(field, value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{field: value})


def test_config_accepts_the_edges_of_each_range():
    c = TrainConfig(epochs=1, batch_size=1, width=1, seed=0, n_train=1, sigma_w=1e-300, lr=1e-300,
                    weight_decay=0.0, fused=True)
    assert (c.epochs, c.seed, c.weight_decay, c.fused) == (1, 0, 0.0, True)


@pytest.mark.fmnist
@pytest.mark.cuda
def test_cuda_run_follows_the_cpu_run():
    config = smoke_config(precision="fp32")
    cpu, gpu = train(config, "cpu"), train(config, "cuda")
    assert gpu.status == "ok" and gpu.history["epoch"] == cpu.history["epoch"]
    assert gpu.history["weight_norm"][0] == pytest.approx(cpu.history["weight_norm"][0], rel=1e-6)
    assert gpu.history["train_loss"][1] == pytest.approx(cpu.history["train_loss"][1], rel=1e-2)
