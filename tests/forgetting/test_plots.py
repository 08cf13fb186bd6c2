"""Part I figures (fibook.forgetting.plots): the styles that tell arms and mechanisms apart, the legends, and what
each figure draws, read back from its matplotlib axis."""

import dataclasses

import numpy as np
import pytest
from synthetic import rec

from fibook.forgetting.arms import arms
from fibook.forgetting.collapse import clock_point, spread_and_direction


def test_the_direction_figures_share_each_mechanisms_colour_and_marker():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fibook.forgetting import plots

    def arm(optimizer, lr):
        records = [dataclasses.replace(r, history={**r.history, "init_cosine": [1.0, 0.5, 0.4, 0.3]})
                   for r in (rec(0.1, 0, 0.9, 1, 1.0, optimizer=optimizer, lr=lr),
                             rec(2.5, 0, 0.8, 1, 1.0, optimizer=optimizer, lr=lr))]
        (a,) = arms(records)
        return a

    arm_list = [arm("adam", 1e-3), arm("msgd", 1e-2), arm("adam", 1e-2)]
    fig, ax = plt.subplots()
    plots.direction_vs_sigma(arm_list, ax, legend=None)
    lines = ax.get_lines()
    adam, momentum = plots.MECHANISM_COLORS["Adam"], plots.MECHANISM_COLORS["momentum SGD"]
    assert [tuple(matplotlib.colors.to_rgba(ln.get_color())) for ln in lines] == [tuple(adam), tuple(momentum),
                                                                                  tuple(adam)]
    assert [ln.get_marker() for ln in lines] == ["^", "p", "^"]
    assert [ln.get_linestyle() for ln in lines] == ["-", "-", "--"]  # the second Adam arm: a style of its own
    # read at its raw step momentum SGD does not count on T_SGD, but its direction and spread are read like any
    # fitted arm's
    point = clock_point("x", arm_list[1], None, momentum="raw")
    assert not point.included and spread_and_direction([point]) == [(pytest.approx(0.5),
                                                                     pytest.approx(point.spread.value))]
    plt.close(fig)


@pytest.fixture
def ax():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(layout="constrained")
    yield ax
    plt.close(fig)


def test_coinciding_lines_are_dodged_symmetrically_a_fixed_number_of_decades_apart():
    from fibook.forgetting.plots import dodge_factor

    assert dodge_factor(0, 1) == 1.0
    for n in (2, 3, 4, 5):
        factors = np.array([dodge_factor(k, n, dodge=0.02) for k in range(n)])
        assert np.prod(factors) == pytest.approx(1.0, rel=1e-12)  # centred on the true values in log
        assert factors[1:] / factors[:-1] == pytest.approx(np.full(n - 1, 10**0.02), rel=1e-12)


def test_each_line_has_its_own_marker_and_style_and_several_methods_their_own_colours():
    from fibook.forgetting import plots

    def arm(optimizer):
        (a,) = arms([rec(s, 0, 0.9, 1, 1.0, optimizer=optimizer) for s in (0.1, 2.5)])
        return a

    styles = [plots.arm_style(k) for k in range(9)]
    assert [st["marker"] for st in styles] == [*plots.ARM_MARKERS, plots.ARM_MARKERS[0]]
    assert [st["ls"] for st in styles[:5]] == [*plots.ARM_LINESTYLES, plots.ARM_LINESTYLES[0]]
    assert len({(st["marker"], st["ls"]) for st in styles[:8]}) == 8
    one_method = [arm("adam"), arm("adam")]
    assert "color" not in plots.arm_style(1, one_method)  # arms of one method take the colour cycle
    mixed = [arm("adam"), arm("muon")]
    assert plots.arm_style(1, mixed)["color"] is plots.MECHANISM_COLORS["Muon"]


def test_a_legend_goes_below_the_figure_beside_the_axis_inside_or_nowhere(ax):
    from fibook.forgetting.plots import place_legend

    ax.plot([1, 2], [3, 4], label="an arm")
    place_legend(ax, None)
    assert ax.get_legend() is None and ax.figure.legends == []
    place_legend(ax, "right")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["an arm"]
    assert ax.figure.legends == []
    ax.get_legend().remove()
    place_legend(ax, "below")
    assert ax.get_legend() is None
    (legend,) = ax.figure.legends
    assert [t.get_text() for t in legend.get_texts()] == ["an arm"]
    with pytest.raises(ValueError, match="legend must be 'below', 'right', 'inside' or None, got 'top'"):
        place_legend(ax, "top")


def test_a_stacked_figures_legend_names_each_label_once_in_order_of_appearance():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fibook.forgetting.plots import figure_legend

    fig, (top, bottom) = plt.subplots(2, layout="constrained")
    top.plot([1], [1], label="SGD")
    top.plot([1], [2], label="Adam")
    bottom.plot([1], [3], label="Adam")
    bottom.plot([1], [4], label="Muon")
    figure_legend(fig)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["SGD", "Adam", "Muon"]
    plt.close(fig)


def test_the_accuracy_figure_draws_seed_means_with_their_range_and_marks_a_checkpoint_that_does_not_fit(ax):
    from fibook.forgetting import plots

    records = [rec(0.1, 0, 0.90, 1, 1.0), rec(0.1, 1, 0.90, None, 1.0),  # seed 1 never fits at sigma_w = 0.1
               rec(2.5, 0, 0.80, 1, 1.0), rec(2.5, 1, 0.82, 1, 1.0)]
    (arm,) = arms(records)
    assert plots.seeds_per_sigma(arm) == 2 and plots.seeds_per_sigma(arms(records[:3])[0]) == 1
    plots.accuracy_vs_sigma([arm], ax, legend="right")
    mean_line = ax.get_lines()[0]
    assert list(mean_line.get_xdata()) == [0.1, 2.5]  # one arm: not dodged
    assert list(mean_line.get_ydata()) == pytest.approx([90.0, 81.0])
    (bars,) = ax.containers  # the min-max over seeds, as capped bars
    (segments,) = bars.lines[2]  # the vertical bars (no horizontal ones)
    assert [tuple(np.asarray(seg)[:, 1]) for seg in segments.get_segments()] == [pytest.approx((90.0, 90.0)),
                                                                                  pytest.approx((80.0, 82.0))]
    points = {ln.get_xdata()[0]: ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1}
    assert points[0.1].get_markerfacecolor() == "white"  # hollow: a seed's selected checkpoint does not fit
    assert points[2.5].get_markerfacecolor() == mean_line.get_color()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "SGD (η = 0.01): spread 9.0 pp", "hollow: a selected checkpoint < 99.5 % train",
        "bars: min–max over seeds"]
    assert ax.get_xscale() == "log"


def test_the_ladder_marks_the_arms_whose_selected_predictors_do_not_fit_and_names_each_precision(ax):
    from fibook.forgetting import plots

    def rung(lr, epochs, tau, precision):
        (a,) = arms([rec(s, 0, 0.9 - 0.02 * (s > 1), tau, 1.0, optimizer="adam", lr=lr, epochs=epochs,
                         precision=precision) for s in (0.1, 2.5)])
        return a

    rungs = [rung(0.01, 3, None, "fp32"), rung(0.005, 6, 1, "fp32")]  # the largest rate does not fit
    plots.ladder_panel(rungs, None, ax, 2.0, others=[rung(0.01, 3, 1, "bf16")], legend="right")
    (cross,) = [ln for ln in ax.get_lines() if ln.get_marker() == "x"]
    assert list(cross.get_xdata()) == [0.01] and list(cross.get_ydata()) == pytest.approx([2.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "a selected predictor < 99.5 % train (not judged)", "±2 pp of the largest rate's spread", "ladder (fp32)",
        "same (η, epochs) in bf16, another experiment"]


def test_the_l2_rows_draw_each_arm_that_does_not_fit_hollow_above_its_error_bar(ax):
    from fibook.forgetting import plots

    def l2_arm(wd, tau):
        (a,) = arms([rec(s, 0, 0.9 - 0.02 * (s > 1), tau, 1.0, wd=wd) for s in (0.1, 2.5)])
        return a

    plots.l2_rows_panel({"η = 0.01, 3 epochs": [l2_arm(0.0, 1), l2_arm(0.06, None)]}, None, ax, legend="right")
    (row,) = ax.containers
    data_line = row.lines[0]
    assert list(data_line.get_xdata()) == pytest.approx([0.0, 0.1])  # T_L2 at the selected epoch, 1 of 3: 5 λ / 3
    (hollow,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
    assert list(hollow.get_xdata()) == pytest.approx([0.1]) and hollow.get_markerfacecolor() == "white"
    assert hollow.get_zorder() > data_line.get_zorder()  # drawn over the error bar's filled marker
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "hollow: a selected checkpoint < 99.5 % train", "η = 0.01, 3 epochs"]
