"""Markers every test module shares (registered in pyproject.toml): ``fmnist`` and ``cuda`` tests are skipped, with
the reason, where Debian's Fashion-MNIST or a CUDA device is missing; ``slow`` and ``book`` select what `make check`
leaves out."""

import pytest
import torch

from fibook.forgetting.data import DEBIAN_FASHION_MNIST


def pytest_collection_modifyitems(config, items):
    missing = {"fmnist": None if DEBIAN_FASHION_MNIST.is_dir() else "Debian's Fashion-MNIST is not installed",
               "cuda": None if torch.cuda.is_available() else "needs a CUDA device"}
    for item in items:
        for marker, reason in missing.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
