"""The numbers Azulay et al. (2021) state, each typed once with where it is stated: the claims tables of Part II
read them from here.

Serves "Scale and shape in diagonal networks" (``diagonal_networks``) and "Beyond mirror descent"
(``beyond_mirror_descent``).
"""

from __future__ import annotations

from fibook.claims import Quoted

TRANSITIONS = Quoted((3e-3, 5e-5), "≈ 3e-3 vs ≈ 5e-5 (read off Figure 7.1)",
                     "Figure 7.1: the scale α where the population error of the smallest and of the largest shape "
                     "turns from sparse-like to min-ℓ2-like, read off the plot")
GD_STEPS = Quoted((222, 2816), "222–2,816 steps", "Section 6: gradient descent with η = 1e-3, stopped at loss 1e-10")
GD_DISTANCES = Quoted((1e-5, 1e-4), "final distance ~1e-5–1e-4", "Section 6: the same runs' distances to w̃_Q")
