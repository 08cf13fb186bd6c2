"""A results record: the appendix "Results files" and the records module's docstring describe exactly the record
types, and every line of a results file is checked on read against them and against its file."""

import dataclasses
import json
import re
from pathlib import Path

import pytest
from synthetic import record

from fibook.forgetting import records, results
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.evaluation import Summary

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
    assert sorted(n for row in record_rows for n in names(row[0])) == sorted(field_names(records.Record))
    config_row = next(row for row in record_rows if names(row[0]) == ["config"])
    assert sorted(names(config_row[2])) == sorted(field_names(TrainConfig))
    summary_rows = table_rows(text, "key")
    assert sorted(n for row in summary_rows for n in names(row[0])) == sorted(field_names(Summary))


def test_the_module_docstring_names_every_field_of_a_record():
    doc = records.__doc__
    assert all(f"``{name}``" in doc for name in field_names(records.Record))


def append_line(path, obj):
    """Append one JSON object as a line, bypassing the store's checks (for lines the store must refuse)."""
    with open(path, "a") as f:
        f.write(json.dumps(obj) + "\n")


# A reliability finding of the probe (its finding number in parentheses).

@pytest.mark.slow
@pytest.mark.parametrize("broken,message", [
    (lambda r: {"id": r["id"], "status": "ok"}, r"'ok' records need the field\(s\) experiment, scale, config"),
    (lambda r: r | {"id": "0" * 16}, "id '0000000000000000' is not its config's hash"),
    (lambda r: r | {"experiment": "optimizers"}, "experiment 'optimizers' does not match its file's 'x'"),
    (lambda r: r | {"config": {**r["config"], "epochs": 1.5}}, "config is not a valid training config: epochs"),
    (lambda r: r | {"config": {**r["config"], "optimiser": "sgd"}}, "config is not a valid training config"),
    (lambda r: r | {"summary": [1]}, r"wrong type: summary \(must be dict\)"),
    (lambda r: r | {"summary": {**r["summary"], "spread": 1.0}}, "summary is not a run summary"),
])
def test_every_record_is_checked_on_read_with_its_file_and_line(store, broken, message):
    """(2) A hand-appended or foreign line must not count as a finished run."""
    path = store / "x" / "smoke.jsonl"
    results.append_record(path, record(0))
    append_line(path, broken(record(0).to_json()))
    with pytest.raises(results.InvalidRecordError, match=f"smoke.jsonl, line 2: not a valid results record: "
                                                         f"{message}"):
        results.read_records(path)
