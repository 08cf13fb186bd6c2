"""The trainer's loop on a device (fibook.forgetting.train, beside tests/forgetting/test_train.py): the precision a
trained run records, one copy of the training split per population, and no host-device sync in a training
step."""

import dataclasses

import pytest
import torch
from synthetic import random_splits, tiny

from fibook.forgetting import train
from fibook.forgetting.devices import auto_precision
from fibook.forgetting.train import build_blocks, population_batches, train_population, train_step

pytestmark = pytest.mark.slow


@pytest.fixture
def random_data(monkeypatch):
    """The trainer reads random 2-class 32x32x3 data of 8 images per split instead of a dataset's files."""
    ds = random_splits()
    monkeypatch.setattr(train, "dataset", lambda name: ds)
    return ds


def test_a_trained_run_records_the_precision_it_ran_at(random_data):
    (auto,), (bf16,) = (train_population([tiny(precision=p)], "cpu") for p in ("auto", "bf16"))
    assert auto.config == dataclasses.replace(tiny(), precision=auto_precision("cpu"))
    assert bf16.config.precision == "bf16" and bf16.status == auto.status == "ok"


def test_a_population_holds_one_copy_of_the_training_split():
    ds = random_splits(n=40)
    configs = [tiny(sigma_w=0.1 * (k + 1), seed=k, augment="crop_flip") for k in range(16)]
    train_batches, evals = population_batches(configs, ds, torch.device("cpu"))
    storages = {b.x.untyped_storage().data_ptr() for b in [*train_batches, evals["train"]]}
    assert len(storages) == 1
    assert len({b.x.untyped_storage().data_ptr() for b in evals.values()}) == 3
    # each run's batches are those of its own iterator over its own copy, as before the split was shared
    for c, shared in zip(configs[:3], train_batches, strict=False):
        own = train.Batches(ds.train, c.batch_size, mean=ds.mean, std=ds.std, augment=c.augment, seed=c.seed)
        for (xa, ya), (xb, yb) in zip(shared.epoch(3), own.epoch(3), strict=True):
            assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert not torch.equal(next(train_batches[0].epoch(3))[0], next(train_batches[1].epoch(3))[0])


@pytest.mark.cuda
@pytest.mark.parametrize("fuse", [False, True])
def test_a_training_step_never_waits_for_the_gpu(fuse):
    ds = random_splits(n=40)
    configs = [tiny(sigma_w=s, seed=k, augment="crop_flip", fused=fuse, optimizer="adam", lr=1e-3)
               for k, s in enumerate((0.5, 2.0))]
    dev = torch.device("cuda")
    train_batches, _ = population_batches(configs, ds, dev)
    blocks = build_blocks(configs, fuse, 3, 2, dev, bf16=True)
    loss_sums = torch.zeros(len(configs), device=dev)
    epochs = [tb.epoch(1) for tb in train_batches]
    first = [next(e) for e in epochs]  # the epoch's draws are copied to the device once, at its first batch
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step_batches in [first, *zip(*epochs, strict=True)]:
            for b in blocks:
                xb = torch.cat([step_batches[i][0] for i in b.members], dim=1)
                yb = torch.stack([step_batches[i][1] for i in b.members], dim=1)
                loss_sums[b.index] += train_step(b, xb, yb, bf16=True)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(loss_sums).all()
