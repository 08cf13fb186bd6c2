"""The book's Part I verdicts: every row of a Part I chapter's "claim | paper | ours | agrees?" table, computed
here, one module per chapter (:data:`fibook.forgetting.claims.chapters.CHAPTERS`), with what they share in
:mod:`~fibook.forgetting.claims.conditions`.

A chapter cell that decides a verdict is one call of a function of its chapter's module; the rule behind each
verdict and its thresholds are named constants, stated in the module's docstring and in the chapter text before
the figure, and tested just above and just below each threshold. ``paper`` says what the paper reports (or that
it does not), ``ours`` the number measured here with the setting it was measured in.

Part I (forgetting initialization, Das et al. 2026) is read on the seed-averaged arms of
:mod:`fibook.forgetting.arms`. Three rules apply to every spread verdict before its threshold:

* ``SELECTION = "late"``: the optimizers, time/LR/L2/batch and clocks chapters read every run at its lowest
  validation loss over the run's second half (the selected predictor must fit the training set, and a
  40-epoch run's best validation loss often comes before it does; a long run's second half also lies after a
  short run's end, so training longer can change what is selected).
* The condition (the book's reading of the paper's headline runs, which all fit the training set): a spread
  verdict needs every sigma_w's selected predictor to interpolate (:func:`~fibook.forgetting.claims.conditions.
  condition`); an arm that does not is shown and its row says "not tested".
* ``CONFIDENCE = 0.95`` (:mod:`fibook.stats`): a spread is Das et al.'s spread of seed-means; a difference or
  a contrast of spreads (:func:`fibook.forgetting.noise.spread_difference`: bootstrapped over shared seeds and
  paired, else from each arm's own error bar) counts only when its two-sided 95 % Student-t interval, on the
  degrees of freedom that exist, excludes zero (:func:`fibook.stats.differs`). A difference with no error bar
  cannot be judged: its row says "not tested". "Equal" and "erased" need the equivalence test
  (:func:`fibook.stats.equivalent`, two one-sided tests at 5 %) against ``EQUIVALENCE_PP``; a verdict neither
  test decides is "not resolved".
* An unstable arm (a run that fit the training set and later fell below 90 % train accuracy, or diverged:
  :class:`fibook.forgetting.checkpoints.Stability`) is marked so in every label, borrows its error bar only from
  unstable arms, and every verdict it enters says so.

When each rule was fixed, and which results existed then, is in
:data:`fibook.forgetting.claims.conditions.FIXED` (the git history is the record): only the ``clock_ladder`` and
``tsgd_pair`` rules were fixed before (all but one run of) their data.

Every :class:`~fibook.claims.Claim` names its ``rule`` (the function that decided it, marked with the thresholds
it reads), the ``runs`` it read (results-store record ids) and, where its text carries numbers of the preset, a
``key`` that names it across presets. A row whose runs have not finished says "not tested yet" under the rule of
the row it stands for.
"""
