"""The study report's honesty parts: reference rows, infinite values, time to target, the W1 floor."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lipgan.study import figure, references, report, summary, tables
from lipgan.study.intervals import bootstrap_interval


def _ok(dataset, constraint, seed, curve=None, **metrics):
    cell = {"dataset": dataset, "constraint": constraint, "seed": seed, "steps": 1000}
    cell |= {"eval_samples": 2500, "bindings": [], "eval_every": 250}
    out = {"status": "ok", "cell": cell, "metrics": metrics, "seconds_per_iteration": 0.01}
    if curve is not None:
        out["curve"] = curve
    return out


def test_infinite_values_are_counted_and_shown_not_dropped():
    assert summary.mean_se([math.inf, math.inf, 0.05])[2:] == (2, 3)
    results = [_ok("ring", "gp", k, reverse_kl=v, w1=0.1) for k, v in enumerate([1e9, 0.05])]
    results[0]["metrics"]["reverse_kl"] = math.inf
    results.append(_ok("ring", "gp", 2, reverse_kl=math.inf, w1=0.1))
    md = tables.markdown({"steps": 1000, "seeds": 3, "eval_samples": 2500}, results)
    row = next(line for line in md.splitlines() if line.startswith("| gp |"))
    assert "0.05 [∞ in 2/3]" in row
    every = [_ok("ring", "x", k, reverse_kl=math.inf) for k in range(2)]
    assert tables._fmt(summary.summarize(every)["ring"]["x"]["stats"]["reverse_kl"], 1, 2) == (
        "∞ [all 2]"
    )


def _circle_hq_by_hand(sigma=0.01, modes=8):
    """Uniform on the unit circle: a point is high quality within 3σ of a centre on the circle,
    i.e. within an arc of half-angle 2·asin(3σ/2) around each of the 8 centres."""
    return modes * 2 * 2 * math.asin(3 * sigma / 2) / (2 * math.pi)


def test_reference_samplers_score_as_computed_by_hand():
    from lipgan.data.toy import MODE_CENTERS, MODE_STD
    from lipgan.metrics.toy import mode_metrics

    rng = np.random.default_rng(0)
    ring = references.samplers("2d_ring")
    circle = mode_metrics(ring[references.SUPPORT][0](200_000, rng), MODE_CENTERS["2d_ring"], 0.01)
    assert circle["modes_covered"] == 8
    assert circle["high_quality_fraction"] == pytest.approx(_circle_hq_by_hand(), rel=0.03)
    assert circle["reverse_kl"] < 1e-3  # evenly spread over the 8 arcs
    # Uniform on [-1, 1]²: 4 centres on the box's edges (half a disc inside), 4 inside.
    box = mode_metrics(ring[references.BOX][0](400_000, rng), MODE_CENTERS["2d_ring"], 0.01)
    disc = math.pi * (3 * 0.01) ** 2
    assert box["high_quality_fraction"] == pytest.approx((4 * 0.5 + 4) * disc / 4, rel=0.05)
    # The grid on [-4, 4]²: corner centres a quarter disc, edge ones half, 9 inside.
    grid = references.samplers("2d_grid")
    assert set(grid) == {references.REAL, references.BOX}  # no simple support
    g = mode_metrics(grid[references.BOX][0](400_000, rng), MODE_CENTERS["2d_grid"], 0.05)
    disc = math.pi * (3 * MODE_STD["2d_grid"]) ** 2
    assert g["high_quality_fraction"] == pytest.approx((4 / 4 + 12 / 2 + 9) * disc / 64, rel=0.05)
    real = mode_metrics(grid[references.REAL][0](100_000, rng), MODE_CENTERS["2d_grid"], 0.05)
    assert real["high_quality_fraction"] == pytest.approx(1 - math.exp(-4.5), abs=0.003)


def test_reference_rows_with_the_study_protocol_and_a_floor_with_its_error():
    rows = references.evaluate("2d_ring", 1000, seeds=2)
    seeded = {references.REAL, references.BOX, references.SUPPORT}
    assert set(rows) == seeded | {references.BOX_EXPECTED}
    for name in seeded:
        assert len(rows[name]["cells"]) == 2
    # the expectation: many draws, not the study's seeds (one low draw flatters every row)
    assert len(rows[references.BOX_EXPECTED]["cells"]) == references.EXPECTATION_DRAWS
    assert all(c["modes_covered"] == 8 for c in rows[references.SUPPORT]["cells"])
    floor = references.compute("ring", 1000, seeds=1, pairs=4)["floor"]
    assert floor["pairs"] == 4 and floor["se"] > 0 and 0 < floor["mean"] < 0.2
    # neither points nor images: no rows (image data sets': tests/test_image_study.py)
    assert references.compute("no_such_data_set", 1000, seeds=1) is None


def test_time_to_target_is_the_first_curve_point_meeting_all_three_and_a_censored_median():
    target = summary.THRESHOLDS["ring"]
    good = {"modes_covered": 8, "high_quality_fraction": 0.96, "reverse_kl": 0.01}
    curve = [
        {
            "step": 0,
            "seconds": 0.0,
            "modes_covered": 0,
            "high_quality_fraction": 0.0,
            "reverse_kl": math.inf,
        },
        {"step": 250, "seconds": 10.0, **good, "high_quality_fraction": 0.5},
        {"step": 500, "seconds": 20.0, **good},
        {"step": 750, "seconds": 30.0, **good},
    ]
    assert summary.to_target({"curve": curve}, target) == (500, 20.0)
    never = [{**p, "high_quality_fraction": 0.5} for p in curve]
    results = [
        _ok("ring", "gp", 0, curve=curve),
        _ok("ring", "gp", 1, curve=curve),
        _ok("ring", "gp", 2, curve=never),
    ]
    row = summary.summarize(results)["ring"]["gp"]
    assert row["to_target"] == {"iterations": 500, "seconds": 20.0, "reached": 2, "of": 3}
    assert summary.censored_median([500], 3) == math.inf  # 2 of 3 never got there
    md = tables.markdown({"steps": 1000, "seeds": 3, "eval_samples": 2500}, results)
    line = next(x for x in md.splitlines() if x.startswith("| gp |"))
    assert "500 (2/3)" in line and "20 (2/3)" in line


def _hq_curve(values, steps=1000):
    """A curve every 125 iterations with these high-quality fractions (steps 125 … 1000)."""
    return [
        {"step": 125 * (k + 1), "seconds": k, "modes_covered": 8, "reverse_kl": 0.01}
        | {"high_quality_fraction": v}
        for k, v in enumerate(values)
    ]


def test_the_last_quarter_tells_a_curve_still_rising_from_a_flat_one():
    # Third quarter: steps 625, 750; last quarter: 875, 1000 (steps 500 and before do not count).
    rising = _hq_curve([0.0, 0.1, 0.2, 0.9, 0.5, 0.6, 0.7, 0.8])
    assert summary.late_change(_ok("ring", "a", 0, curve=rising)) == pytest.approx(0.2)
    flat = _hq_curve([0.0, 0.1, 0.2, 0.3, 0.91, 0.89, 0.90, 0.90])
    assert summary.late_change(_ok("ring", "b", 0, curve=flat)) == pytest.approx(0.0)
    assert summary.late_change(_ok("ring", "c", 0, curve=rising[:5])) is None  # no last quarter
    results = [
        _ok("ring", "climbing", 0, curve=rising),
        _ok("ring", "climbing", 1, curve=_hq_curve([0] * 4 + [0.5, 0.5, 0.75, 0.75])),
        _ok("ring", "stalled", 0, curve=flat),
        _ok("ring", "stalled", 1, curve=_hq_curve([0] * 4 + [0.9, 0.9, 0.92, 0.88])),
        _ok("ring", "alone", 0, curve=rising),
    ]
    by_row = summary.summarize(results)["ring"]
    climbing = by_row["climbing"]
    assert climbing["late_change"][:2] == pytest.approx((0.225, 0.025))
    # two seeds at +20 and +25 points: every resampled mean lies between them
    assert climbing["late_interval"] == pytest.approx((0.2, 0.25))
    assert tables.trend(climbing["late_change"], climbing["late_interval"]) == (
        "+22.5 [+20.0, +25.0] rising"
    )
    stalled = by_row["stalled"]
    assert tables.trend(stalled["late_change"], stalled["late_interval"]).endswith(" flat")
    alone = by_row["alone"]
    assert alone["late_interval"] is None  # one seed: no interval, no verdict
    assert tables.trend(alone["late_change"], alone["late_interval"]) == "+20.0"
    dropping = [-0.2, -0.3]
    assert tables.trend(summary.mean_se(dropping), bootstrap_interval(dropping)) == (
        "-25.0 [-30.0, -20.0] falling"
    )
    md = tables.markdown({"steps": 1000, "seeds": 2, "eval_samples": 2500}, results)
    assert "HQ change, last quarter (pp)" in md
    line = next(x for x in md.splitlines() if x.startswith("| climbing |"))
    assert "+22.5 [+20.0, +25.0] rising" in line


def test_rows_that_do_not_beat_uniform_noise_are_marked():
    box = {"modes_covered": 5.4, "high_quality_fraction": 0.0036, "reverse_kl": 0.49}
    reference = {k: (v, 0.0, 0, 5) for k, v in box.items()}
    learned = {"modes_covered": (8, 0, 0, 5), "high_quality_fraction": (0.9, 0, 0, 5)}
    learned["reverse_kl"] = (0.01, 0, 0, 5)
    assert summary.beats(learned, reference) == []
    noisy = {**learned, "reverse_kl": (0.5, 0, 0, 5)}
    assert summary.beats(noisy, reference) == ["reverse_kl"]
    partly_infinite = {**learned, "reverse_kl": (0.01, 0, 1, 5)}
    assert summary.beats(partly_infinite, reference) == ["reverse_kl"]


def test_critic_gap_over_w1_column():
    r = _ok("ring", "gp", 0, critic_wasserstein=0.21, w1=0.1)
    assert summary.cell_values(r)["critic_gap_ratio"] == pytest.approx(2.1)
    md = tables.markdown({"steps": 1000, "seeds": 1, "eval_samples": 2500}, [r])
    assert "critic gap / W1" in md and "2.10" in md


def test_a_smoke_test_says_so_and_pacgan_rows_state_their_setup():
    results = [_ok("ring", "gp", 0, w1=0.1)]
    spec = {"steps": 100, "seeds": 1, "eval_samples": 2500, "smoke_test": True}
    md = tables.markdown(spec, results)
    assert "SMOKE TEST" in md and "not results" in md
    assert "non-Wasserstein" in md and "maxout" in md and "not the same training" in md


def test_report_only_reads_the_finished_cells_and_says_the_report_is_partial(tmp_path):
    import json

    from lipgan.errors import ConfigError
    from lipgan.study import StudySpec, run_study, runner

    spec = StudySpec(constraints=("gradient_penalty",), datasets=("ring",), seeds=2, steps=100)
    with pytest.raises(ConfigError, match="no finished cell"):
        run_study(spec, tmp_path, report_only=True)
    first = spec.cells()[0]
    run_dir = runner.cell_dir(tmp_path, first)
    run_dir.mkdir(parents=True)
    result = _ok("ring", "gradient_penalty", 0, w1=0.1) | {"cell": first.as_dict()}
    (run_dir / "result.json").write_text(json.dumps(result))
    assert runner.finished_results(spec, tmp_path) == [result]
    md = tables.markdown(spec.as_dict(), [result], total=len(spec.cells()))
    assert "PARTIAL: 1 of 2 cells finished" in md
    assert "PARTIAL" not in tables.markdown(spec.as_dict(), [result], total=1)


def test_figure_labels_are_short_and_the_table_keeps_the_spec():
    spec = "bjorck:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin"
    assert figure.short_label(spec) == "bjorck [maxmin]"
    assert figure.short_label("gradient_penalty:every=4") == "gradient_penalty [every=4]"
    assert figure.short_label("r1") == "r1"
    assert figure.short_label(spec + " +EMA") == "bjorck [maxmin] +EMA"  # a tuned study's EMA row
    md = tables.markdown({"steps": 1000, "seeds": 1, "eval_samples": 2500}, [_ok("ring", spec, 0)])
    assert f"| {spec} |" in md


# -- the figure: read at a glance (checked on its structure, not its pixels) -----------------------
def _figure_study(tmp_path, steps=1000):
    """Two rows × two seeds of a ring study with curves and samples on disk, and its reference
    rows (real data only, made up: what is drawn is checked, not what was measured)."""
    from lipgan.data.toy import SAMPLERS
    from lipgan.study.runner import cell_dir
    from lipgan.study.spec import Cell

    results = []
    for constraint, spread in (("gradient_penalty", 0.0), ("weight_clip", 0.5)):
        for seed in range(2):
            curve = [
                {"step": s, "seconds": s / 100, "modes_covered": 8 - 4 * spread}
                | {"high_quality_fraction": 0.9 - spread, "reverse_kl": 0.01 + spread}
                | {"sliced_w1": 0.02 + spread / 10}
                for s in (0, steps // 2, steps)
            ]
            r = _ok("ring", constraint, seed, curve=curve, modes_covered=8 - 4 * spread)
            r["cell"]["steps"] = steps
            r["metrics"] |= {"num_modes": 8, "high_quality_fraction": 0.9 - spread}
            r["metrics"] |= {"reverse_kl": 0.01 + spread, "w1": 0.05 + spread / 3 + seed / 100}
            results.append(r)
            cell = Cell(**{**r["cell"], "bindings": ()})
            points = SAMPLERS["2d_ring"](500, np.random.default_rng(seed))
            points += spread * np.random.default_rng(seed).normal(size=points.shape)
            cell_dir(tmp_path, cell).mkdir(parents=True)
            np.save(cell_dir(tmp_path, cell) / "samples.npy", points.astype(np.float32))
    real = {"modes_covered": 8, "high_quality_fraction": 0.98, "reverse_kl": 0.001}
    real |= {"w1": 0.01, "sliced_w1": 0.005}
    refs = {"ring": {"toy_set": "2d_ring", "rows": {references.REAL: {"cells": [real]}}}}
    return results, refs


def _texts(fig) -> list[str]:
    found = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return [t for t in found if t]


def test_the_figure_labels_its_axes_with_units_and_shares_the_scales_it_compares(tmp_path):
    from lipgan.plots import pyplot

    results, refs = _figure_study(tmp_path)
    fig = figure.draw(tmp_path, results, refs)
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.axison]
    scatters = [ax for ax in axes if ax.get_xlabel() == "x₁" or ax.get_ylabel() == "x₂"]
    curves = [ax for ax in axes if "iterations" in ax.get_xlabel() or "seconds" in ax.get_xlabel()]
    bars = [ax for ax in axes if ax.patches]
    assert len(scatters) == 2 and len(curves) == 2 * len(figure.CURVE_PANELS)
    # Every bar and curve panel says what it measures, in which unit.
    for ax in bars + curves:
        assert ax.get_xlabel() and (ax in bars or ax.get_ylabel()), ax.get_title()
    labels = {ax.get_xlabel() for ax in bars} | {ax.get_ylabel() for ax in curves}
    for unit in ("modes captured (of 8)", "(% of samples)", "(nats)", "(data units)", "ms per"):
        assert any(unit in label for label in labels), (unit, labels)
    # Samples: the real points under each row's generated ones, every panel the same view.
    for ax in scatters:
        real = [c for c in ax.collections if c.get_label() == "real data"]
        assert len(real) == 1 and len(real[0].get_offsets()) > 1000
        assert len(ax.collections) == 2
    assert len({(ax.get_xlim(), ax.get_ylim()) for ax in scatters}) == 1
    # Curves: against iterations and against seconds on the same y scale, fitted to the data
    # (a log axis reaches no further than 1.5x past the lowest and highest line).
    by_title = {}
    for ax in curves:
        by_title.setdefault(ax.get_ylabel(), []).append(ax.get_ylim())
    assert all(len(set(lims)) == 1 for lims in by_title.values()), by_title
    low, high = by_title["reverse KL (nats)"][0]
    assert low == pytest.approx(0.001 / 1.5) and high == pytest.approx(0.51 * 1.5)
    assert not any("SMOKE TEST" in t for t in _texts(fig))
    pyplot().close(fig)


def test_a_smoke_test_figure_says_so_in_its_title(tmp_path):
    from lipgan.plots import pyplot

    results, refs = _figure_study(tmp_path, steps=100)
    fig = figure.draw(tmp_path, results, refs, smoke_test=True)
    assert "SMOKE TEST (--quick): 100 iterations, not results" in fig.get_suptitle()
    pyplot().close(fig)
    partial = figure.draw(tmp_path, results[:3], refs, total=4)
    assert "PARTIAL: 3 of 4 cells finished" in partial.get_suptitle()
    pyplot().close(partial)


def test_the_report_passes_the_smoke_test_and_the_partial_count_to_the_figure(
    tmp_path, monkeypatch
):
    seen = {}
    monkeypatch.setattr(references, "load_or_compute", lambda *a, **k: {})
    monkeypatch.setattr(report, "figure", lambda *a, **kwargs: seen.update(kwargs))
    spec = {"steps": 100, "seeds": 1, "eval_samples": 2500, "smoke_test": True}
    report.write(tmp_path, spec, [_ok("ring", "gp", 0, w1=0.1)], total=2)
    assert seen == {"smoke_test": True, "total": 2}
