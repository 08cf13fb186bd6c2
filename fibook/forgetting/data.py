"""Datasets of the book: CIFAR-10 (the forgetting paper's data) and Fashion-MNIST (the CPU stand-in).

Both loaders return a :class:`~fibook.forgetting.splits.DatasetSplits`: uint8 image tensors ``(N, C, H, W)`` and
int64 labels for a stratified train/validation split of the official training set and the official test set, plus
class names and the per-channel normalization statistics of the training split (the protocol of the split is
:mod:`fibook.forgetting.splits`).

Files are never fetched unless ``download=True``; a missing, truncated or altered file raises an error that says
which file, what was wrong and how to get a good copy.

Serves "Data and protocol" (``data_protocol``: the splits and their statistics) and every Part I sweep.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np

from fibook.forgetting.splits import DatasetSplits, assemble
from fibook.paths import data_dir

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_PACKAGE = "dataset-fashion-mnist"

# SHA-256 of the *decompressed* IDX files, so that any gzip re-compression of the same data is accepted.
FASHION_MNIST_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
CIFAR10_FOLDER = "cifar-10-batches-py"


class DatasetError(RuntimeError):
    """A dataset cannot be loaded; the message says which file, why, and what to do."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """The dataset's files are not where the loader looked."""


class DatasetCorruptError(DatasetError, ValueError):
    """A dataset file is truncated or its contents do not match the known checksum."""


class DataRootError(DatasetError, NotADirectoryError):
    """The data folder given is a file."""


def _resolve_root(root: str | Path | None, create: bool) -> Path:
    """The data folder: an explicit ``root`` must exist (unless ``create``); the default may be absent (a fresh
    checkout has no data/ yet), then only the system-wide copies are looked at."""
    explicit = root is not None
    root = Path(root).expanduser() if explicit else data_dir()
    if root.exists() and not root.is_dir():
        raise DataRootError(f"data root {str(root)!r} is a file; pass the folder that holds the datasets "
                                 "(default: the checkout's data/ folder or $FIBOOK_DATA)")
    if not root.exists():
        if not create and not explicit:
            return root
        if not create:
            raise DatasetNotFoundError(
                f"data root {str(root)!r} does not exist; pass an existing folder, or download=True to create "
                "it and download into it")
        root.mkdir(parents=True)
    return root


# ---------------------------------------------------------------- Fashion-MNIST (IDX files)

def read_idx(path: Path) -> tuple[np.ndarray, str]:
    """Read an IDX file (optionally gzipped), check that it is complete, return (array, SHA-256 of contents).

    IDX layout: two zero bytes, a type byte (0x08 = uint8), the number of dimensions, then each dimension as a
    big-endian int32, then the data.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (EOFError, OSError, gzip.BadGzipFile) as e:
        raise DatasetCorruptError(f"{path}: truncated or not a gzip file ({e}); replace it with a good copy") from e
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise DatasetCorruptError(f"{path}: not a uint8 IDX file (bad magic number {raw[:4].hex()})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetCorruptError(f"{path}: truncated inside its header ({len(raw)} bytes)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    expected = header + int(np.prod(dims))
    if len(raw) != expected:
        raise DatasetCorruptError(
            f"{path}: truncated or padded: header says shape {dims}, i.e. {expected:,} bytes, file has "
            f"{len(raw):,}; replace it with a good copy")
    pixels = np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims).copy()
    return pixels, hashlib.sha256(raw).hexdigest()


def _fashion_mnist_candidates(root: Path) -> list[Path]:
    return [root / "FashionMNIST" / "raw", root / "fashion-mnist", DEBIAN_FASHION_MNIST]


def _find_idx(folder: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def find_fashion_mnist(root: str | Path | None = None) -> Path:
    """The first folder holding all four Fashion-MNIST IDX files: ``root/FashionMNIST/raw`` (torchvision's
    layout), ``root/fashion-mnist``, then Debian's ``/usr/share/datasets/fashion-mnist``."""
    root = _resolve_root(root, create=False)
    candidates = _fashion_mnist_candidates(root)
    for folder in candidates:
        if all(_find_idx(folder, stem) for stem in FASHION_MNIST_SHA256):
            return folder
    looked = ", ".join(str(c) for c in candidates)
    raise DatasetNotFoundError(
        f"Fashion-MNIST not found (looked in {looked}). Install Debian's package "
        f"'{DEBIAN_PACKAGE}' (apt-get install {DEBIAN_PACKAGE}), or pass download=True "
        "(`python -m fibook data --download`) to fetch it with torchvision.")


def load_fashion_mnist(root: str | Path | None = None, download: bool = False) -> DatasetSplits:
    """Fashion-MNIST as 50,000 train / 10,000 validation / 10,000 test images of shape (1, 28, 28).

    Looks in ``root`` (default: ``$FIBOOK_DATA`` or the checkout's ``data/``) and in Debian's install folder;
    with ``download=True`` a missing dataset is fetched by torchvision into ``root/FashionMNIST/raw``.
    Every file is checked for completeness and against its SHA-256.
    """
    try:
        folder = find_fashion_mnist(root)
    except DatasetNotFoundError:
        if not download:
            raise
        folder = _download_fashion_mnist(_resolve_root(root, create=True))
    arrays = {}
    for stem, expected in FASHION_MNIST_SHA256.items():
        path = _find_idx(folder, stem)
        arrays[stem], digest = read_idx(path)
        if digest != expected:
            raise DatasetCorruptError(
                f"{path}: checksum mismatch (SHA-256 of its contents is {digest}, expected {expected}); "
                "the file is altered or from another dataset; replace it with a good copy")
    x = arrays["train-images-idx3-ubyte"][:, None]
    x_test = arrays["t10k-images-idx3-ubyte"][:, None]
    return assemble("fashion_mnist", FASHION_MNIST_CLASSES, x, arrays["train-labels-idx1-ubyte"],
                     x_test, arrays["t10k-labels-idx1-ubyte"])


def _download_fashion_mnist(root: Path) -> Path:
    from torchvision.datasets import FashionMNIST

    try:
        FashionMNIST(str(root), train=True, download=True)
    except Exception as e:  # torchvision raises URLError, HTTPError or RuntimeError when offline
        raise DatasetNotFoundError(
            f"downloading Fashion-MNIST into {root} failed ({type(e).__name__}: {e}); without network, install "
            f"Debian's package '{DEBIAN_PACKAGE}'") from e
    return root / "FashionMNIST" / "raw"


# ---------------------------------------------------------------- CIFAR-10 (python pickle batches)

def _cifar10_files() -> list[tuple[str, str]]:
    """(file name, md5) of the CIFAR-10 python version, as torchvision knows them."""
    from torchvision.datasets import CIFAR10

    return [*map(tuple, CIFAR10.train_list), *map(tuple, CIFAR10.test_list),
            (CIFAR10.meta["filename"], CIFAR10.meta["md5"])]


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_cifar10(folder: Path) -> None:
    """Check that every CIFAR-10 batch file exists and has torchvision's known md5 (before anything unpickles it)."""
    for name, md5 in _cifar10_files():
        path = folder / name
        if not path.is_file():
            raise DatasetNotFoundError(
                f"CIFAR-10 file {path} is missing; the folder must hold the python version "
                "(cifar-10-python.tar.gz unpacked); pass download=True to fetch it with torchvision")
        digest = _md5(path)
        if digest != md5:  # never unpickled: a pickle that is not the known file could run any code
            raise DatasetCorruptError(
                f"{path}: checksum mismatch (md5 {digest}, expected {md5}); the file is truncated, altered or from "
                "another dataset and was not opened; replace it with a good copy")


def load_cifar10(root: str | Path | None = None, download: bool = False) -> DatasetSplits:
    """CIFAR-10 as 40,000 train / 10,000 validation / 10,000 test images of shape (3, 32, 32).

    Reads ``root/cifar-10-batches-py`` through ``torchvision.datasets.CIFAR10`` after checking each file;
    ``download=True`` lets torchvision fetch the archive when it is missing.
    """
    from torchvision.datasets import CIFAR10

    root = _resolve_root(root, create=download)
    folder = root / CIFAR10_FOLDER
    if not folder.is_dir():
        if not download:
            raise DatasetNotFoundError(
                f"CIFAR-10 not found: {folder} does not exist. Pass download=True "
                "(`python -m fibook data --cifar10 --download`), or unpack cifar-10-python.tar.gz into "
                f"{root}")
        try:
            CIFAR10(str(root), train=True, download=True)
        except Exception as e:  # URLError/HTTPError when offline
            raise DatasetNotFoundError(
                f"downloading CIFAR-10 into {root} failed ({type(e).__name__}: {e}); copy "
                f"cifar-10-python.tar.gz there and unpack it") from e
    verify_cifar10(folder)
    train = CIFAR10(str(root), train=True, download=False)
    test = CIFAR10(str(root), train=False, download=False)
    return assemble("cifar10", train.classes, train.data.transpose(0, 3, 1, 2), np.asarray(train.targets),
                     test.data.transpose(0, 3, 1, 2), np.asarray(test.targets))


LOADERS = {"fashion_mnist": load_fashion_mnist, "cifar10": load_cifar10}


def load_dataset(name: str, root: str | Path | None = None, download: bool = False) -> DatasetSplits:
    """Load a dataset by name (``fashion_mnist`` or ``cifar10``)."""
    if name not in LOADERS:
        raise ValueError(f"unknown dataset {name!r}; choose one of: {', '.join(LOADERS)}")
    return LOADERS[name](root=root, download=download)
