"""Markers every test module shares (registered in pyproject.toml): ``fmnist`` and ``cuda`` tests are skipped, with
the reason, where Debian's Fashion-MNIST or a CUDA device is missing; ``slow`` and ``book`` select what `make check`
leaves out. Fixtures the tests of the results store and of the sweeps share: an empty ``store``, and
``no_training``."""

import pytest
import torch

from fibook.forgetting import cluster
from fibook.forgetting.data import DEBIAN_FASHION_MNIST


def pytest_collection_modifyitems(config, items):
    missing = {"fmnist": None if DEBIAN_FASHION_MNIST.is_dir() else "Debian's Fashion-MNIST is not installed",
               "cuda": None if torch.cuda.is_available() else "needs a CUDA device"}
    for item in items:
        for marker, reason in missing.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty results store in ``tmp_path`` (``$FIBOOK_RESULTS`` names it)."""
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    return tmp_path


@pytest.fixture
def no_training(monkeypatch):
    """A sweep that gets as far as training fails the test: it should have stopped before, having found that it
    could not record the result."""
    def refuse(*args, **kwargs):
        raise AssertionError("trained although the sweep could not record the result")
    monkeypatch.setattr(cluster, "train_population", refuse)
