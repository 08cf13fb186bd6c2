"""Part I, forgetting initialization (Das et al. 2026): BatchNorm ResNets trained at several init scales sigma_w.

``models`` (ResNet-9 and CIFAR ResNets, sigma_w init), ``optimizers`` (the optimizer registry), ``fused``
(populations trained as one network), ``train`` (one run and its history), ``metrics`` (spread, interpolation,
repair gap, clocks), ``experiments`` (the named grids), ``analysis`` (arms from the results files), ``plots``
and ``claims`` (the chapters' verdicts).
"""
