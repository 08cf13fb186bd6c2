import pytest

from fibook import presets


def test_every_scale_is_complete_and_ordered_by_size():
    assert presets.PRESET_NAMES == ("smoke", "book", "gpu", "paper")
    images = [presets.get_preset(n).forgetting.images_per_run for n in ("smoke", "book", "gpu")]
    assert images == sorted(images)
    assert presets.get_preset("paper").forgetting.data.dataset == "cifar10"
    assert presets.get_preset("paper").forgetting.data.n_train == 40_000


def test_sigma_grid_is_geometric_from_0p1_to_2p5():
    g = presets.SIGMA_W_GRID
    assert g[0] == 0.1 and g[-1] == 2.5 and len(g) == 7
    ratios = [b / a for a, b in zip(g, g[1:], strict=False)]
    assert max(ratios) - min(ratios) < 0.01


def test_a_preset_is_named_and_an_unknown_name_lists_the_presets():
    assert presets.get_preset("GPU").name == "gpu" and presets.get_preset(" smoke ").name == "smoke"
    book = presets.get_preset("book")
    assert presets.get_preset(book) is book
    with pytest.raises(ValueError, match=r"unknown preset 'huge' \(from argument\); choose one of: smoke, book, gpu, "
                                         r"paper$"):
        presets.get_preset("huge")


@pytest.fixture
def no_preset_variables(monkeypatch):
    monkeypatch.delenv(presets.PRESET_ENV, raising=False)
    monkeypatch.delenv(presets.FORMER_ENV, raising=False)
    return monkeypatch


def test_the_environment_names_the_preset_under_its_name_or_the_former_one(no_preset_variables):
    env = no_preset_variables
    assert presets.preset_from_environment().name == "book"
    env.setenv("FIBOOK_SCALE", "smoke")  # the former name still works
    assert presets.preset_from_environment().name == "smoke"
    env.setenv("FIBOOK_PRESET", "gpu")  # and the new one wins
    assert presets.preset_from_environment().name == "gpu"


@pytest.mark.parametrize("var", ["FIBOOK_PRESET", "FIBOOK_SCALE"])
def test_an_unknown_preset_in_either_variable_says_which_and_lists_the_presets(no_preset_variables, var):
    no_preset_variables.setenv(var, "huge")
    with pytest.raises(ValueError, match=rf"unknown preset 'huge' \(from \${var}\); choose one of: smoke, book, gpu, "
                                         r"paper$"):
        presets.preset_from_environment()


def test_a_preset_read_below_an_entry_point_never_comes_from_the_environment(no_preset_variables):
    no_preset_variables.setenv("FIBOOK_PRESET", "smoke")
    with pytest.raises(TypeError):
        presets.get_preset()  # a name (or a preset) is required: only entry points read the environment
    from fibook.forgetting import experiments

    with pytest.raises(TypeError):
        experiments.grids()


def test_table_has_one_row_per_preset():
    rows = presets.preset_table()
    assert [r["preset"] for r in rows] == list(presets.PRESET_NAMES)
    assert rows[1]["train / val / test"] == "5,000 / 2,000 / 3,000"


def test_parts_table_reads_each_preset():
    rows = presets.parts_table()
    assert [r["preset"] for r in rows] == list(presets.PRESET_NAMES)
    paper = presets.get_preset("paper")
    assert paper.shape.d == 1000 and paper.shape.n_train == 100  # the paper's sparse-regression setting
    assert rows[-1]["Part II: d, N"] == "1,000, 100"
    assert paper.forgetting.seeds == (0, 1, 2) and presets.get_preset("gpu").forgetting.seeds == (0,)


def test_an_empty_or_blank_variable_counts_as_unset(no_preset_variables):
    for value in ("", "  "):
        no_preset_variables.setenv("FIBOOK_PRESET", value)
        no_preset_variables.setenv("FIBOOK_SCALE", value)
        assert presets.preset_from_environment().name == "book"
