"""One run of the results store as a :class:`Record`: the object a results line holds, and the checks a line
passes when it is read.

A line is one :class:`Record` as JSON (its fields, in that order; the book's appendix "Results files" lists them,
and a test checks that it lists exactly these): ``id`` (the hash of the config), ``experiment``, ``scale``,
``status`` (``ok`` | ``diverged`` | ``failed``), ``config`` (a :class:`fibook.forgetting.config.TrainConfig`),
``summary`` (a :class:`fibook.forgetting.evaluation.Summary`), ``history`` (per-epoch lists, epoch 0 being the
initialization), ``layer_names``, ``diverged_epoch``, ``provenance`` (fibook version and git commit, torch version,
device and CPU/GPU model, wall seconds, date) and, for failed runs instead of summary, history, layer_names and
diverged_epoch, ``error`` (the traceback). Accuracies are fractions in [0, 1]. :meth:`Record.from_json` checks a
line's object against one schema (:mod:`fibook.forgetting.record_schema`: its fields, their types and ranges) and
against its file: its config, its id (the hash of that config) and its experiment and scale (those of its file).

Serves the results store (:mod:`fibook.forgetting.results`, which reads and writes these lines), the sweeps that
fill it, and every Part I chapter that reads runs (``r.config``, ``r.summary``, ``r.history``); the appendix
"Results files" (``results_format``) describes a record for readers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.evaluation import Summary
from fibook.forgetting.experiments import run_id
from fibook.forgetting.record_schema import check_fields


@dataclass(frozen=True)
class Record:
    """One run of the results store. ``summary``, ``history``, ``layer_names`` and ``diverged_epoch`` belong
    to finished runs (``ok``, ``diverged``), ``error`` to ``failed`` ones."""

    id: str
    experiment: str
    scale: str
    status: str
    config: TrainConfig
    summary: Summary | None = None
    history: dict | None = None
    layer_names: list | None = None
    diverged_epoch: int | None = None
    error: str | None = None
    provenance: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The record as its JSON line's object."""
        out = {"id": self.id, "experiment": self.experiment, "scale": self.scale, "status": self.status,
               "config": self.config.to_dict()}
        if self.status == "failed":
            out["error"] = self.error
        else:
            out |= {"summary": self.summary.to_dict(), "history": self.history, "layer_names": self.layer_names,
                    "diverged_epoch": self.diverged_epoch}
        return out | {"provenance": self.provenance}

    @classmethod
    def from_json(cls, obj: dict, path: Path) -> Record:
        """The record of a JSON line of file ``path`` (``NAME/PRESET.jsonl``); ``ValueError`` says what is wrong
        unless it fits the schema (:func:`.record_schema.check_fields`), has a valid config and summary,
        ``id`` equal to that config's hash, and the experiment and scale of its file."""
        check_fields(obj)
        try:
            config = TrainConfig(**obj["config"])
        except (TypeError, ValueError) as e:
            raise ValueError(f"config is not a valid training config: {e}") from None
        if obj["id"] != run_id(config):
            raise ValueError(f"id {obj['id']!r} is not its config's hash {run_id(config)!r}")
        for key, expected in (("experiment", path.parent.name), ("scale", path.stem)):
            if obj[key] != expected:
                raise ValueError(f"{key} {obj[key]!r} does not match its file's {expected!r}")
        kept = {f: v for f, v in obj.items() if f not in ("config", "summary")}
        if obj["status"] == "failed":
            return cls(config=config, **kept)
        try:
            summary = Summary(**obj["summary"])
        except TypeError as e:
            raise ValueError(f"summary is not a run summary: {e}") from None
        return cls(config=config, summary=summary, **kept)
