"""Where the project keeps its data and results.

``DATA_DIR`` is ``$FIBOOK_DATA`` when set, else the ``data/`` folder of this checkout. Results of sweeps live
under ``DATA_DIR / "results"``.
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
    """The folder of sweep results: ``data_dir() / "results"``."""
    return data_dir() / "results"
