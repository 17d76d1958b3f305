"""A tuned study's EMA at several decays (``--ema-decays``) and its search seeds
(``--search-seed``): the spec's defaults match the committed studies, each decay is recorded and
chosen by the search's score, and the search's seeds move with their base."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.core.errors import ConfigError
from lipgan.study import curve, ema_choice, halving, tune, tune_report
from lipgan.study.curve import EMA_BY_DECAY, NO_EMA
from lipgan.study.spec import Cell

STUDIES = Path(__file__).resolve().parent.parent / "studies"


def _committed_spec(name: str) -> dict:
    return json.loads((STUDIES / name / "spec.json").read_text())


@pytest.mark.parametrize("name", ["tuned", "tuned-sn-grid-full", "tuned-sn-maxmin"])
def test_the_default_spec_is_the_committed_one(name):
    """A spec of the committed study's settings and today's defaults (one decay 0.999, the
    search's own seeds) records exactly the committed spec.json, so the study resumes and its
    report re-renders unchanged."""
    committed = _committed_spec(name)
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in committed.items()}
    given.pop("kind")
    for default in ("ema_decay", "ema_start", "eval_every", "eval_samples"):
        given.pop(default)
    assert tune.TuneSpec(**given).as_dict() == committed
    assert tune.parse_ema_decays("0.999") == tune.EMA_DECAY and isinstance(
        tune.parse_ema_decays("0.999"), float
    )


def test_the_default_search_seeds_are_the_committed_cells():
    """The committed trial config00 of GP on the ring is the cell today's default draws, seed
    1000; the halving search's default base stays 2000 + 100·j + k."""
    committed = json.loads(
        (STUDIES / "tuned/search/runs/ring/gradient_penalty/config00/result.json").read_text()
    )["cell"]
    spec = tune.TuneSpec(("gradient_penalty",), ("ring",))
    assert tune.search_cells(spec)[0] == Cell.from_dict(committed)
    assert committed["seed"] == tune.SEARCH_SEED == 1000
    cells = halving.trial_cells(spec, halving.Halving(), "ring", "gradient_penalty", 3, 444)
    assert [c.seed for c in cells] == [2003, 2103]


def test_a_search_seed_base_gives_disjoint_seeds_and_is_recorded():
    base = tune.TuneSpec(("gradient_penalty", "r1"), ("ring", "grid"), configs=20)
    other = dataclasses.replace(base, search_seed=5000)
    seeds = {c.seed for c in tune.search_cells(base)}
    moved = {c.seed for c in tune.search_cells(other)}
    assert seeds == set(range(1000, 1020)) and moved == set(range(5000, 5020))
    # the same configs, only the seeds differ
    assert [c.bindings for c in tune.search_cells(base)] == [
        c.bindings for c in tune.search_cells(other)
    ]
    h = halving.Halving(seeds=2)
    for spec, first in ((base, 2000), (dataclasses.replace(base, search_seed=7000), 7000)):
        got = {
            c.seed for k in range(20) for c in halving.trial_cells(spec, h, "ring", "r1", k, 444)
        }
        assert got == {first + 100 * j + k for j in range(2) for k in range(20)}
    h_default = {
        c.seed for k in range(20) for c in halving.trial_cells(base, h, "grid", "r1", k, 1)
    }
    h_moved = {
        c.seed
        for k in range(20)
        for c in halving.trial_cells(
            dataclasses.replace(base, search_seed=7000), h, "grid", "r1", k, 1
        )
    }
    assert not h_default & h_moved and not seeds & moved
    assert other.as_dict()["search_seed"] == 5000 and "search_seed" not in base.as_dict()
    with pytest.raises(ConfigError, match=r"--search-seed 3 must be >= --seeds \(5\)"):
        dataclasses.replace(base, search_seed=3).check()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--ema-decays", "0.99,x"], "--ema-decays takes decays in (0, 1), distinct"),
        (["--ema-decays", "0.99,0.99"], "--ema-decays takes decays in (0, 1), distinct"),
        (["--ema-decays", "1.5"], "--ema-decays takes decays in (0, 1), distinct"),
        (["--ema-decays", "0"], "--ema-decays takes decays in (0, 1), distinct"),
        (["--search-seed", "2"], "--search-seed 2 must be >= --seeds (5)"),
    ],
)
def test_bad_tune_options_are_one_line(tmp_path, args, expected):
    result = CliRunner().invoke(
        cli, ["tune", "--constraint", "r1", *args, "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "x").exists()


def test_the_replicates_bind_every_decay():
    spec = tune.TuneSpec(("r1",), ("ring",), configs=1, ema_decay=(0.999, 0.99))
    chosen = {("ring", "r1"): {"config": tune.search.draw("r1", 0)}}
    (cell, *_) = tune.replicate_cells(spec, chosen)
    assert "train.ema_decay = (0.999, 0.99)" in cell.bindings
    assert spec.as_dict()["ema_decay"] == [0.999, 0.99]


def _replicate(seed, by_decay, raw_w1=0.3):
    def metrics(w1, hq=0.9):
        return {"modes_covered": 8, "high_quality_fraction": hq, "reverse_kl": 0.01, "w1": w1}

    first = by_decay["0.999"]
    return {
        "status": "ok",
        "cell": {"dataset": "ring", "constraint": "r1", "seed": seed},
        "metrics": {
            **metrics(first),
            NO_EMA: metrics(raw_w1),
            EMA_BY_DECAY: {d: metrics(w) for d, w in by_decay.items()},
        },
        "curve": [
            {
                "step": 250,
                "seconds": 1.0,
                **metrics(first),
                NO_EMA: metrics(raw_w1),
                EMA_BY_DECAY: {d: metrics(w) for d, w in by_decay.items()},
            }
        ],  # fmt: skip
    }


def test_the_decay_is_chosen_by_the_seeds_mean_score_and_its_row_shows_it():
    """0.99 has the lower mean W1 over the two seeds (0.10 and 0.20 against 0.12 and 0.24 for
    0.999, though 0.9999 wins seed 1 alone): it is chosen; the +EMA row then holds its metrics
    and curve, and its samples are the run's file of that decay."""
    spec = tune.TuneSpec(("r1",), ("ring",), seeds=2, ema_decay=(0.999, 0.99, 0.9999))
    results = [
        _replicate(0, {"0.999": 0.12, "0.99": 0.10, "0.9999": 0.40}),
        _replicate(1, {"0.999": 0.24, "0.99": 0.20, "0.9999": 0.05}),
    ]
    final = {Cell.from_dict({**r["cell"], "steps": 4000, "eval_samples": 2500}): r for r in results}
    choice = ema_choice.choose(spec, final)
    found = choice[("ring", "r1")]
    assert found["decay"] == "0.99"
    assert found["scores"]["0.99"][0] == pytest.approx(-0.15)
    assert found["means"]["0.9999"]["w1"] == pytest.approx(0.225)
    raw, ema = tune_report.split_ema(results[0], "0.99", sampled=False)
    assert ema["metrics"]["w1"] == 0.10 and raw["metrics"]["w1"] == 0.3
    assert EMA_BY_DECAY not in ema["metrics"] and NO_EMA not in ema["metrics"]
    assert ema["curve"][0]["w1"] == 0.10 and ema["curve"][0]["step"] == 250
    assert ema["samples_cell"] == results[0]["cell"]
    assert ema["samples_file"] == "samples_ema_0.99.npy"
    # the sampling decay (None) keeps today's row: its own keys, its samples
    _, sampled = tune_report.split_ema(results[0])
    assert sampled["metrics"]["w1"] == 0.12 and sampled["samples_cell"] == results[0]["cell"]
    text = ema_choice.section(spec, choice)
    assert (
        "| ring | r1 | 0.180 / 90.0 / 0.010 | **0.150 / 90.0 / 0.010** | 0.225 / 90.0 / 0.010 |"
        in text
    )
    assert ema_choice.label(choice, "ring", "r1") == " at decay 0.99 (chosen)"
    # one decay: no choice, no section, today's report
    assert ema_choice.choose(dataclasses.replace(spec, ema_decay=0.999), final) == {}
    # a failed seed leaves every decay at -inf: the sampling decay stays
    failed = {**final, Cell("ring", "r1", 2, 4000, 2500): {"status": "failed"}}
    assert ema_choice.choose(spec, failed)[("ring", "r1")]["decay"] == "0.999"


def test_a_curve_point_records_every_decay_by_key():
    """:func:`lipgan.study.curve.by_decay`: the sampling decay's metrics copied, the others
    measured on their own copy; nothing for one decay."""

    emas = {0.999: "first", 0.99: "second"}  # {decay: the sampler measure() is given}
    measured = []

    def measure(sampler):
        measured.append(sampler)
        return {"w1": 1.0}

    got = curve.by_decay(emas, measure, {"w1": 0.5})
    assert got == {EMA_BY_DECAY: {"0.999": {"w1": 0.5}, "0.99": {"w1": 1.0}}}
    assert measured == ["second"]
    assert curve.by_decay({0.999: "first"}, measure, {"w1": 0.5}) == {}


@pytest.mark.heavy
@pytest.mark.slow
def test_a_tiny_tuned_study_with_two_decays_measures_and_chooses_them(tmp_path):
    """End to end: the replicates train with ``train.ema_decay = (0.9, 0.5)`` from gin, every
    curve point and the final evaluation hold both decays (the first's equal to the point's own
    keys), and the report chooses one and states both."""
    from lipgan.study.executors import LocalExecutor

    out = tmp_path / "tuned"
    spec = tune.TuneSpec(
        ("gradient_penalty",), ("8gaussians",), configs=1, search_steps=10, seeds=1, steps=20,
        eval_every=10, eval_samples=1000, ema_decay=(0.9, 0.5), ema_start=5,
    )  # fmt: skip
    report = tune.run_tune(spec, out, executor=LocalExecutor(1))
    (result,) = report.final.values()
    assert result["status"] == "ok", result
    by = result["metrics"][EMA_BY_DECAY]
    assert set(by) == {"0.9", "0.5"}
    assert by["0.9"]["w1"] == result["metrics"]["w1"] and by["0.5"]["w1"] != by["0.9"]["w1"]
    assert all(set(p[EMA_BY_DECAY]) == {"0.9", "0.5"} for p in result["curve"])
    assert [p["step"] for p in result["curve"]][::-1][:1] == [20] and len(result["curve"]) >= 2
    run = out / "final/runs/8gaussians/gradient_penalty/seed0"
    first, second = np.load(run / "samples.npy"), np.load(run / "samples_ema_0.5.npy")
    assert first.shape == second.shape == (1000, 2) and not np.allclose(first, second)
    data = json.loads((out / "tune.json").read_text())
    (row,) = data["ema_decays"]
    assert row["decay"] in ("0.9", "0.5") and set(row["scores"]) == {"0.9", "0.5"}
    md = (out / "tune.md").read_text()
    assert "## EMA decay" in md and f"same runs, EMA at decay {row['decay']} (chosen)" in md
    assert "generator EMA (decays 0.9, 0.5, one chosen per row (below)" in md
