"""The numbers Das et al. (2026) quote (fibook.forgetting.paper): each entry's printed text shows its value, its
source says which public summary states it, and the quoted clocks are those the paper's setting reaches."""

import pytest
from synthetic import printed_numbers

from fibook.claims import Quoted
from fibook.forgetting import paper
from fibook.forgetting.experiments import grids
from fibook.forgetting.splits import train_split_size

QUOTED = {name: q for name, q in vars(paper).items() if isinstance(q, Quoted)}


def test_the_registry_holds_the_quoted_spreads_and_clocks():
    assert set(QUOTED) == {"HEADLINE_SPREAD", "LONG_SPREAD", "HEADLINE_T_SGD", "LONG_T_SGD", "L2_SPREAD",
                           "MUON_SPREAD"}


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_a_quoted_numbers_text_prints_its_value_and_its_source_names_the_abstract_or_a_summary(name):
    q = QUOTED[name]
    assert printed_numbers(q.text) == [q.value] and str(q) == q.text
    assert q.text.endswith(" pp") == name.endswith("_SPREAD")  # spreads in percentage points, clocks bare
    # only the abstract and secondary summaries of the paper are public (the module's docstring)
    assert q.source.startswith(("abstract", "secondary summaries")), q.source


@pytest.mark.parametrize(("quoted", "epochs"), [(paper.HEADLINE_T_SGD, 300), (paper.LONG_T_SGD, 5000)])
def test_the_quoted_t_sgd_is_what_the_papers_low_rate_sgd_reaches_at_b_128_on_cifar10(quoted, epochs):
    eta, batch = grids("paper").sgd_lr, 128
    steps = epochs * (train_split_size("cifar10") // batch)  # 312 steps an epoch, the last partial batch dropped
    assert float(f"{steps * eta**2 / batch:.2g}") == quoted.value  # sum eta^2 / b, to the two digits quoted
    assert epochs in grids("paper").long_epochs
