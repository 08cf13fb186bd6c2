import pytest

from fibook import scales


def test_every_scale_is_complete_and_ordered_by_size():
    assert scales.SCALE_NAMES == ("smoke", "book", "gpu", "paper")
    images = [scales.get_scale(n).forgetting.images_per_run for n in ("smoke", "book", "gpu")]
    assert images == sorted(images)
    assert scales.get_scale("paper").forgetting.data.dataset == "cifar10"
    assert scales.get_scale("paper").forgetting.data.n_train == 40_000


def test_sigma_grid_is_geometric_from_0p1_to_2p5():
    g = scales.SIGMA_W_GRID
    assert g[0] == 0.1 and g[-1] == 2.5 and len(g) == 7
    ratios = [b / a for a, b in zip(g, g[1:], strict=False)]
    assert max(ratios) - min(ratios) < 0.01


def test_selection_by_argument_and_environment(monkeypatch):
    monkeypatch.delenv(scales.SCALE_ENV, raising=False)
    assert scales.get_scale().name == "book"
    monkeypatch.setenv(scales.SCALE_ENV, "smoke")
    assert scales.get_scale().name == "smoke"
    assert scales.get_scale("GPU").name == "gpu"
    monkeypatch.setenv(scales.SCALE_ENV, "huge")
    with pytest.raises(ValueError, match=r"unknown scale 'huge' \(from \$FIBOOK_SCALE\); choose one of: smoke, book"):
        scales.get_scale()


def test_table_has_one_row_per_scale():
    rows = scales.scale_table()
    assert [r["scale"] for r in rows] == list(scales.SCALE_NAMES)
    assert rows[1]["train / val / test"] == "5,000 / 2,000 / 3,000"


def test_parts_table_reads_each_scale():
    rows = scales.parts_table()
    assert [r["scale"] for r in rows] == list(scales.SCALE_NAMES)
    paper = scales.get_scale("paper")
    assert paper.shape.d == 1000 and paper.shape.n_train == 100  # the paper's sparse-regression setting
    assert rows[-1]["Part II: d, N"] == "1,000, 100"
    assert paper.forgetting.seeds == (0, 1, 2) and scales.get_scale("gpu").forgetting.seeds == (0,)


def test_an_empty_or_blank_scale_variable_counts_as_unset(monkeypatch):
    from fibook.scales import get_scale

    for value in ("", "  "):
        monkeypatch.setenv("FIBOOK_SCALE", value)
        assert get_scale().name == "book"
    monkeypatch.setenv("FIBOOK_SCALE", "smoke")
    assert get_scale().name == "smoke"
