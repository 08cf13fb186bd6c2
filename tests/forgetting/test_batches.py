"""The tensor-resident batch iterator: order, determinism, augmentation checked one image at a time."""

import pytest
import torch
import torch.nn.functional as F

from fibook.forgetting.batches import CROP_FLIP, Augment, Batches, epoch_generator, random_crop
from fibook.forgetting.splits import Split


def make_split(n=37, c=3, h=8, w=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return Split(torch.randint(0, 256, (n, c, h, w), generator=g, dtype=torch.uint8), torch.arange(n) % 10)


def test_epoch_is_a_permutation_and_drop_last_counts():
    split = make_split()
    b = Batches(split, 8, mean=(0.5,) * 3, std=(0.25,) * 3)
    assert len(b) == 4  # floor(37 / 8)
    ys = torch.cat([y for _, y in b.epoch(0)])
    assert len(ys) == 32 and len(set(ys.tolist())) <= 10
    full = Batches(split, 8, mean=(0.5,) * 3, std=(0.25,) * 3, shuffle=False, drop_last=False)
    assert len(full) == 5
    xs = torch.cat([x for x, _ in full.epoch(0)])
    assert torch.allclose(xs, (split.x.float() / 255 - 0.5) / 0.25)


def test_same_seed_same_batches_other_epoch_other_order():
    split = make_split()
    kw = dict(mean=(0.5,) * 3, std=(0.25,) * 3, augment=CROP_FLIP, seed=3)
    first = [x for x, _ in Batches(split, 8, **kw).epoch(2)]
    again = [x for x, _ in Batches(split, 8, **kw).epoch(2)]
    other = [x for x, _ in Batches(split, 8, **kw).epoch(3)]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_augmentation_matches_a_per_image_reference():
    split = make_split(n=16)
    mean, std = (0.5,) * 3, (0.25,) * 3
    b = Batches(split, 16, mean=mean, std=std, augment=CROP_FLIP, seed=5)
    (xb, yb), = list(b.epoch(1))
    # redo the epoch's draws by hand, then crop and flip each image separately
    gen = epoch_generator(5, 1)
    order = torch.randperm(16, generator=gen)
    offsets = torch.randint(0, 9, (16, 2), generator=gen)
    flips = torch.rand(16, generator=gen) < 0.5
    x = (split.x.float() / 255 - 0.5) / 0.25
    for k, i in enumerate(order.tolist()):
        padded = F.pad(x[i:i + 1], (4, 4, 4, 4), mode="reflect")[0]
        dy, dx = offsets[i].tolist()
        want = padded[:, dy:dy + 8, dx:dx + 8]
        if flips[i]:
            want = want.flip(-1)
        assert torch.equal(xb[k], want)
        assert yb[k] == split.y[i]


def test_random_crop_center_offset_is_identity_and_zero_padding():
    x = torch.rand(2, 1, 5, 5)
    assert torch.equal(random_crop(x, 2, torch.tensor([[2, 2], [2, 2]])), x)
    corner = random_crop(x, 2, torch.tensor([[0, 0], [0, 0]]), pad_mode="zeros")
    assert torch.all(corner[:, :, :2, :] == 0) and torch.equal(corner[:, :, 2:, 2:], x[:, :, :3, :3])


@pytest.mark.cuda
def test_cuda_batches_equal_cpu_batches():
    split = make_split()
    kw = dict(mean=(0.5,) * 3, std=(0.25,) * 3, augment=CROP_FLIP, seed=7)
    cpu = list(Batches(split, 8, **kw).epoch(4))
    gpu = list(Batches(split, 8, device="cuda", **kw).epoch(4))
    for (xc, yc), (xg, yg) in zip(cpu, gpu, strict=True):
        assert torch.equal(xc, xg.cpu()) and torch.equal(yc, yg.cpu())


def test_bad_arguments_are_explained():
    split = make_split(n=4)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        Batches(split, 0, mean=(0,) * 3, std=(1,) * 3)
    with pytest.raises(ValueError, match="exceeds the split's 4 images"):
        Batches(split, 8, mean=(0,) * 3, std=(1,) * 3)
    with pytest.raises(ValueError, match="unknown augmentation 'rotate'; choose one of: none, crop_flip"):
        Batches(split, 2, mean=(0,) * 3, std=(1,) * 3, augment="rotate")
    with pytest.raises(ValueError, match="crop_padding must be >= 0"):
        Augment(crop_padding=-1)
