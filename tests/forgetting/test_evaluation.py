"""Scoring a Part I run (:mod:`fibook.forgetting.evaluation`): the eval-mode loss and accuracy of every model of a
population against a per-image computation, the BatchNorm recalibration of an untrained network against the exact
statistics, and the summary a history comes to."""

import math

import numpy as np
import pytest
import torch

from fibook.forgetting import metrics
from fibook.forgetting.batches import Batches
from fibook.forgetting.evaluation import evaluate, recalibrated_copy, summarize
from fibook.forgetting.splits import Split

K, C, CLASSES = 2, 3, 4  # two models of a population, three input channels, four classes


class Population(torch.nn.Module):
    """K small models side by side, as a fused population holds them: input (B, K C, H, W), logits (B, K, classes)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(K * C, K * CLASSES, 3, groups=K, bias=False)
        self.bn = torch.nn.BatchNorm2d(K * CLASSES)

    def forward(self, x):
        return self.bn(self.conv(x)).mean(dim=(2, 3)).view(len(x), K, CLASSES)


def population(seed=0):
    torch.manual_seed(seed)
    net = Population()
    with torch.no_grad():  # running statistics away from their reset values, as after training
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    return net


def batches(n=7, batch_size=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    split = Split(torch.randint(0, 256, (n, C, 6, 6), generator=gen, dtype=torch.uint8),
                  torch.randint(0, CLASSES, (n,), generator=gen))
    return Batches(split, batch_size, mean=(0.5,) * C, std=(0.25,) * C, shuffle=False, drop_last=False)


def test_each_models_loss_and_accuracy_are_its_mean_over_every_image_one_at_a_time():
    net, data = population(), batches()
    scores = evaluate(net, K, data, bf16=False)
    net.eval()
    for j, (loss, acc) in enumerate(scores):
        losses, hits = [], []
        for x, y in zip(data.x, data.y, strict=True):  # one image at a time, in float64
            logits = net(x[None].repeat(1, K, 1, 1))[0, j].detach().double().numpy()
            log_p = logits - logits.max() - math.log(np.exp(logits - logits.max()).sum())
            losses.append(-log_p[int(y)])
            hits.append(int(np.argmax(logits) == int(y)))
        assert loss == pytest.approx(np.mean(losses), rel=1e-6) and acc == np.mean(hits)
    assert len(scores) == K and scores[0] != scores[1]  # each model scored on its own


def test_a_recalibrated_copy_holds_the_exact_statistics_of_the_images_and_leaves_the_network_alone():
    net, data = population(), batches()
    before = (net.bn.running_mean.clone(), net.bn.running_var.clone())
    twin = recalibrated_copy(net, K, data, bf16=False)
    assert twin is not net
    assert torch.equal(net.bn.running_mean, before[0]) and torch.equal(net.bn.running_var, before[1])
    per_batch = [net.conv(xb.repeat(1, K, 1, 1)).detach().double().transpose(0, 1).reshape(K * CLASSES, -1)
                  for xb, _ in data.epoch(0)]
    # cumulative averaging (momentum None): the mean of the batches' means and of their unbiased variances
    means = torch.stack([b.mean(1) for b in per_batch]).mean(0)
    variances = torch.stack([b.var(1, unbiased=True) for b in per_batch]).mean(0)
    assert torch.allclose(twin.bn.running_mean.double(), means, atol=1e-6)
    assert torch.allclose(twin.bn.running_var.double(), variances, rtol=1e-5)


def test_a_summary_reads_the_selected_epoch_the_interpolation_epoch_and_the_ends_of_the_history():
    history = {"val_loss": [2.3, 1.0, 0.6, 0.7, 0.8], "val_acc": [0.1, 0.6, 0.80, 0.82, 0.83],
               "test_acc": [0.1, 0.58, 0.79, 0.80, 0.81], "train_acc": [0.1, 0.7, 0.99, 0.996, 1.0],
               "weight_norm": [3.0, 3.1, 3.2, 3.3, 3.4]}
    clocks = {"T_SGD": 1e-4, "T_L2": 0.0, "T_adapt": 0.4}
    s = summarize(history, 40, clocks)
    assert (s.selected_epoch, s.selected_test_acc, s.selected_val_acc) == (2, 0.79, 0.80)
    assert s.tau_interp == 3 and s.repair_gap == pytest.approx(100 * (0.83 - 0.82))
    assert (s.final_train_acc, s.final_test_acc, s.init_weight_norm, s.final_weight_norm) == (1.0, 0.81, 3.0, 3.4)
    assert s.clocks == clocks and s.steps == 40
    assert s.to_dict()["selected_epoch"] == 2


def test_a_run_that_diverged_before_any_finite_validation_loss_has_no_selected_checkpoint():
    history = {"val_loss": [2.3, math.nan], "val_acc": [0.1, 0.1], "test_acc": [0.1, 0.1], "train_acc": [0.1, 0.1],
               "weight_norm": [3.0, math.inf]}
    s = summarize(history, 10, {"T_SGD": 0.0, "T_L2": 0.0, "T_adapt": 0.0})
    assert s.selected_epoch is s.selected_test_acc is s.selected_val_acc is None
    assert s.tau_interp is None and s.repair_gap is None
    assert metrics.selected_epoch(history["val_loss"]) is None  # the metric the summary reads
