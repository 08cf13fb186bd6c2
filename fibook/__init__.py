"""fibook: the code behind an executable book on how training forgets (or keeps) a network's initialization.

Part I (forgetting initialization), Part II (initialization shape) and Part III (layer-wise learning rates) each
have their modules; :mod:`fibook.presets` holds the sizes every experiment runs at.
"""

__version__ = "0.1.0"
