"""The shared input checks, at the edges of what each allows."""

import math

import numpy as np
import pytest

from fibook import checks


def test_positive_and_nonnegative_at_zero_and_beyond_the_finite_numbers():
    assert checks.positive("h", 1e-300) == 1e-300
    assert checks.nonnegative("eta", 0.0) == 0.0
    assert checks.positive("h", [1.0, 2.0]).tolist() == [1.0, 2.0]
    for bad in (0.0, -1e-300, math.inf, math.nan, [1.0, 0.0], "1", True, None):
        with pytest.raises(ValueError, match=r"h must be finite and > 0, got"):
            checks.positive("h", bad)
    for bad in (-1e-300, math.inf, np.array([0.0, -1.0]), "0"):
        with pytest.raises(ValueError, match=r"eta must be finite and >= 0, got"):
            checks.nonnegative("eta", bad)


def test_whole_numbers_refuse_floats_and_bools():
    assert checks.whole("epochs", 1) == 1 and checks.whole("seed", 0, least=0) == 0
    assert checks.whole("n", np.int64(3)) == 3
    for bad in (0, 1.0, True, "2"):
        with pytest.raises(ValueError, match="epochs must be a whole number >= 1, got"):
            checks.whole("epochs", bad)
    with pytest.raises(ValueError, match=r">= 1 or None \(the whole split\), got 0"):
        checks.whole("n_train", 0, alternative="or None (the whole split)")


def test_choice_names_the_allowed_values():
    assert checks.choice("init", "gaussian", ("orthogonal", "gaussian")) == "gaussian"
    with pytest.raises(ValueError, match=r"init must be one of \('orthogonal', 'gaussian'\), got 'haar'"):
        checks.choice("init", "haar", ["orthogonal", "gaussian"])
