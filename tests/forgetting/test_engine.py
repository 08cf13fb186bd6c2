"""The training engine's precision, device settings and device memory: what ``auto`` picks, what a run's config
and id record, one copy of the training split per population, no host-device sync in a training step, BatchNorm
in fp32 under bf16 autocast, and the committed book runs' ids."""

import copy
import dataclasses
import json

import pytest
import torch
from synthetic import random_splits

from fibook.forgetting import devices, results, train
from fibook.forgetting.devices import auto_precision, check_device, resolve_precision
from fibook.forgetting.experiments import EXPERIMENTS, grids, run_id, runs
from fibook.forgetting.train import TrainConfig, build_blocks, population_batches, train_population, train_step
from fibook.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture
def random_data(monkeypatch):
    """The trainer reads random 2-class 32x32x3 data of 8 images per split instead of a dataset's files."""
    ds = random_splits()
    monkeypatch.setattr(train, "dataset", lambda name: ds)
    return ds


def tiny(**kw):
    return TrainConfig(**{"width": 2, "epochs": 1, "batch_size": 4, "lr": 0.01, **kw})


def test_auto_precision_is_bf16_only_where_bf16_is_native():
    assert auto_precision("cpu", flags=frozenset({"avx2", "fma"})) == "fp32"
    assert auto_precision("cpu", flags=frozenset({"avx2", "avx512f", "avx512_bf16"})) == "bf16"
    assert auto_precision("cpu", flags=frozenset({"amx_tile", "amx_bf16"})) == "bf16"
    assert auto_precision("cpu", flags=frozenset()) == "fp32"
    assert auto_precision("cuda", cuda_bf16=True) == auto_precision("cuda:1", cuda_bf16=True) == "bf16"
    assert auto_precision("cuda", cuda_bf16=False) == "fp32"
    assert auto_precision("mps") == "fp32"
    # this machine, against torch's own detection of the instructions
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert auto_precision("cpu") == ("bf16" if native else "fp32")
    if torch.cuda.is_available():
        assert auto_precision("cuda") == ("bf16" if torch.cuda.get_device_capability()[0] >= 8 else "fp32")


def test_an_explicit_precision_is_kept_and_an_unknown_one_refused():
    for precision in ("fp32", "bf16", "fp64"):
        assert resolve_precision(precision, "cpu") == resolve_precision(precision, "cuda") == precision
    assert resolve_precision("auto", "cpu") == auto_precision("cpu")
    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose one of: auto, fp32, bf16, fp64"):
        resolve_precision("fp16", "cpu")


def test_device_strings_are_validated_before_any_run():
    for bad in ("cuda:x", "cuda:", "cuda:-1", "gpu"):
        with pytest.raises(ValueError, match="unknown device"):
            check_device(bad)
    assert check_device("cpu") == "cpu"


def test_a_trained_run_records_the_precision_it_ran_at(random_data):
    (auto,), (bf16,) = (train_population([tiny(precision=p)], "cpu") for p in ("auto", "bf16"))
    assert auto.config == dataclasses.replace(tiny(), precision=auto_precision("cpu"))
    assert bf16.config.precision == "bf16" and bf16.status == auto.status == "ok"


def test_a_scales_auto_precision_is_resolved_for_the_device_and_shows_in_the_id(monkeypatch):
    cpu = runs("depth", "gpu", device="cpu")
    assert {c.precision for c in cpu} == {auto_precision("cpu")}
    monkeypatch.setattr(devices, "auto_precision", lambda device: "bf16" if torch.device(device).type == "cuda"
                        else "fp32")
    fp32, bf16 = runs("depth", "gpu", device="cpu"), runs("depth", "gpu", device="cuda")
    assert {c.precision for c in fp32} == {"fp32"} and {c.precision for c in bf16} == {"bf16"}
    assert not {run_id(c) for c in fp32} & {run_id(c) for c in bf16}
    assert [dataclasses.replace(c, precision="bf16") for c in fp32] == bf16
    # an explicit precision (book: bf16, smoke: fp32) is the same on every device, and so are the ids
    for preset in ("smoke", "book"):
        assert [run_id(c) for c in runs("optimizers", preset, device="cpu")] == \
            [run_id(c) for c in runs("optimizers", preset, device="cuda")]


UNDER_WAY = ("clock_ladder", "tsgd_pair")  # book sweeps still running: their files hold a part of their grids


def test_the_committed_book_runs_are_exactly_the_experiments_book_grids():
    """Every results file of the book holds the runs its experiment's grid defines at the book preset, by id
    (the hash of the config): a change of the config fields, the grids or the precision rule would orphan them."""
    fixed_clock = grids("book").fixed_clock_precision
    for name in EXPERIMENTS:
        path = PROJECT_ROOT / "data" / "results" / name / "book.jsonl"
        stored = [json.loads(line)["id"] for line in path.read_text().splitlines()]
        configs = runs(name, "book", device="cpu")
        assert {c.precision for c in configs} == {fixed_clock if name in UNDER_WAY else "bf16"}
        ids = {run_id(c) for c in configs}
        assert set(stored) <= ids and (name in UNDER_WAY or ids == set(stored)), name
        assert {r.id for r in results.read_records(path)} == set(stored)  # and each id is its config's hash


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


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_batchnorm_computes_in_fp32_under_bf16_autocast(device):
    """torch's autocast lists batch_norm in neither its bf16 nor its fp32 ops: BatchNorm takes the bf16 conv output
    as it is, keeps fp32 parameters and running statistics, and normalizes in fp32. Its output is the fp32
    computation on that input rounded once to bf16, its statistics and parameter gradients those of fp32."""
    gen = torch.Generator().manual_seed(0)
    conv, bn = torch.nn.Conv2d(3, 8, 3, bias=False).to(device), torch.nn.BatchNorm2d(8).to(device)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2.0)
        bn.bias.uniform_(-1.0, 1.0)
    reference = copy.deepcopy(bn)
    x = (3 * torch.randn(16, 3, 10, 10, generator=gen) + 1.5).to(device)
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
        h = conv(x)
        out = bn(h)
    assert h.dtype == out.dtype == torch.bfloat16
    assert all(t.dtype == torch.float32 for t in (bn.weight, bn.bias, bn.running_mean, bn.running_var))
    h32 = h.detach().float().requires_grad_()
    exact = reference(h32)  # fp32 BatchNorm of the same (bf16-valued) input, outside autocast
    # rounded once: equal to the fp32 result in bf16, up to one bf16 step where a CPU's kernel sums in another
    # order and lands on the other side of a rounding boundary (seen on an AMD EPYC without bf16 units)
    rounded = exact.bfloat16().float()
    assert torch.allclose(out.float(), rounded, rtol=2**-7, atol=0)
    assert (out.float() == rounded).float().mean().item() > 0.99
    assert torch.allclose(bn.running_mean, reference.running_mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(bn.running_var, reference.running_var, rtol=1e-6, atol=1e-7)
    grad = torch.randn(exact.shape, generator=gen).bfloat16().to(device)
    out.backward(grad)
    exact.backward(grad.float())
    assert bn.weight.grad.dtype == bn.bias.grad.dtype == torch.float32
    assert torch.allclose(bn.weight.grad, reference.weight.grad, rtol=1e-5, atol=1e-5)
    assert torch.allclose(bn.bias.grad, reference.bias.grad, rtol=1e-5, atol=1e-5)


def test_training_on_cuda_autotunes_convolutions_and_restores_the_setting(monkeypatch):
    seen = []
    monkeypatch.setattr(train, "_train_population", lambda configs, dev: seen.append(
        (dev.type, torch.backends.cudnn.benchmark, torch.get_num_threads())))
    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = False
        train_population([tiny(precision="fp32")], "cuda")
        train_population([tiny(precision="fp32")], "cpu")
        assert seen == [("cuda", True, torch.get_num_threads()), ("cpu", False, 1)]
        assert torch.backends.cudnn.benchmark is False
    finally:
        torch.backends.cudnn.benchmark = before

