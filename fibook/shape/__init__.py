"""Part II, initialization shape (Azulay et al., ICML 2021): the implicit regularizers and their minimizers as
functions of scale, shape and balancedness, in ``diagonal`` (diagonal networks, Theorem 4.1), ``neuron`` (one hidden
neuron and two-layer linear networks, Theorem 6.1) and ``interpolators`` (the regression problem, the dual solver and
the reference interpolators they share); ``sparse_recovery`` (the sparse-regression experiment of Figure 7.1);
``training`` (the trained models, gradient flow and gradient descent that check them); ``paper`` (the numbers the
paper states); ``claims``.
"""
