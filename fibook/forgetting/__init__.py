"""Part I, forgetting initialization (Das et al. 2026): BatchNorm ResNets trained at several init scales sigma_w.

``data``, ``splits`` and ``batches`` (the dataset files, the protocol's splits and their batches), ``models``
(ResNet-9 and CIFAR ResNets, sigma_w init), ``optimizers`` (the optimizer registry), ``schedules`` (the learning-rate
schedules), ``devices`` (where and in what precision a run computes), ``fused`` (populations trained as one network),
``config`` (what defines a run), ``train`` (one run and its history), ``run_state`` (a run as it trains, and its
result), ``evaluation`` (its scores at every epoch and its summary), ``metrics`` (spread, interpolation, repair gap,
clocks), ``experiments`` (the named grids), ``results``, ``records``, ``record_schema``, ``sweep``, ``cluster``,
``progress`` and ``cost`` (the results store and its records, the sweeps that fill it, where their runs train, a run's
state saved part way, and what they cost), ``checkpoints`` (the checkpoint a selection rule reads, a run's stability),
``clocks`` (the clock a run's mechanism runs on), ``arms`` (runs grouped into seed-averaged arms), ``loading`` (arms
from the results files), ``noise`` (the noise floor and the error bars of spreads), ``collapse`` (every arm on its
mechanism's clock), ``paper`` (the numbers the paper quotes and its runs' reconstructed clocks), ``plots`` and
``claims`` (the chapters' verdicts, one module per chapter).
"""
