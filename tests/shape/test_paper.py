"""The numbers Azulay et al. (2021) state (fibook.shape.paper): each entry's printed text shows its value and its
source names the figure or section that states it."""

import pytest
from synthetic import printed_numbers

from fibook.claims import Quoted
from fibook.shape import paper

QUOTED = {name: q for name, q in vars(paper).items() if isinstance(q, Quoted)}


def test_the_registry_holds_figure_71s_transitions_and_section_6s_gradient_descent():
    assert set(QUOTED) == {"TRANSITIONS", "GD_STEPS", "GD_DISTANCES"}
    assert QUOTED["TRANSITIONS"].source.startswith("Figure 7.1")
    assert QUOTED["GD_STEPS"].source.startswith("Section 6") and QUOTED["GD_DISTANCES"].source.startswith("Section 6")


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_a_quoted_pair_prints_both_its_values_in_order(name):
    q = QUOTED[name]
    assert isinstance(q.value, tuple) and printed_numbers(q.text) == list(q.value) and str(q) == q.text


def test_the_ranges_run_from_low_to_high_and_the_transitions_from_the_smallest_shape_to_the_largest():
    low, high = paper.GD_STEPS.value
    assert low < high and all(isinstance(n, int) for n in paper.GD_STEPS.value)
    assert paper.GD_DISTANCES.value[0] < paper.GD_DISTANCES.value[1]
    # the largest shape turns min-l2-like at a smaller alpha (its effective scale is larger)
    assert paper.TRANSITIONS.value[0] > paper.TRANSITIONS.value[1]
