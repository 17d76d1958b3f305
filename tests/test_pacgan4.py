"""Rows against PacGAN4's means with bootstrap intervals (lipgan.study.intervals, .pacgan4) and the
report columns that show them (study.md, tune.md)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lipgan.study import intervals, pacgan4, summary, tables, tune_report
from lipgan.study.intervals import bootstrap_interval


def test_the_bootstrap_is_fixed_by_its_seed_and_contains_the_mean():
    values = [0.91, 0.95, 0.97, 0.88, 0.96]
    first = bootstrap_interval(values)
    assert first == bootstrap_interval(values)  # fixed RNG seed: the same interval
    # ... and it is the seed that fixes it (30 distinct values: too many atoms for every seed to
    # land on the same order statistics)
    many = list(np.random.default_rng(0).normal(size=30))
    assert bootstrap_interval(many) == bootstrap_interval(many)
    assert len({bootstrap_interval(many, seed=s) for s in range(5)}) > 1
    assert bootstrap_interval(values[::-1]) == first  # whatever order the seeds were read in
    low, high = first
    assert min(values) <= low < np.mean(values) < high <= max(values)


def test_two_seeds_give_the_interval_between_them():
    # Resampled means of (a, b): a with p 1/4, (a+b)/2 with p 1/2, b with p 1/4, so the 2.5 % and
    # 97.5 % order statistics of 10,000 of them are a and b.
    assert bootstrap_interval([0.3, 0.1]) == (0.1, 0.3)


def test_the_bootstrap_ends_are_the_exact_resampling_distributions_quantiles():
    values = [0.0, 1.0, 3.0, 9.0]
    means = sorted(np.mean(t) for t in itertools.product(values, repeat=len(values)))
    cdf = {m: np.mean(np.array(means) <= m) for m in means}
    atoms = sorted(cdf)
    exact_low = next(m for m in atoms if cdf[m] >= 0.025)
    exact_high = next(m for m in atoms if cdf[m] >= 0.975)
    below = max(cdf[m] for m in atoms if m < exact_low)
    # the quantiles fall well inside their atoms (sampling noise ~0.0015), so the test can tell
    assert below < 0.025 - 0.005 and cdf[exact_low] > 0.025 + 0.005
    assert max(cdf[m] for m in atoms if m < exact_high) < 0.975 - 0.005
    assert bootstrap_interval(values) == pytest.approx((exact_low, exact_high))


def test_one_seed_has_no_interval_and_says_so():
    assert bootstrap_interval([0.9]) is None
    assert bootstrap_interval([]) is None
    assert intervals.fmt_interval(None, 100, 1) == "one seed: no interval"
    assert math.isnan(intervals.spread([0.9]))
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_interval([0.1, math.nan])


def test_an_infinite_seed_gives_an_infinite_upper_end_not_nan():
    low, high = bootstrap_interval([0.01, 0.02, math.inf, 0.03, 0.01])
    assert math.isfinite(low) and high == math.inf
    assert intervals.fmt_interval((low, high), 1, 3) == f"[{low:.3f}, ∞]"


def test_pacgan4s_means_are_the_published_table_rows():
    for dataset, rows in tables.PACGAN.items():
        published = next(r for r in rows if r[0] == "PacGAN4")
        numbers = [float(text.split("±")[0]) for text in published[1:]]
        means = pacgan4.MEANS[dataset]
        assert [means["modes_covered"], 100 * means["high_quality_fraction"]] == pytest.approx(
            numbers[:2]
        )
        assert means["reverse_kl"] == numbers[2]


def _seed(modes, hq, kl):
    return {"modes_covered": modes, "high_quality_fraction": hq, "reverse_kl": kl}


RING = pacgan4.MEANS["ring"]


def test_a_row_is_at_the_means_only_when_its_intervals_are():
    good = [_seed(8, hq, 0.002) for hq in (0.97, 0.975, 0.98, 0.972, 0.978)]
    found = pacgan4.check(good, RING)
    assert found["at_means"] is True and found["reached"] == 5 and found["missed"] == []
    low, high = found["metrics"]["high_quality_fraction"]["interval"]
    assert RING["high_quality_fraction"] <= low < high
    assert pacgan4.verdict_text(found) == "**yes**"
    # The mean is above PacGAN4's 95.9 % and 4 of 5 seeds reach it alone, but the interval's
    # lower end is not: one bad seed in two of five draws pulls the mean to 95.4 %.
    lucky = [_seed(8, hq, 0.002) for hq in (0.99, 0.99, 0.99, 0.99, 0.90)]
    found = pacgan4.check(lucky, RING)
    assert found["metrics"]["high_quality_fraction"]["mean"] > RING["high_quality_fraction"]
    assert found["reached"] == 4 and found["at_means"] is False
    assert found["missed"] == ["high_quality_fraction"]
    assert pacgan4.verdict_text(found) == "no (high quality %)"
    # reverse KL is judged by the upper end; a seed with no high-quality sample (∞) fails it
    found = pacgan4.check(good[:4] + [_seed(8, 0.97, math.inf)], RING)
    assert found["missed"] == ["reverse_kl"] and found["reached"] == 4
    assert found["metrics"]["reverse_kl"]["mean"] == math.inf


def test_one_seed_gets_a_count_but_no_verdict():
    found = pacgan4.check([_seed(8, 0.97, 0.002)], RING)
    assert found["reached"] == 1 and found["at_means"] is None
    assert pacgan4.verdict_text(found) == "one seed: no interval, no verdict"
    assert pacgan4.cell_text(found["metrics"]["modes_covered"], 1, 1) == "8.0"  # no made-up width


def test_a_seed_is_its_final_evaluation_or_the_mean_of_its_last_k_curve_points():
    curve = [
        {"step": 250, "seconds": 1.0, **_seed(7, 0.80, 0.10)},
        {"step": 375, "mark": "stop", "seconds": 1.5},
        {"step": 500, "seconds": 2.0, **_seed(8, 0.90, 0.02)},
        {"step": 750, "seconds": 3.0, **_seed(8, 0.96, 0.01)},
    ]
    result = {"status": "ok", "metrics": {**_seed(8, 0.96, 0.01), "w1": 0.05}, "curve": curve}
    assert pacgan4.seed_values(result) == _seed(8.0, 0.96, 0.01)
    assert pacgan4.seed_values(result, last_k=2) == pytest.approx(_seed(8.0, 0.93, 0.015))
    assert pacgan4.seed_values(result, last_k=4) is None  # three points: not enough
    assert pacgan4.seed_values({**result, "status": "failed"}) is None


def _ok(constraint, seed, modes, hq, kl):
    cell = {"dataset": "ring", "constraint": constraint, "seed": seed, "steps": 1000}
    cell |= {"eval_samples": 2500, "bindings": [], "eval_every": 250}
    metrics = {**_seed(modes, hq, kl), "w1": 0.05, "num_modes": 8}
    return {"status": "ok", "cell": cell, "metrics": metrics, "seconds_per_iteration": 0.01}


def _fixture():
    results = [_ok("aol", k, 8, hq, 0.002) for k, hq in enumerate((0.97, 0.975, 0.98))]
    results += [_ok("gp", k, 8, hq, 0.004) for k, hq in enumerate((0.90, 0.92, 0.96))]
    return results


def test_the_study_report_checks_each_row_against_pacgan4s_means():
    md = tables.markdown({"steps": 1000, "seeds": 3, "eval_samples": 2500}, _fixture())
    assert "At PacGAN4's means" in md and "95.9 % high quality" in md and "(k = 1)" in md
    assert "Mean ± standard deviation (SD)" in md
    # the one standard error is PacGAN's, quoted as published
    (quoted,) = [x for x in md.splitlines() if "standard error" in x]
    assert quoted.startswith("PacGAN (Lin et al. 2018, Table 1, mean ± standard error")
    aol = next(x for x in md.splitlines() if x.startswith("| aol | 8.0 [8.0, 8.0]"))
    assert "97.5 [97.0, 98.0]" in aol and aol.endswith("| 3/3 | **yes** |")
    gp = next(x for x in md.splitlines() if x.startswith("| gp | 8.0 [8.0, 8.0]"))
    assert gp.endswith("| 1/3 | no (high quality %) |")
    # the main table's ± is the SD over seeds: 97.0, 97.5, 98.0 % → 0.5
    assert "| aol | 8.0 ± 0.0 | 97.5 ± 0.5 |" in md


def test_the_threshold_columns_state_their_threshold():
    curve = [{"step": 1000, "seconds": 5.0, **_seed(8, 0.97, 0.002)}]
    results = [r | {"curve": curve} for r in _fixture()]
    md = tables.markdown({"steps": 1000, "seeds": 3, "eval_samples": 2500}, results)
    assert "| iterations to modes ≥ 7.8, HQ ≥ 95%, rKL ≤ 0.07 |" in md
    assert "iterations to target" not in md


def test_the_tune_report_shows_the_raw_ema_and_shared_rows_against_the_means():
    from lipgan.study.tune import TuneSpec

    spec = TuneSpec(("aol",), ("ring",), configs=2, search_steps=10, seeds=3, steps=1000)
    raw = [r | {"cell": r["cell"] | {"constraint": "aol"}} for r in _fixture()[:3]]
    ema = [r | {"cell": r["cell"] | {"constraint": "aol +EMA"}} for r in _fixture()[3:]]
    final = summary.summarize(raw + ema)
    shared = {"ring": {"aol": summary.summarize(raw)["ring"]["aol"]}}
    total = {"search": 2, "search_done": 2, "final": 3}
    md = tune_report.markdown(spec, {}, {}, final, {}, "", None, total, shared)
    assert "At PacGAN4's means" in md and "mean ± standard deviation over the 3 seeds" in md
    lines = md.splitlines()
    assert next(x for x in lines if x.startswith("| aol | 8.0 [")).endswith("| 3/3 | **yes** |")
    ema_line = next(x for x in lines if x.startswith("| aol +EMA | 8.0 ["))
    assert ema_line.endswith("| 1/3 | no (high quality %) |")
    assert any(x.startswith("| aol, shared config | 8.0 [") for x in lines)
    assert "iterations to modes ≥ 7.8, HQ ≥ 95%, rKL ≤ 0.07" in md


@pytest.mark.slow  # the CLI loads the plugin registry (TensorFlow)
def test_report_only_rebuilds_a_tuned_study_without_its_executor(tmp_path, monkeypatch):
    """A tuned study trained on Ray Tune is rebuilt where Ray is absent: --report-only runs
    nothing, so it makes no executor, and leaves itself out of the report's command."""
    from click.testing import CliRunner

    from lipgan.cli import options
    from lipgan.cli.main import cli

    def no_executor(*args, **kwargs):
        raise AssertionError("--report-only made an executor")

    monkeypatch.setattr(options, "make_executor", no_executor)  # what cell_executor calls
    args = ["tune", "--constraint", "gradient_penalty", "--executor", "tune", "--report-only"]
    result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "t")])
    assert result.exit_code == 1, result.output
    assert "holds no finished trial" in result.stderr and "Ray" not in result.stderr


def test_the_docs_results_tables_are_the_committed_reports_tables(monkeypatch):
    """docs/study.md copies its results tables from the committed reports: they must still be
    what ``docs/study_tables.py`` prints from them (rebuild a report, then the docs)."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    spec = importlib.util.spec_from_file_location("study_tables", root / "docs/study_tables.py")
    study_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study_tables)
    doc = (root / "docs" / "study.md").read_text()
    for table in (
        study_tables.toy_table("ring"),
        study_tables.toy_table("grid"),
        study_tables.digits_table(),
        study_tables.digits_table("digits-certified"),
        study_tables.digits_table("digits-soc-order"),
        study_tables.digits_table("digits-soc-2400"),
        study_tables.digits_table("digits-soc-gram"),
        study_tables.digits_table("digits-soc-gram-seconds"),
        study_tables.toy_study_table("toy-soc-gram", "ring"),
        study_tables.toy_study_table("toy-soc-gram", "grid"),
        study_tables.toy_study_table("toy-soc-gram-top", "ring"),
        study_tables.toy_study_table("toy-soc-gram-top", "grid"),
        *(
            "\n".join("  " + line for line in study_tables.budget_table(d).splitlines())
            for d in ("ring", "grid")
        ),
    ):
        assert table in doc
    assert "| aol [maxmin] +EMA | 8.0 [8.0, 8.0] | 95.8 [" in study_tables.toy_table("ring")


# -- the iterations a row needs (lipgan.study.first_at_means) -------------------------------------
def _curve_result(points, seed, steps=1000, status="ok", dataset="grid", spec="gradient_penalty"):
    """A finished cell whose curve has ``points``: ``{step: (modes, hq, rkl)}`` for the default
    generator; its raw generator is 1 mode and 10 points of high quality worse."""

    def metrics(modes, hq, rkl):
        return {"modes_covered": modes, "high_quality_fraction": hq, "reverse_kl": rkl}

    curve = [{"mark": "stop", "step": 0}]  # a stop's marker is not a point
    for step, (modes, hq, rkl) in sorted(points.items()):
        curve.append(
            {
                "step": step,
                **metrics(modes, hq, rkl),
                "no_ema": metrics(modes - 1, hq - 0.1, rkl),
                "ema_by_decay": {"0.999": metrics(modes, hq, rkl)},
            }
        )
    cell = {"dataset": dataset, "constraint": spec, "seed": seed, "steps": steps}
    return {"status": status, "curve": curve, "cell": cell}


GRID_AT = (25, 0.95, 0.01)  # beyond PacGAN4's grid means (24.8 / 93.6 % / 0.04) on all three
GRID_BELOW = (25, 0.90, 0.01)  # high quality short


def test_the_first_point_where_the_rows_interval_reaches_pacgan4s_means():
    from lipgan.study import first_at_means as fam

    means = pacgan4.MEANS["grid"]
    # three seeds, all at the means from step 500 on (and one already at 250: not the row yet)
    rows = [
        _curve_result({250: GRID_AT, 500: GRID_AT, 750: GRID_AT}, 0),
        _curve_result({250: GRID_BELOW, 500: GRID_AT, 750: GRID_AT}, 1),
        _curve_result({250: GRID_BELOW, 500: GRID_AT, 750: GRID_AT}, 2),
    ]
    found = fam.first_at_means(rows, means)
    assert found["step"] == 500 and found["check"]["at_means"] and found["check"]["seeds"] == 3
    assert found["last_step"] == 750
    assert found["stays_from"] == 500 and (found["points_at"], found["points_from"]) == (2, 2)
    assert fam.first_at_means(rows, means, "0.999")["step"] == 500  # the EMA's curve, the same
    raw = fam.first_at_means(rows, means, fam.RAW)  # a mode and 10 points lower: never
    assert raw["step"] is None
    assert raw["last_check"]["missed"] == ["modes_covered", "high_quality_fraction"]
    assert fam.generators(rows) == [fam.DEFAULT, fam.RAW, "0.999"]


def test_a_row_that_dips_after_its_first_point_says_so():
    """The first point can be one lucky evaluation: the row's points from there are counted, and
    it stays only from the first point after which every one is at the means."""
    from lipgan.study import first_at_means as fam

    means = pacgan4.MEANS["grid"]
    dips = {250: GRID_AT, 500: GRID_BELOW, 750: GRID_AT, 1000: GRID_AT}
    found = fam.first_at_means([_curve_result(dips, seed) for seed in range(3)], means)
    assert (found["step"], found["stays_from"]) == (250, 750)
    assert (found["points_at"], found["points_from"]) == (3, 4)
    ends_below = {250: GRID_AT, 500: GRID_BELOW}
    found = fam.first_at_means([_curve_result(ends_below, seed) for seed in range(3)], means)
    assert (found["step"], found["stays_from"], found["points_at"]) == (250, None, 1)
    lines = fam._row_lines("grid", [_curve_result(ends_below, seed) for seed in range(3)])
    assert lines[0] == (
        "  default: first at PacGAN4's means at iteration 250; at them at 1 of the 2 points from "
        "there; not at the last point (500)"
    )


def test_a_point_counts_only_when_every_seed_has_it_and_one_seed_gives_no_verdict():
    from lipgan.study import first_at_means as fam

    means = pacgan4.MEANS["grid"]
    rows = [
        _curve_result({500: GRID_AT, 750: GRID_AT}, 0),
        _curve_result({750: GRID_AT}, 1),  # stopped and resumed: no point at 500
        _curve_result({500: GRID_AT}, 2, status="failed"),  # a failed cell is no seed
    ]
    assert fam.first_at_means(rows, means)["step"] == 750
    alone = fam.first_at_means(rows[:1], means)
    assert alone["step"] is None and alone["last_check"] is None


def test_seeds_that_each_cross_are_not_the_row_at_the_means():
    """The strict rule, not the relaxed per-seed first crossing: two seeds at the means and one far
    below leave the interval's lower end below PacGAN4's high quality."""
    from lipgan.study import first_at_means as fam

    rows = [
        _curve_result({500: GRID_AT}, 0),
        _curve_result({500: GRID_AT}, 1),
        _curve_result({500: (25, 0.50, 0.01)}, 2),
    ]
    found = fam.first_at_means(rows, pacgan4.MEANS["grid"])
    assert found["step"] is None
    assert found["last_check"]["reached"] == 2 and found["last_check"]["missed"] == [
        "high_quality_fraction"
    ]


def test_the_command_reads_a_study_dirs_rows_and_refuses_a_missing_dir(tmp_path, capsys):
    import json

    from lipgan.study import first_at_means as fam

    for seed, points in enumerate(
        [{500: GRID_AT}, {500: GRID_AT}, {500: GRID_AT}, {500: GRID_BELOW}]
    ):
        steps = 1000 if seed < 2 else 2000  # two rows of the same SPEC at other budgets
        run_dir = tmp_path / "runs" / "grid" / f"b{steps}" / f"seed{seed}"
        run_dir.mkdir(parents=True)
        (run_dir / "result.json").write_text(json.dumps(_curve_result(points, seed, steps)))
    assert fam.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"{tmp_path}: grid gradient_penalty, 1,000 iterations, 2 seeds" in out
    assert (
        "  default: first at PacGAN4's means at iteration 500; at them at 1 of the 1 points from "
        "there; there at every point from iteration 500 to the last (500)"
    ) in out
    assert f"{tmp_path}: grid gradient_penalty, 2,000 iterations, 2 seeds" in out
    assert "  default: not at any point up to iteration 500 (at the last, 2 seeds, misses on " in (
        "\n".join(out)
    )
    assert fam.main([str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"error: not a study dir: {tmp_path / 'nope'}"
