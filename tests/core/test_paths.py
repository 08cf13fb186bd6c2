"""Where the project keeps its data, results and verdicts (fibook.paths): the checkout's own folders by default, each
moved by its environment variable, read when asked for rather than when the module is imported."""

from pathlib import Path

import pytest

from fibook import paths

VARIABLES = ("FIBOOK_DATA", "FIBOOK_RESULTS", "FIBOOK_VERDICTS")


@pytest.fixture
def no_overrides(monkeypatch):
    """None of the three variables set, whatever the shell running the tests has."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_the_project_root_is_the_checkout_that_holds_this_package():
    assert (paths.PROJECT_ROOT / "fibook" / "paths.py").samefile(paths.__file__)
    assert (paths.PROJECT_ROOT / "pyproject.toml").is_file() and paths.PROJECT_ROOT.is_absolute()


@pytest.mark.usefixtures("no_overrides")
def test_without_variables_everything_lives_under_the_checkouts_data_folder():
    assert paths.data_dir() == paths.PROJECT_ROOT / "data"
    assert paths.results_dir() == paths.PROJECT_ROOT / "data" / "results"
    assert paths.verdicts_dir() == paths.PROJECT_ROOT / "data" / "verdicts"


@pytest.mark.usefixtures("no_overrides")
def test_fibook_data_moves_the_datasets_and_with_them_the_results_and_verdicts(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_DATA", str(tmp_path / "store"))
    assert paths.data_dir() == tmp_path / "store"
    assert paths.results_dir() == tmp_path / "store" / "results"
    assert paths.verdicts_dir() == tmp_path / "store" / "verdicts"


@pytest.mark.usefixtures("no_overrides")
def test_fibook_results_and_fibook_verdicts_move_only_their_own_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path / "r"))
    assert paths.results_dir() == tmp_path / "r"
    assert paths.data_dir() == paths.PROJECT_ROOT / "data"
    assert paths.verdicts_dir() == paths.PROJECT_ROOT / "data" / "verdicts"
    monkeypatch.setenv("FIBOOK_VERDICTS", str(tmp_path / "v"))
    monkeypatch.setenv("FIBOOK_DATA", str(tmp_path / "d"))
    # each variable wins over FIBOOK_DATA for its own folder
    assert (paths.data_dir(), paths.results_dir(), paths.verdicts_dir()) == (tmp_path / "d", tmp_path / "r",
                                                                             tmp_path / "v")


@pytest.mark.usefixtures("no_overrides")
@pytest.mark.parametrize(("variable", "folder"), [("FIBOOK_DATA", paths.data_dir),
                                                  ("FIBOOK_RESULTS", paths.results_dir),
                                                  ("FIBOOK_VERDICTS", paths.verdicts_dir)])
def test_a_variable_starting_with_a_tilde_is_under_the_home_folder(variable, folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(variable, "~/fibook")
    assert folder() == tmp_path / "fibook"


@pytest.mark.usefixtures("no_overrides")
def test_an_empty_variable_counts_as_unset(monkeypatch):
    for name in VARIABLES:
        monkeypatch.setenv(name, "")
    assert paths.data_dir() == paths.PROJECT_ROOT / "data"
    assert paths.results_dir() == paths.PROJECT_ROOT / "data" / "results"
    assert paths.verdicts_dir() == paths.PROJECT_ROOT / "data" / "verdicts"
    assert all(isinstance(f(), Path) for f in (paths.data_dir, paths.results_dir, paths.verdicts_dir))
