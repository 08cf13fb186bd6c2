"""The numbers Das et al. (2026) quote, each typed once with where it is stated: the claims tables, the clock
figure's anchors and the chapters read them from here.

Only the paper's abstract and secondary summaries of it (third-party reading notes, not checked against its body)
are public; each entry's ``source`` says which. Numbers the book derives from these (a clock recomputed from a
reconstructed setting) are not quoted numbers and live with the code that derives them
(:func:`fibook.forgetting.claims.reconstructed_clock`).

Serves "SGD remembers" (``sgd_remembers``), "Optimizers" (``optimizers``), "Time, learning rate, L2 and batch size"
(``time_lr_l2_batch``), "The question and the protocol" (``question``) and "Forgetting clocks" (``clocks``).
"""

from __future__ import annotations

from fibook.claims import Quoted

HEADLINE_SPREAD = Quoted(26.5, "26.5 pp", "abstract: the test-accuracy spread across σ_w of ResNet-9 on CIFAR-10, "
                                          "low-learning-rate SGD at b = 128, every run at 99.5 % train accuracy")
LONG_SPREAD = Quoted(26.0, "26 pp", "abstract (the spread is essentially unchanged after 5,000 epochs); the ≈ 26 pp "
                                    "from secondary summaries")
HEADLINE_T_SGD = Quoted(7.3e-4, "7.3e-4", "secondary summaries: T_SGD of the headline run (300 epochs, b = 128)")
LONG_T_SGD = Quoted(1.2e-2, "1.2e-2", "secondary summaries: T_SGD of the same run after 5,000 epochs")
L2_SPREAD = Quoted(0.3, "0.3 pp", "secondary summaries: the spread of SGD at η = 1e-2 with L2 λ = 1e-2")
MUON_SPREAD = Quoted(4.0, "4.0 pp", "secondary summaries: the spread Muon leaves (its setting not stated)")
