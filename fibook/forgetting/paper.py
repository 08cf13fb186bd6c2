"""The numbers Das et al. (2026) quote, each typed once with where it is stated: the claims tables, the clock
figure's anchors and the chapters read them from here.

Only the paper's abstract and secondary summaries of it (third-party reading notes, not checked against its body)
are public; each entry's ``source`` says which. The clocks of the paper's runs in the book's reconstruction of its
setting (:func:`reconstructed_clock`) are derived from these, not quoted, and say so wherever they are printed.

Serves "SGD remembers" (``sgd_remembers``), "Optimizers" (``optimizers``), "Time, learning rate, L2 and batch size"
(``time_lr_l2_batch``), "The question and the protocol" (``question``) and "Forgetting clocks" (``clocks``).
"""

from __future__ import annotations

from fibook.claims import Quoted
from fibook.forgetting.experiments import ADAM_LR, ADAMW_WEIGHT_DECAY, GRIDS, MUON_LR
from fibook.forgetting.metrics import forgetting_clocks
from fibook.forgetting.optimizers import get_optimizer

HEADLINE_SPREAD = Quoted(26.5, "26.5 pp", "abstract: the test-accuracy spread across σ_w of ResNet-9 on CIFAR-10, "
                                          "low-learning-rate SGD at b = 128, every run at 99.5 % train accuracy")
LONG_SPREAD = Quoted(26.0, "26 pp", "abstract (the spread is essentially unchanged after 5,000 epochs); the ≈ 26 pp "
                                    "from secondary summaries")
HEADLINE_T_SGD = Quoted(7.3e-4, "7.3e-4", "secondary summaries: T_SGD of the headline run (300 epochs, b = 128)")
LONG_T_SGD = Quoted(1.2e-2, "1.2e-2", "secondary summaries: T_SGD of the same run after 5,000 epochs")
L2_SPREAD = Quoted(0.3, "0.3 pp", "secondary summaries: the spread of SGD at η = 1e-2 with L2 λ = 1e-2")
MUON_SPREAD = Quoted(4.0, "4.0 pp", "secondary summaries: the spread Muon leaves (its setting not stated)")

# The paper's runs in the book's reconstruction of its setting (only T_SGD's two values are quoted; the rest are
# the book's conventions): 312 steps an epoch at b = 128 for 300 epochs, (eta, lambda) per arm key
# (:func:`fibook.forgetting.claims.conditions.arm_key`)
RECONSTRUCTED_STEPS = 312 * 300
RECONSTRUCTED_RUNS = {"sgd": (GRIDS["paper"].sgd_lr, 0.0), "msgd": (GRIDS["paper"].sgd_lr, 0.0),
                      "sgd+L2": GRIDS["paper"].l2, "adam": (ADAM_LR, 0.0), "adamw": (ADAM_LR, ADAMW_WEIGHT_DECAY),
                      "muon": (MUON_LR, 0.0)}


def reconstructed_clock(key: str) -> tuple[str, float]:
    """The mechanism's clock of the paper's run of arm ``key`` in the book's reconstruction
    (:data:`RECONSTRUCTED_RUNS`, :func:`fibook.forgetting.metrics.forgetting_clocks` over
    :data:`RECONSTRUCTED_STEPS` constant steps at b = 128): T_SGD 7.3e-4 for SGD and momentum SGD (raw eta),
    T_L2 9.36 for SGD + L2, T_adapt 93.6 for Adam and AdamW, 1,872 for Muon."""
    lr, wd = RECONSTRUCTED_RUNS[key]
    name = "T_L2" if key == "sgd+L2" else get_optimizer(key).clock
    return name, forgetting_clocks([lr] * RECONSTRUCTED_STEPS, 128, wd)[name]


# the paper column of the SGD + L2 rows (the optimizers, time_lr_l2_batch and clocks chapters)
L2_PAPER = (f"≈ {L2_SPREAD} at η = λ = 1e-2 (secondary; T_L2 = {reconstructed_clock('sgd+L2')[1]:.3g} if run 300 "
            "epochs, derived)")
