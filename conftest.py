"""Test-session settings shared by the unit tests and the notebook checks.

One thread per process keeps floating-point sums identical from run to run (stored notebook outputs depend on
it). With ``--nbval``/``--nbval-lax``, collecting no notebook at all is an error, not a silent pass.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_finish(session):
    opt = session.config.option
    if getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False):
        notebooks = {str(item.fspath) for item in session.items if str(item.fspath).endswith(".ipynb")}
        if not notebooks:
            raise RuntimeError("--nbval was given but no notebook was collected; "
                               "pass the chapters/ folder (see README's test command)")
