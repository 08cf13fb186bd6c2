"""The appendix "Results files" and the results module's docstring describe exactly the record types."""

import dataclasses
import re
from pathlib import Path

from fibook.forgetting import results
from fibook.forgetting.train import Summary, TrainConfig

APPENDIX = Path(__file__).resolve().parents[2] / "chapters" / "appendix" / "results_format.md"


def table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``| header |``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def names(cell: str) -> list[str]:
    return re.findall(r"`(\w+)`", cell)


def field_names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_the_appendix_lists_every_field_of_a_record_its_config_and_its_summary():
    text = APPENDIX.read_text()
    record_rows = table_rows(text, "field")
    assert sorted(n for row in record_rows for n in names(row[0])) == sorted(field_names(results.Record))
    config_row = next(row for row in record_rows if names(row[0]) == ["config"])
    assert sorted(names(config_row[2])) == sorted(field_names(TrainConfig))
    summary_rows = table_rows(text, "key")
    assert sorted(n for row in summary_rows for n in names(row[0])) == sorted(field_names(Summary))


def test_the_module_docstring_names_every_field_of_a_record():
    doc = results.__doc__
    assert all(f"``{name}``" in doc for name in field_names(results.Record))
