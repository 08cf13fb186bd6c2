"""Part II, initialization shape (Azulay et al., ICML 2021): ``closed_forms`` (the implicit regularizers and
their minimizers as functions of scale, shape and balancedness) and ``training`` (the trained models, gradient
flow and gradient descent that check them).
"""
