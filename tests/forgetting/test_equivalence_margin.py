"""The equivalence margin of Part I's verdicts lies above the noise floor measured at the book preset: a margin
below it would make "equal" and "erased" unreachable by chance alone."""

import numpy as np
import pytest

from fibook.forgetting import claims
from fibook.forgetting.collapse import collapse_points
from fibook.forgetting.noise import noise_floor
from fibook.forgetting.results import results_path


@pytest.mark.skipif(not results_path("seed_noise", "book").exists(), reason="no book-preset seed_noise results")
def test_the_equivalence_margin_exceeds_the_book_noise_floor_of_a_three_point_spread():
    noise = noise_floor("book", claims.SELECTION)
    points = collapse_points("book", claims.SELECTION, noise)
    accuracy = float(np.mean([a for p in points for a in p.arm.acc]))
    floor = noise.floor_pp(3, accuracy)
    assert 0 < floor < claims.EQUIVALENCE_PP
    # and the interval of a paired difference over three seeds can fit inside it: the margin is reachable
    assert noise.spread_std_pp < claims.EQUIVALENCE_PP / 2
