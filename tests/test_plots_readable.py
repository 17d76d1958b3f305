"""Figures a user reads at a glance (issue #42): one line style per reference, labels that do not
overlap, plain log labels, whole-number k, the chosen config marked, dots on 0 drawn, the
``--quick`` banner, Fig. 1a's colour bars, a samples legend off the data; and the verdicts the
figures and tables share (*beats uniform* with W1, +EMA rows that equal their raw rows)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lipgan.study import figure, references, summary, tables, tune, tune_report


@pytest.fixture
def plt():
    from lipgan.plots import pyplot

    yield pyplot()
    pyplot().close("all")


def _ok(constraint, seed, steps=1000, bindings=(), **metrics):
    cell = {"dataset": "ring", "constraint": constraint, "seed": seed, "steps": steps}
    cell |= {"eval_samples": 2500, "bindings": list(bindings), "eval_every": 250}
    curve = [
        {"step": s, "seconds": s / 100, "modes_covered": 8, "high_quality_fraction": 0.9}
        | {"reverse_kl": 0.01, "sliced_w1": 0.02}
        for s in (0, steps // 2, steps)
    ]
    base = {"modes_covered": 8, "num_modes": 8, "high_quality_fraction": 0.9, "reverse_kl": 0.01}
    return {
        "status": "ok",
        "cell": cell,
        "metrics": base | {"w1": 0.05} | metrics,
        "seconds_per_iteration": 0.01,
        "curve": curve,
    }


def _ring_references() -> dict:
    """Every reference row of the ring, made up (what is drawn is checked, not what was measured)."""
    real = {"modes_covered": 8, "high_quality_fraction": 0.98, "reverse_kl": 0.001, "w1": 0.03}
    box = {"modes_covered": 5.7, "high_quality_fraction": 0.004, "reverse_kl": 0.47, "w1": 0.36}
    support = {"modes_covered": 8, "high_quality_fraction": 0.08, "reverse_kl": 0.0, "w1": 0.19}
    expected = {k: v for k, v in box.items() if k != "w1"}
    rows = {
        references.REAL: {"what": "sampler", "cells": [real, real]},
        references.BOX: {"what": "[-1, 1]²", "cells": [box, box]},
        references.SUPPORT: {"what": "circle", "cells": [support, support]},
        references.BOX_EXPECTED: {"what": "3 draws", "cells": [expected] * 3},
    }
    floor = {"n": 2500, "pairs": 3, "mean": 0.03, "se": 0.001}
    return {"ring": {"rows": rows, "floor": floor}}  # no toy_set: no real points to draw


def _legend_styles(fig) -> dict:
    """{label: (dash pattern, colour)} of every line in the figure's legends."""
    from matplotlib.colors import to_hex
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D

    styles = {}
    for legend in fig.findobj(Legend):
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if isinstance(handle, Line2D):  # the dashes as drawn (matplotlib keeps no getter)
                styles[text.get_text()] = (str(handle._dash_pattern), to_hex(handle.get_color()))
    return styles


def test_every_reference_line_has_its_own_style_in_the_study_figure(tmp_path, plt):
    results = [_ok("gp", s) for s in range(2)] + [_ok("clip", s, w1=0.5) for s in range(2)]
    fig = figure.draw(tmp_path, results, _ring_references())
    styles = _legend_styles(fig)
    names = [
        references.REAL,
        references.BOX,
        references.SUPPORT,
        references.BOX_EXPECTED,
        figure.PACGAN4,
    ]
    assert set(names) <= set(styles), styles
    assert len({styles[n] for n in names}) == len(names), {n: styles[n] for n in names}


@pytest.mark.slow
def test_the_curve_panels_bottom_labels_do_not_overlap(tmp_path, plt):
    results = [_ok("gp", s) for s in range(2)]
    fig = figure.draw(tmp_path, results, _ring_references())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    bottom = [ax for ax in fig.get_axes() if ax.get_xlabel().startswith("training seconds")]
    assert len(bottom) == len(figure.CURVE_PANELS)
    boxes = sorted(
        (ax.xaxis.label.get_window_extent(renderer) for ax in bottom), key=lambda b: b.x0
    )
    for left, right in zip(boxes, boxes[1:], strict=False):
        assert left.x1 < right.x0, (left, right)
    # and the legend sits beside the panels, not on them
    axes_right = max(ax.get_window_extent(renderer).x1 for ax in bottom)
    legends = [leg for leg in fig.findobj(lambda a: type(a).__name__ == "Legend")]
    beside = [leg for leg in legends if "gp" in [t.get_text() for t in leg.get_texts()]]
    assert beside and all(leg.get_window_extent(renderer).x0 >= axes_right for leg in beside)


def test_beats_uniform_compares_w1_too_and_says_which_metrics():
    refs = _ring_references()
    ref_stats = {n: summary._stats(r["cells"]) for n, r in refs["ring"]["rows"].items()}
    uniform = summary.uniform_reference(ref_stats)
    # the expected row's mode metrics, the box row's W1 (the expected row has none)
    assert uniform["w1"][0] == pytest.approx(0.36)
    assert uniform["modes_covered"] == ref_stats[references.BOX_EXPECTED]["modes_covered"]
    close = {k: (v, 0.0, 0, 5) for k, v in (("modes_covered", 8), ("high_quality_fraction", 0.9))}
    close["reverse_kl"] = (0.01, 0.0, 0, 5)
    assert summary.beats(close | {"w1": (0.1, 0.0, 0, 5)}, uniform) == []
    # issue #42: every mode metric beaten, W1 farther from the data than noise: not a pass
    assert summary.beats(close | {"w1": (0.606, 0.0, 0, 5)}, uniform) == ["w1"]
    results = [_ok("gp", s, w1=0.606) for s in range(2)]
    md = tables.markdown({"steps": 1000, "seeds": 2, "eval_samples": 2500}, results, "", refs)
    assert "beats uniform noise (modes, HQ, reverse KL, W1)" in md
    row = next(line for line in md.splitlines() if line.startswith("| gp |"))
    assert "**no** (W1)" in row


def test_the_figure_marks_the_rows_that_do_not_beat_uniform(tmp_path, plt):
    results = [_ok("gp", s) for s in range(2)] + [_ok("far", s, w1=0.606) for s in range(2)]
    fig = figure.draw(tmp_path, results, _ring_references())
    ticks = {t.get_text() for ax in fig.get_axes() for t in ax.get_yticklabels()}
    assert "✗ far" in ticks and "gp" in ticks and "✗ gp" not in ticks
    assert any("W1" in t and "✗" in t for t in _texts(fig))


def _texts(fig) -> list[str]:
    found = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return [t for t in found if t]


EMA = ("train.ema_decay = 0.999", "train.ema_start = 1000")


def test_an_ema_row_that_never_averaged_says_why_in_the_table_and_the_figure(tmp_path, plt):
    short = [_ok(name, 0, steps=200, bindings=EMA) for name in ("gp", "gp +EMA")]
    assert summary.ema_never_averaged(short[1:]) == (200, 1000)
    assert summary.ema_never_averaged(short[:1]) is None  # the raw row is no EMA row
    md = tables.markdown({"steps": 200, "seeds": 1, "eval_samples": 2500}, short)
    row = next(line for line in md.splitlines() if line.startswith("| gp +EMA"))
    assert "= raw: the runs ended at 200 iterations, before the EMA starts averaging" in row
    fig = figure.draw(tmp_path, short, {})
    assert any("+EMA rows = raw" in t and "ema_start 1,000" in t for t in _texts(fig))
    # past ema_start the EMA averages: no note
    long = [_ok("gp +EMA", 0, steps=4000, bindings=EMA)]
    assert summary.ema_never_averaged(long) is None
    md = tables.markdown({"steps": 4000, "seeds": 1, "eval_samples": 2500}, long)
    assert "= raw" not in md


def test_the_tune_table_says_when_its_ema_rows_equal_the_raw_rows():
    spec = tune.TuneSpec(("gradient_penalty",), ("ring",), configs=2, steps=500)
    assert tune_report.ema_never_averaged(spec, "ring") == (500, 1000)
    longer = tune.TuneSpec(("gradient_penalty",), ("ring",), configs=2, steps=4000)
    assert tune_report.ema_never_averaged(longer, "ring") is None


def _search_rows(constraints, configs=6):
    """A made-up search: config k's W1 and HQ; one at HQ 0, one diverged (W1 1e15)."""
    rows = {}
    for i, constraint in enumerate(constraints):
        w1 = [0.05 + 0.1 * k + 0.01 * i for k in range(configs)]
        w1[-1] = 1e15
        hq = [0.9 - 0.15 * k for k in range(configs)]
        hq[-2] = 0.0
        rows[constraint] = {
            "hq": hq,
            "w1": w1,
            "failed": 0,
            "best_of_k": tune_report.expected_best(hq),
            "best_of_k_w1": [-b for b in tune_report.expected_best([-w for w in w1])],
        }
    return {"ring": rows}


def test_the_tune_figure_reads_at_a_glance(plt):
    from matplotlib.ticker import LogLocator

    from lipgan.study.tune_figure import draw

    constraints = ("gradient_penalty", "weight_clip")
    spec = tune.TuneSpec(constraints, ("ring",), configs=6)
    chosen = {("ring", c): {"trial": 0} for c in constraints}
    fig = draw(spec, _search_rows(constraints), chosen, _ring_references())
    fig.canvas.draw()
    axes = fig.get_axes()
    # k in whole configs
    for ax in [a for a in axes if a.get_xlabel().startswith("configs tried")]:
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert labels and all(label.isdigit() for label in labels), labels
    # log W1 axes in plain decimals, not 1.12×10⁰ or 1e+14: the diverged config is off the scale
    logs = [a for a in axes if a.get_yscale() == "log"]
    assert len(logs) == 2
    for ax in logs:
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert labels and not any("\\times" in x or "e+" in x or "$" in x for x in labels), labels
        assert isinstance(ax.yaxis.get_major_locator(), LogLocator)
        assert ax.get_ylim()[1] < 100
    # the chosen config: a star per constraint, in the W1 and the HQ dot panels
    stars = [c for ax in axes for c in ax.collections if c.get_label() == "chosen config"]
    assert len(stars) == 2 * len(constraints)
    w1_stars = sorted(float(s.get_offsets()[0][1]) for s in stars)[: len(constraints)]
    assert w1_stars == pytest.approx([0.05, 0.06])
    # a config at 0 % high quality is drawn past the frame, not hidden under it
    hq_dots = [a for a in axes if a.get_title().endswith("high quality at 1,000 iterations")]
    assert hq_dots and hq_dots[0].get_ylim()[0] < 0
    zero = [c for c in hq_dots[0].collections if np.any(np.asarray(c.get_offsets())[:, 1] == 0.0)]
    assert zero and not any(c.get_clip_on() for c in zero)
    # titles fit the figure
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    for ax in axes:
        box = ax.title.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= width, ax.get_title()
    assert any("off the scale" in t for t in _texts(fig))


def _fig1_result(quick: bool) -> dict:
    g = 16
    xs = np.linspace(-2, 2, g)
    surface = (np.add.outer(xs**2, xs)).tolist()
    points = np.zeros((4, 2)).tolist()
    panel = {"surface": surface, "real": points, "fake": points}
    kinds = ("weight_clip", "gradient_penalty")
    return {
        "quick": quick,
        "settings": {"lim": 2, "grid": g, "b_depth": 3},
        "fig1a": {t: {k: panel for k in kinds} for t in ("8gaussians", "swissroll")},
        "fig1b": {
            "layer_grad_norms": {
                "weight_clip_c0.01": [1e-3, 1e-2, 1e-1],
                "gradient_penalty": [1.0] * 3,
            },
            "weight_histograms": {},
        },
    }


def test_fig1_says_quick_and_fig1a_has_colour_bars(plt):
    from lipgan.plots.fig1 import QUICK_BANNER, draw_fig1a, draw_fig1b

    quick = draw_fig1a(_fig1_result(True))
    assert QUICK_BANNER in quick.get_suptitle() and "QUICK (smoke-test budget" in QUICK_BANNER
    # one colour bar per panel (4 panels): an axes labelled as the critic's value or a colorbar
    bars = [ax for ax in quick.get_axes() if hasattr(ax, "_colorbar")]
    assert len(bars) == 4
    assert any(ax.get_ylabel() == "critic value D(x)" for ax in bars)
    assert QUICK_BANNER in draw_fig1b(_fig1_result(True)).get_suptitle()
    full = draw_fig1a(_fig1_result(False))
    assert QUICK_BANNER not in full.get_suptitle()
    assert QUICK_BANNER not in draw_fig1b(_fig1_result(False)).get_suptitle()


def test_the_samples_legend_is_outside_the_data(plt):
    from lipgan.plots.toy import draw_samples

    angles = np.arange(8) * np.pi / 4  # the ring's modes, one at (0.7, 0.7) under "upper right"
    real = np.repeat(np.stack([np.cos(angles), np.sin(angles)], axis=1), 25, axis=0)

    def critic(grid, training=False):
        return np.sin(grid[:, 0])

    fig, ax = plt.subplots(figsize=(5, 5.4), layout="constrained")
    draw_samples(ax, critic, real, real + 0.01)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.y1 <= ax.get_window_extent(renderer).y0  # below the axes: over no mode
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["generated", "real"]
    assert not math.isnan(legend.x0)
