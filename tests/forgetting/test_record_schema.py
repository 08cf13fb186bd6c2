"""The schema a results line is checked against when read (fibook.forgetting.record_schema): the bounded decoder,
which fields each status needs, and the type and range of every value, on a valid synthetic record changed one field
at a time."""

import json
import math
import re

import pytest
from synthetic import rec

from fibook.forgetting.record_schema import MAX_DEPTH, MAX_DIGITS, check_fields, decode


def good(**change) -> dict:
    """A valid finished record's JSON object (:func:`synthetic.rec`), with ``change``."""
    return rec(0.1, 0, 0.5, 1, 1.0, epochs=3).to_json() | change


def with_summary(**change) -> dict:
    return good(summary=good()["summary"] | change)


def with_history(**change) -> dict:
    return good(history=good()["history"] | change)


def nested(depth: int) -> bytes:
    """An object whose brackets nest ``depth`` deep: {"a": [[...[1]...]]}."""
    return b'{"a": ' + b"[" * (depth - 1) + b"1" + b"]" * (depth - 1) + b"}"


def test_decode_reads_one_object_and_says_why_a_line_is_not_one():
    assert decode(json.dumps(good()).encode()) == good()
    assert decode(b'{"a": 1} ') == {"a": 1}
    for line, message in ((b'{"a": 1', "not JSON (Expecting ',' delimiter at column 8)"),
                          (b"[1, 2]", "a JSON list, not an object"), (b'"text"', "a JSON str, not an object"),
                          (b'{"a": "\xff"}', "not UTF-8 text")):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            decode(line)


def test_decode_refuses_deep_nesting_and_long_integers_before_parsing_them():
    assert decode(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    with pytest.raises(ValueError, match=f"JSON nested {MAX_DEPTH + 1} levels deep \\(a record nests at most 8\\)"):
        decode(nested(MAX_DEPTH + 1))
    with pytest.raises(ValueError, match="JSON nested 100000 levels deep"):  # never reaches the recursive parser
        decode(nested(100_000))
    assert decode(b'{"a": "' + b"[" * 50 + b'"}') == {"a": "[" * 50}  # brackets inside a string do not nest
    assert decode(b'{"n": -' + b"9" * MAX_DIGITS + b"}") == {"n": -int("9" * MAX_DIGITS)}
    with pytest.raises(ValueError, match=f"an integer of {MAX_DIGITS + 1} digits \\(at most {MAX_DIGITS}\\)"):
        decode(b'{"n": ' + b"1" * (MAX_DIGITS + 1) + b"}")


def test_each_status_needs_its_own_fields_and_no_others():
    check_fields(good())
    failed = {k: good()[k] for k in ("id", "experiment", "scale", "config", "provenance")} | {
        "status": "failed", "error": "RuntimeError: out of memory"}
    check_fields(failed)
    with pytest.raises(ValueError, match="^status \"done\" is not one of ok, diverged, failed$"):
        check_fields(good(status="done"))
    incomplete = good()
    del incomplete["summary"], incomplete["provenance"]
    with pytest.raises(ValueError, match="^'ok' records need the field\\(s\\) provenance, summary$"):
        check_fields(incomplete)
    with pytest.raises(ValueError, match="unknown field\\(s\\) error for a 'ok' record"):
        check_fields(good(error="none"))
    with pytest.raises(ValueError, match="unknown field\\(s\\) summary for a 'failed' record"):
        check_fields(failed | {"summary": {}})
    with pytest.raises(ValueError, match="^wrong type: id \\(must be str\\), layer_names \\(must be list\\)$"):
        check_fields(good(id=7, layer_names="conv1"))
    with pytest.raises(ValueError, match="diverged_epoch is 2 in an 'ok' record; it must be null"):
        check_fields(good(diverged_epoch=2))


@pytest.mark.parametrize(("record", "message"), [
    (with_summary(final_test_acc=1.5), "summary.final_test_acc is 1.5; it must be a number in [0, 1]"),
    (with_summary(final_test_acc=True), "summary.final_test_acc is true; it must be a number in [0, 1]"),
    (with_summary(selected_test_acc=None, final_test_acc=None),
     "summary.final_test_acc is null; it must be a number in [0, 1]"),  # the selected one may be null, this not
    (with_summary(steps=2.5), "summary.steps is 2.5; it must be a whole number >= 0"),
    (with_summary(final_weight_norm=-1.0), "summary.final_weight_norm is -1.0; it must be a finite number >= 0"),
    (with_summary(clocks={"T_SGD": 1.0, "T_L2": 0.0}), "summary.clocks must be an object of T_SGD, T_L2, T_adapt"),
    (with_summary(clocks={"T_SGD": math.inf, "T_L2": 0.0, "T_adapt": 1.0}),
     "summary.clocks.T_SGD is Infinity; it must be a finite number >= 0"),
    (with_history(test_acc=[0.1, 0.5, 0.5, 1.01]), "history.test_acc[3] is 1.01; it must be a number in [0, 1]"),
    (with_history(train_loss=[2.3, math.nan, 0.1, 0.1]), "history.train_loss[1] is NaN; it must be a finite number"),
    (with_history(epoch=[0, 1, 1, 2]), "history.epoch must rise from 0"),
    (with_history(steps=[0, 1, 2]), "history lists must hold one entry per recorded epoch"),
    (with_history(T_adapt=None), "history.T_adapt must be a list"),
    (with_history(init_cosine=[1.0, 0.9, 0.8, 0.7]), "history has init_cosine without the rest of init_distance"),
    (with_history(momentum=[0, 0, 0, 0]), "history has unknown key(s) momentum"),
    (with_history(layer_norms=[[1.0]] * 4), "history.layer_norms[0] must be a list of 0 numbers"),
])
def test_a_wrong_value_is_named_with_what_it_must_be(record, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_fields(record)


def test_only_a_diverged_run_may_record_a_loss_that_is_not_finite():
    history = good()["history"] | {"train_loss": [2.3, 0.5, math.inf, math.nan]}
    check_fields(good(status="diverged", diverged_epoch=2, history=history))
    with pytest.raises(ValueError, match="history.train_loss\\[2\\] is Infinity; it must be a finite number$"):
        check_fields(good(history=history))
    with pytest.raises(ValueError, match="history.test_acc\\[3\\] is NaN; it must be a number in"):  # not an accuracy
        check_fields(good(status="diverged", diverged_epoch=2,
                          history=history | {"test_acc": [0.1, 0.5, 0.5, math.nan]}))
    with pytest.raises(ValueError, match="diverged_epoch is null; it must be a whole number >= 0"):
        check_fields(good(status="diverged", history=history))
