"""The loaders, read from small files that the tests write in the real on-disk formats.

Fashion-MNIST: gzipped IDX files. CIFAR-10: the python version's pickle batches and ``batches.meta``.
Checksum tables are pointed at the files written here; everything else is the code path users take.
"""

import gzip
import hashlib
import pickle
import struct
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pytest
import torch

from fibook.forgetting import data, splits

FMNIST_PER_CLASS = 12  # 120 training images, 2 per class held out for validation (1/6)
CIFAR_PER_CLASS = 5  # per batch: 50 images per batch, 250 in all; 1/5 held out


def write_idx(path, array):
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(struct.pack(">i", d) for d in array.shape)
    raw = header + array.tobytes()
    with gzip.open(path, "wb") as f:
        f.write(raw)
    return hashlib.sha256(raw).hexdigest()


def balanced_labels(per_class, rng):
    return rng.permutation(np.repeat(np.arange(10), per_class)).astype(np.uint8)


@pytest.fixture
def fmnist_root(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    y = balanced_labels(FMNIST_PER_CLASS, rng)
    y_test = balanced_labels(3, rng)
    files = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (len(y), 28, 28)),
        "train-labels-idx1-ubyte": y,
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (len(y_test), 28, 28)),
        "t10k-labels-idx1-ubyte": y_test,
    }
    for stem, arr in files.items():
        monkeypatch.setitem(data.FASHION_MNIST_SHA256, stem, write_idx(raw / f"{stem}.gz", arr))
    monkeypatch.setattr(data, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian-copy")
    return tmp_path, files


def test_fashion_mnist_reads_idx_and_splits_stratified(fmnist_root):
    root, files = fmnist_root
    ds = data.load_fashion_mnist(root)
    assert ds.classes[0] == "T-shirt/top" and len(ds.classes) == 10
    assert ds.image_shape == (1, 28, 28) and ds.train.x.dtype == torch.uint8
    assert len(ds.train) == 100 and len(ds.val) == 20 and len(ds.test) == 30
    assert torch.bincount(ds.val.y, minlength=10).tolist() == [2] * 10
    # train and val partition the training file: every original image appears exactly once
    x = torch.from_numpy(files["train-images-idx3-ubyte"].astype(np.uint8))
    both = torch.cat([ds.train.x[:, 0], ds.val.x[:, 0]]).reshape(len(x), -1)
    assert sorted(map(bytes, both.numpy())) == sorted(map(bytes, x.reshape(len(x), -1).numpy()))
    # test set is the official file in order
    assert torch.equal(ds.test.x[:, 0], torch.from_numpy(files["t10k-images-idx3-ubyte"].astype(np.uint8)))
    # normalization statistics are those of the train split
    pix = ds.train.x.double() / 255
    assert ds.mean[0] == pytest.approx(pix.mean().item(), abs=1e-6)
    assert ds.std[0] == pytest.approx(pix.std(unbiased=False).item(), abs=1e-6)


def test_split_is_fixed_by_the_split_seed(fmnist_root):
    root, _ = fmnist_root
    a, b = data.load_fashion_mnist(root), data.load_fashion_mnist(root)
    assert torch.equal(a.val.x, b.val.x) and torch.equal(a.train.y, b.train.y)


def test_fashion_mnist_missing_names_package_and_flag(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "DEBIAN_FASHION_MNIST", tmp_path / "nowhere")
    with pytest.raises(data.DatasetNotFoundError, match="dataset-fashion-mnist.*download=True"):
        data.load_fashion_mnist(tmp_path)


def test_offline_download_failure_is_explained(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "DEBIAN_FASHION_MNIST", tmp_path / "nowhere")
    import torchvision.datasets.mnist as mnist

    def offline(*args, **kwargs):
        raise URLError("network unreachable")

    monkeypatch.setattr(mnist, "download_and_extract_archive", offline)
    expected = "(?s)downloading Fashion-MNIST .* failed.*dataset-fashion-mnist"
    with pytest.raises(data.DatasetNotFoundError, match=expected):
        data.load_fashion_mnist(tmp_path, download=True)


def test_wrong_root_is_rejected(tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        data.load_fashion_mnist(a_file)
    with pytest.raises(data.DatasetNotFoundError, match="does not exist"):
        data.load_cifar10(tmp_path / "missing")


def test_idx_truncation_and_checksum_mismatch(fmnist_root):
    root, files = fmnist_root
    path = root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte.gz"
    raw = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(raw[:-100]))
    with pytest.raises(data.DatasetCorruptError, match="truncated"):
        data.load_fashion_mnist(root)
    path.write_bytes(path.read_bytes()[:40])  # a gzip stream cut short
    with pytest.raises(data.DatasetCorruptError, match="truncated"):
        data.load_fashion_mnist(root)
    altered = bytearray(raw)
    altered[-1] ^= 0xFF
    path.write_bytes(gzip.compress(bytes(altered)))
    with pytest.raises(data.DatasetCorruptError, match="checksum mismatch"):
        data.load_fashion_mnist(root)


# ------------------------------------------------------------------------------------------ CIFAR-10

CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_cifar_batch(path, images_hwc, labels, name):
    batch = {
        "batch_label": name,
        "labels": [int(v) for v in labels],
        "data": images_hwc.transpose(0, 3, 1, 2).reshape(len(labels), -1),  # rows: R plane, G plane, B plane
        "filenames": [f"img_{i}.png" for i in range(len(labels))],
    }
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=2)


@pytest.fixture
def cifar_root(tmp_path, monkeypatch):
    from torchvision.datasets import CIFAR10

    rng = np.random.default_rng(2)
    folder = tmp_path / data.CIFAR10_FOLDER
    folder.mkdir()
    images = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        y = balanced_labels(CIFAR_PER_CLASS, rng)
        x = rng.integers(0, 256, (len(y), 32, 32, 3), dtype=np.uint8)
        write_cifar_batch(folder / name, x, y, name)
        images[name] = (x, y)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"num_cases_per_batch": 10000, "label_names": CIFAR_CLASSES, "num_vis": 3072}, f, protocol=2)

    def md5(name):
        return hashlib.md5((folder / name).read_bytes()).hexdigest()

    monkeypatch.setattr(CIFAR10, "train_list", [[f"data_batch_{i}", md5(f"data_batch_{i}")] for i in range(1, 6)])
    monkeypatch.setattr(CIFAR10, "test_list", [["test_batch", md5("test_batch")]])
    monkeypatch.setattr(CIFAR10, "meta", {**CIFAR10.meta, "md5": md5("batches.meta")})
    return tmp_path, images


def test_cifar10_reads_python_batches(cifar_root):
    root, images = cifar_root
    ds = data.load_cifar10(root)
    assert ds.classes == tuple(CIFAR_CLASSES)
    assert ds.image_shape == (3, 32, 32)
    assert (len(ds.train), len(ds.val), len(ds.test)) == (200, 50, 50)
    assert torch.bincount(ds.val.y, minlength=10).tolist() == [5] * 10
    x_test, y_test = images["test_batch"]
    assert torch.equal(ds.test.x, torch.from_numpy(x_test.transpose(0, 3, 1, 2).copy()))
    assert ds.test.y.tolist() == y_test.tolist()
    assert len(ds.mean) == 3 and all(0.45 < m < 0.55 for m in ds.mean)  # uniform random pixels


def test_cifar10_missing_names_the_flag(tmp_path):
    with pytest.raises(data.DatasetNotFoundError, match="download=True"):
        data.load_cifar10(tmp_path)


def test_cifar10_missing_file_truncation_and_checksum(cifar_root):
    root, _ = cifar_root
    folder = root / data.CIFAR10_FOLDER
    path = folder / "data_batch_3"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(data.DatasetCorruptError, match="data_batch_3: checksum mismatch.*truncated"):
        data.load_cifar10(root)
    batch = pickle.loads(good, encoding="latin1")
    batch["labels"][0] = (batch["labels"][0] + 1) % 10
    path.write_bytes(pickle.dumps(batch, protocol=2))
    with pytest.raises(data.DatasetCorruptError, match="data_batch_3: checksum mismatch"):
        data.load_cifar10(root)
    path.unlink()
    with pytest.raises(data.DatasetNotFoundError, match="data_batch_3 is missing"):
        data.load_cifar10(root)


def test_subset_keeps_full_split_statistics(fmnist_root):
    root, _ = fmnist_root
    ds = data.load_fashion_mnist(root)
    small = ds.subset(n_train=30, n_val=10)
    assert (len(small.train), len(small.val), len(small.test)) == (30, 10, 30)
    assert torch.bincount(small.train.y).tolist() == [3] * 10
    assert small.mean == ds.mean


def test_unknown_dataset_lists_choices():
    with pytest.raises(ValueError, match="fashion_mnist, cifar10"):
        data.load_dataset("mnist")


@pytest.mark.fmnist
def test_real_fashion_mnist_has_the_protocol_sizes(tmp_path):
    ds = data.load_fashion_mnist(tmp_path)  # empty root: falls back to Debian's copy
    assert (len(ds.train), len(ds.val), len(ds.test)) == (50_000, 10_000, 10_000)
    assert len(ds.train) == splits.train_split_size("fashion_mnist")
    assert torch.bincount(ds.val.y).tolist() == [1000] * 10
    assert 0.28 < ds.mean[0] < 0.29 and 0.35 < ds.std[0] < 0.36


@pytest.mark.fmnist
def test_default_root_may_be_missing_on_a_fresh_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_DATA", str(tmp_path / "not-yet"))
    assert data.find_fashion_mnist() == data.DEBIAN_FASHION_MNIST
    with pytest.raises(data.DatasetNotFoundError, match="cifar-10-batches-py does not exist"):
        data.load_cifar10()


class _Payload:
    """Unpickling this runs code: it creates the file named at pickling time."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path(self.marker).touch, ())


def test_a_cifar10_file_with_the_wrong_checksum_is_never_unpickled(cifar_root, tmp_path):
    root, _ = cifar_root
    marker = tmp_path / "code-ran"
    (root / data.CIFAR10_FOLDER / "data_batch_2").write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(data.DatasetCorruptError, match="data_batch_2: checksum mismatch"):
        data.verify_cifar10(root / data.CIFAR10_FOLDER)
    assert not marker.exists()
