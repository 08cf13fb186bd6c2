"""Where and in what precision a Part I run computes (fibook.forgetting.devices): what ``auto`` picks, an explicit
precision kept, the settings a run trains under on each device, and the forward pass under bf16 autocast
(BatchNorm in fp32)."""

import copy
import io

import pytest
import torch
from synthetic import tiny

from fibook.forgetting import devices, train
from fibook.forgetting.devices import auto_precision, resolve_precision
from fibook.forgetting.train import train_population

CPUINFO = ("processor\t: 0\nflags\t\t: fpu sse2 avx2\nvmx flags\t: vnmi ept\n\n"
           "processor\t: 1\nflags\t\t: fpu sse2 avx512_bf16\n")


@pytest.mark.slow
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


@pytest.mark.slow
def test_an_explicit_precision_is_kept_and_an_unknown_one_refused():
    for precision in ("fp32", "bf16", "fp64"):
        assert resolve_precision(precision, "cpu") == resolve_precision(precision, "cuda") == precision
    assert resolve_precision("auto", "cpu") == auto_precision("cpu")
    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose one of: auto, fp32, bf16, fp64"):
        resolve_precision("fp16", "cpu")


@pytest.mark.slow
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
    # order and lands on the other side of a rounding boundary (seen on an AMD EPYC without bf16 units), and up to
    # 1e-5 absolute where w * x_hat + b cancels to near 0 (|out| ~ 1e-6): there the two fp32 orders differ by a few
    # fp32 steps of the O(1) terms, far more than one bf16 step of the tiny result. 1e-5 stays 400x below the
    # bf16 step at 1, so a bf16 normalization (errors ~ 1e-2) still fails.
    rounded = exact.bfloat16().float()
    assert torch.allclose(out.float(), rounded, rtol=2**-7, atol=1e-5)
    assert (out.float() == rounded).float().mean().item() > 0.99
    assert torch.allclose(bn.running_mean, reference.running_mean, rtol=1e-6, atol=1e-7)
    assert torch.allclose(bn.running_var, reference.running_var, rtol=1e-6, atol=1e-7)
    grad = torch.randn(exact.shape, generator=gen).bfloat16().to(device)
    out.backward(grad)
    exact.backward(grad.float())
    assert bn.weight.grad.dtype == bn.bias.grad.dtype == torch.float32
    assert torch.allclose(bn.weight.grad, reference.weight.grad, rtol=1e-5, atol=1e-5)
    assert torch.allclose(bn.bias.grad, reference.bias.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_training_on_cuda_autotunes_convolutions_and_restores_the_setting(monkeypatch):
    seen = []
    monkeypatch.setattr(train, "_train_population", lambda configs, dev, progress: seen.append(
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


def test_auto_is_cuda_where_present_and_an_explicit_device_is_kept(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.resolve_device() == devices.resolve_device(None) == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert devices.resolve_device("auto") == torch.device("cpu")
    assert devices.resolve_device("cuda:1") == torch.device("cuda", 1)  # asked for: kept, present or not
    assert devices.resolve_device(torch.device("cpu")) == torch.device("cpu")


def test_the_cpus_flags_are_those_of_cpuinfos_flags_lines_and_decide_what_auto_stands_for(monkeypatch):
    monkeypatch.setattr(devices, "open", lambda path: io.StringIO(CPUINFO), raising=False)
    assert devices.cpu_flags() == {"fpu", "sse2", "avx2", "avx512_bf16"}  # not the "vmx flags" line
    assert devices.auto_precision("cpu") == devices.resolve_precision("auto", "cpu") == "bf16"

    def missing(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(devices, "open", missing, raising=False)
    assert devices.cpu_flags() == frozenset() and devices.auto_precision("cpu") == "fp32"


def test_one_cpu_thread_and_autotuned_convolutions_hold_for_their_block_only_even_when_it_raises():
    threads, benchmark = torch.get_num_threads(), torch.backends.cudnn.benchmark
    try:
        torch.set_num_threads(2)
        torch.backends.cudnn.benchmark = False
        with pytest.raises(RuntimeError, match="inside"), devices.one_cpu_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError, match="inside"), devices.cudnn_autotuned():
            assert torch.backends.cudnn.benchmark is True
            raise RuntimeError("inside")
        assert torch.backends.cudnn.benchmark is False
        # the CPU trains on one thread, CUDA with autotuned convolutions, any other device as it is
        for device, inside in (("cpu", (1, False)), ("cuda", (2, True)), ("meta", (2, False))):
            with devices.device_settings(torch.device(device)):
                assert (torch.get_num_threads(), torch.backends.cudnn.benchmark) == inside, device
            assert (torch.get_num_threads(), torch.backends.cudnn.benchmark) == (2, False), device
    finally:
        torch.set_num_threads(threads)
        torch.backends.cudnn.benchmark = benchmark


def test_the_bf16_forward_pass_runs_under_autocast_on_channels_last_input_and_gives_fp32_logits():
    gen = torch.Generator().manual_seed(0)
    conv, head = torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(4 * 6 * 6, 5)
    seen = []

    def net(x):
        seen.append((x.is_contiguous(memory_format=torch.channels_last), torch.is_autocast_enabled("cpu")))
        return head(conv(x).flatten(1))

    x = torch.randn(2, 3, 8, 8, generator=gen)
    with torch.no_grad():
        exact = net(x)
        plain, low = devices.forward_logits(net, x, bf16=False), devices.forward_logits(net, x, bf16=True)
    assert seen == [(False, False), (False, False), (True, True)]
    assert plain.dtype == torch.float32 and torch.equal(plain, exact)  # fp32: the net as it is
    assert low.dtype == torch.float32 and torch.equal(low, low.bfloat16().float())  # bf16 logits, widened
    assert not torch.equal(low, exact) and torch.allclose(low, exact, rtol=0, atol=0.05)
    assert devices.forward_logits(lambda z: z.double(), x, bf16=False).dtype == torch.float64  # left as they come


def test_device_strings_are_validated_before_any_run():
    for bad in ("cuda:x", "cuda:", "cuda:-1", "gpu"):
        with pytest.raises(ValueError, match="unknown device"):
            devices.check_device(bad)
    assert devices.check_device("cpu") == "cpu"
