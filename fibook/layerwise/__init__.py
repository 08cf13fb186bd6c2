"""Part III, layer-wise learning rates (Pang et al., ICML 2026): ``closed_forms`` (exact expected test losses after one
and two GD steps), ``simulation`` (sampled linear nets, the scheduler's ReLU net and gradient descent on them),
``scheduler`` (fibook's layer-balancing scheduler and its baselines), ``comparison`` (a schedule against its
baseline, paired over the same draws), ``robustness`` (split curves, transition verdicts and width windows) and
``claims``. Its paper states orders (O(1/h), O(1/√h), O(h√h)) rather than numbers; they are the named thresholds of
``claims``.
"""
