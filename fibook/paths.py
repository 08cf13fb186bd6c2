"""Where the project keeps its data and results.

Datasets are looked for in ``$FIBOOK_DATA`` when set, else in the ``data/`` folder of this checkout. Results of
sweeps live in ``$FIBOOK_RESULTS`` when set, else in ``data/results`` of that folder; the chapters' verdicts in
``$FIBOOK_VERDICTS`` when set, else in ``data/verdicts``.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The folder that holds datasets and results (``$FIBOOK_DATA`` or ``<checkout>/data``)."""
    env = os.environ.get("FIBOOK_DATA")
    return Path(env).expanduser() if env else PROJECT_ROOT / "data"


def results_dir() -> Path:
    """The folder of sweep results: ``$FIBOOK_RESULTS`` or ``data_dir() / "results"``."""
    env = os.environ.get("FIBOOK_RESULTS")
    return Path(env).expanduser() if env else data_dir() / "results"


def verdicts_dir() -> Path:
    """The folder of verdict files (one per preset): ``$FIBOOK_VERDICTS`` or ``data_dir() / "verdicts"``."""
    env = os.environ.get("FIBOOK_VERDICTS")
    return Path(env).expanduser() if env else data_dir() / "verdicts"
