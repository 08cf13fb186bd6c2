"""The splits of a Part I dataset (:mod:`fibook.forgetting.splits`): the protocol's sizes, the stratified
validation split and its seed, the class-balanced subsets, the channel statistics and the splits assembled from
arrays, each against a count or a numpy computation."""

import numpy as np
import pytest
import torch

from fibook.forgetting import splits


def test_the_split_sizes_are_the_protocols_and_an_unknown_dataset_lists_the_choices():
    assert splits.split_sizes("fashion_mnist") == (50_000, 10_000, 10_000)
    assert splits.split_sizes("cifar10") == (40_000, 10_000, 10_000)
    assert splits.train_split_size("cifar10") == 40_000
    with pytest.raises(ValueError, match="unknown dataset 'mnist'; choose one of: cifar10, fashion_mnist"):
        splits.train_split_size("mnist")


def test_the_validation_split_holds_out_the_fraction_of_every_class_by_the_seed():
    labels = np.repeat(np.arange(4), [10, 20, 30, 40])
    train, val = splits.stratified_split(labels, 0.2, seed=3)
    assert np.bincount(labels[val]).tolist() == [2, 4, 6, 8]
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(100))
    assert list(train) == sorted(train) and list(val) == sorted(val)
    again = splits.stratified_split(labels, 0.2, seed=3)
    other = splits.stratified_split(labels, 0.2, seed=4)
    assert np.array_equal(again[1], val) and not np.array_equal(other[1], val)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            splits.stratified_split(labels, bad)
    with pytest.raises(ValueError, match="too few to hold out"):
        splits.stratified_split(np.array([0, 0, 1]), 0.4)


def test_stratified_first_n_is_balanced_and_ordered():
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    idx = splits.stratified_first_n(labels, 7)
    assert idx.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert np.bincount(labels[splits.stratified_first_n(labels, 6)]).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match=r"between 3 \(one image of each class\) and 10"):
        splits.stratified_first_n(labels, 11)
    with pytest.raises(ValueError, match="between 3"):
        splits.stratified_first_n(labels, 2)  # a class would be missing
    assert np.bincount(labels[splits.stratified_first_n(labels, 3)]).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="needs 4 images of class 1"):
        splits.stratified_first_n(np.array([0] * 8 + [1] * 2), 8)


def test_channel_statistics_are_the_population_mean_and_std_of_the_pixels_in_zero_one():
    x = torch.randint(0, 256, (5, 3, 4, 4), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    mean, std = splits.channel_stats(x)
    pixels = x.numpy().astype(np.float64).transpose(1, 0, 2, 3).reshape(3, -1) / 255
    assert mean == pytest.approx(tuple(pixels.mean(1)), abs=1e-6)
    assert std == pytest.approx(tuple(pixels.std(1)), abs=1e-6)


def test_assembled_splits_hold_the_stratified_split_and_the_training_splits_statistics():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 6)  # 6 per class: Fashion-MNIST's fraction 1/6 holds out one of each
    x = rng.integers(0, 256, (60, 1, 2, 2), dtype=np.uint8)
    x_test, y_test = x[:10], y[:10]
    ds = splits.assemble("fashion_mnist", [str(c) for c in range(10)], x, y, x_test, y_test)
    train, val = splits.stratified_split(y, 1 / 6)
    assert torch.equal(ds.val.x, torch.from_numpy(x[val])) and torch.equal(ds.train.y, torch.from_numpy(y[train]))
    assert len(ds.train) == 50 and len(ds.val) == 10 and torch.equal(ds.test.x, torch.from_numpy(x_test))
    assert (ds.mean, ds.std) == splits.channel_stats(ds.train.x) and ds.image_shape == (1, 2, 2)
