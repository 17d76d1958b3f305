"""Successive halving (lipgan.study.halving): the schedule and its cost in closed form, the choice
and the promotions on a synthetic search whose best config is known, resumption from the rung
records, and a tiny halving tune end to end whose promoted runs continue their run dirs."""

import dataclasses
import json
import math

import pytest

from lipgan.core.errors import ConfigError
from lipgan.study import halving, search, tune, tune_report
from lipgan.study.halving import HALVING_SEED, Halving


def test_the_schedule_and_its_cost_in_closed_form():
    h = Halving(eta=3, rungs=3, seeds=2)
    assert h.budgets(4000) == [444, 1333, 4000]
    assert h.sizes(20) == [20, 7, 3]
    # increments: 20·2·444 + 7·2·(1333 − 444) + 3·2·(4000 − 1333)
    assert h.cost(20, 4000) == 20 * 2 * 444 + 7 * 2 * 889 + 3 * 2 * 2667
    assert Halving(eta=2, rungs=1, seeds=1).budgets(100) == [100]
    with pytest.raises(ConfigError, match="--eta must be >= 2"):
        Halving(eta=1).check()


def test_a_failed_seed_sinks_its_config():
    ok = {"status": "ok", "metrics": {"w1": 0.1, "high_quality_fraction": 0.9, "reverse_kl": 0.0}}
    worse = {
        "status": "ok",
        "metrics": {"w1": 0.3, "high_quality_fraction": 0.5, "reverse_kl": 0.1},
    }
    assert halving.mean_score([ok, worse]) == pytest.approx((-0.2, 0.7, -0.05))
    assert halving.mean_score([ok, {"status": "failed"}])[0] == -math.inf
    diverged = {"status": "ok", "metrics": {**ok["metrics"], "w1": math.nan}}
    assert halving.mean_score([ok, diverged])[0] == -math.inf


def test_a_seed_that_covers_no_mode_ranks_by_its_w1_and_does_not_sink_its_config():
    """Reverse KL is ∞ when a seed's samples cover no mode: a result, not a failure. The config
    ranks by its seeds' mean W1 (it used to score −inf, so configs were promoted by the order of
    a tie among −inf scores instead of by W1; 2 of 22 rows of studies/tuned-halving's first rung)."""
    ok = {"status": "ok", "metrics": {"w1": 0.1, "high_quality_fraction": 0.9, "reverse_kl": 0.0}}
    no_mode = {
        "status": "ok",
        "metrics": {"w1": 0.5, "high_quality_fraction": 0.0, "reverse_kl": math.inf},
    }
    far = {"status": "ok", "metrics": {"w1": 2.0, "high_quality_fraction": 0.1, "reverse_kl": 1.0}}
    score = halving.mean_score([ok, no_mode])
    assert score[:2] == pytest.approx((-0.3, 0.45)) and score[2] == -math.inf
    assert score > halving.mean_score([far, far])  # mean W1 0.3 beats 2.0 despite the ∞ KL
    assert score < halving.mean_score([ok, ok])
    # the same rule chooses an EMA decay over a row's replicates (lipgan.study.ema_choice)
    assert score > halving.mean_score([ok, {"status": "failed"}])


class FakeRuns:
    """Results of a search whose config k has W1 ``quality[k]`` at the full budget and a worse
    one earlier (more so for the slow starters), plus a per-seed wobble: the choice is known."""

    def __init__(self, quality, slow=()):
        self.quality, self.slow, self.calls, self.cells = quality, set(slow), 0, []

    def __call__(self, cells, where, what):
        self.calls += 1
        self.cells.append(list(cells))
        out = {}
        for cell in cells:
            late = 1.0 - cell.steps / 4000
            w1 = self.quality[cell.trial] + late * (2.0 if cell.trial in self.slow else 0.5)
            w1 += 0.01 * cell.trial_seed
            out[cell] = {
                "status": "ok",
                "cell": cell.as_dict(),
                "metrics": {"w1": w1, "high_quality_fraction": 0.5, "reverse_kl": 0.1},
            }
        return out


def spec(**kw):
    return tune.TuneSpec(
        ("gradient_penalty",), ("ring",), configs=9, steps=4000, seeds=1, search="halving", **kw
    )


def test_halving_promotes_by_mean_score_and_chooses_the_best_at_the_full_budget(tmp_path):
    quality = [0.5, 0.4, 0.05, 0.3, 0.2, 0.6, 0.1, 0.7, 0.35]
    runs = FakeRuns(quality, slow={6})  # config 6 is second best but starts slowly
    s = spec()
    state = halving.run_search(s, s.halving, tmp_path, runs)
    chosen, rungs = state.chosen, state.rungs
    assert state.complete and state.progress is None
    assert [len(c) for c in runs.cells] == [18, 6, 2]  # 9, 3, 1 configs × 2 seeds
    assert rungs[0]["searches"][0]["promoted"] == [2, 4, 3]  # 6 fell behind at rung 1
    assert chosen[("ring", "gradient_penalty")]["trial"] == 2
    assert chosen[("ring", "gradient_penalty")]["config"] == search.draw("gradient_penalty", 2)
    # a promoted config continues the same run dirs, with its decay over the full budget
    first, second = runs.cells[0], runs.cells[1]
    assert {c.name for c in second} <= {c.name for c in first}
    assert {c.seed for c in first} == {HALVING_SEED + 100 * j + k for j in (0, 1) for k in range(9)}
    config = search.draw("gradient_penalty", 2)
    assert all(
        b in c.bindings
        for c in first
        if c.trial == 2
        for b in search.bindings("gradient_penalty", config, 4000)
    )
    assert [c.steps for c in runs.cells[2]] == [4000, 4000]


def test_a_report_before_the_first_rung_is_finished_says_how_far_it_is(tmp_path):
    """``lipgan tune --report-only`` during the first rung (hours of a real study) refuses in one
    line that says how many of that rung's runs have finished."""
    s = spec()
    runs = FakeRuns([0.5, 0.4, 0.05, 0.3, 0.2, 0.6, 0.1, 0.7, 0.35])

    def half_finished(cells, where, what):
        return dict(list(runs(cells, where, what).items())[:7])

    with pytest.raises(ConfigError, match=r"7 of its first rung's 18 runs have finished"):
        halving.run_search(s, s.halving, tmp_path, half_finished, report_only=True)
    assert not (tmp_path / "search").exists()  # nothing written


def test_a_report_during_a_later_rung_names_leaders_not_choices(tmp_path):
    """``--report-only`` after the first rung is recorded: the leaders of the last finished rung,
    how far the next is, and a tune.md that says both, never a "chosen" config at the full budget
    (found 2026-12-08 on studies/tuned-halving, whose partial report called its first rung's
    leaders chosen at the full budget and counted "520 of 520 search trials")."""
    quality = [0.5, 0.4, 0.05, 0.3, 0.2, 0.6, 0.1, 0.7, 0.35]
    s = spec()
    runs = FakeRuns(quality, slow={6})
    halving.run_search(s, s.halving, tmp_path, runs)
    (tmp_path / "search" / "rung1.json").unlink()
    (tmp_path / "search" / "rung2.json").unlink()  # stopped during the second rung

    def two_of_six(cells, where, what):
        return dict(list(runs(cells, where, what).items())[:2])

    state = halving.run_search(s, s.halving, tmp_path, two_of_six, report_only=True)
    assert not state.complete and state.progress == {"rung": 1, "done": 2, "of": 6}
    assert len(state.rungs) == 1 and state.chosen[("ring", "gradient_penalty")]["trial"] == 2
    assert not (tmp_path / "search" / "rung1.json").exists()  # a report records no rung
    assert halving.chosen_column(state.progress) == "leading config after rung 1 (not yet chosen)"
    assert halving.chosen_column(None) == "chosen config"
    line = halving.partial_line(state.progress, 3)
    assert line.startswith("the search has finished 1 of its 3 rungs, and 2 of rung 2's 6 runs")
    text = tune_report.markdown(
        s, {}, state.chosen, {}, {}, "", None,
        {"search": 9, "search_done": 9, "final": 1, "wall": None}, progress=state.progress,
    )  # fmt: skip
    assert f"**PARTIAL: {line}; 0 of 1 replicate runs" in text
    assert "| leading config after rung 1 (not yet chosen) |" in text
    assert (
        "W1 leader / median; HQ % leader / best (leading: rung 1; median, best: first rung)" in text
    )
    assert "9 of 9 search trials" not in text and "chosen: full budget" not in text


def test_a_resumed_search_reads_its_rungs_back_and_runs_only_what_is_left(tmp_path):
    quality = [0.5, 0.4, 0.05, 0.3, 0.2, 0.6, 0.1, 0.7, 0.35]
    s = spec()
    first = FakeRuns(quality, slow={6})
    halving.run_search(s, s.halving, tmp_path, first)
    (tmp_path / "search" / "rung2.json").unlink()  # stopped during the last rung
    again = FakeRuns([9.0] * 9)  # what the disk would say now must not change the choice...
    rungs = halving.run_search(s, s.halving, tmp_path, again).rungs
    assert again.calls == 1 and len(again.cells[0]) == 2  # ...for the rungs already recorded
    assert [r["searches"][0]["promoted"] for r in rungs[:2]] == [[2, 4, 3], [2]]
    record = json.loads((tmp_path / "search" / "rung0.json").read_text())
    assert len(record["searches"][0]["trials"]) == 9


def test_the_spec_of_a_random_search_is_recorded_as_before():
    assert "search" not in tune.TuneSpec(("gradient_penalty",)).as_dict()
    d = spec().as_dict()
    assert (d["search"], d["eta"], d["rungs"], d["search_seeds"]) == ("halving", 3, 3, 2)


@pytest.mark.heavy
@pytest.mark.slow
def test_a_tiny_halving_tune_end_to_end(tmp_path):
    from lipgan.study.executors import LocalExecutor

    out = tmp_path / "tuned"
    s = tune.TuneSpec(
        ("gradient_penalty",), ("8gaussians",), configs=2, seeds=1, steps=20, eval_every=10,
        eval_samples=1000, search="halving", eta=2, rungs=2, search_seeds=1,
    )  # fmt: skip
    report = tune.run_tune(s, out, executor=LocalExecutor(2))
    rung0 = json.loads((out / "search" / "rung0.json").read_text())["searches"][0]
    rung1 = json.loads((out / "search" / "rung1.json").read_text())["searches"][0]
    assert (rung0["steps"], rung1["steps"]) == (10, 20) and len(rung0["promoted"]) == 1
    (k,) = rung0["promoted"]
    assert [t["trial"] for t in rung1["trials"]] == [k]
    # the promoted run continued its run dir: one metrics file from step 0 to 20
    run_dir = out / "search" / "runs" / "8gaussians" / "gradient_penalty" / f"config{k:02d}-seed0"
    steps = [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 20 and 10 in steps
    assert json.loads((out / "chosen.json").read_text())[0]["trial"] == k
    assert "## Successive halving" in (out / "tune.md").read_text()
    assert len(report.final) == 1


@pytest.mark.heavy
@pytest.mark.slow
def test_a_promoted_run_whose_checkpoints_are_gone_trains_again_to_the_same_numbers(
    tmp_path, monkeypatch
):
    """A fresh clone of a repository that commits only a study's small files (as this one does
    for studies/tuned-halving) has no checkpoints: a promoted run then trains again from step 0
    and must end exactly where the uninterrupted search's run ended (docs/study.md, *Storage*)."""
    import shutil

    from lipgan.study.executors import LocalExecutor

    s = tune.TuneSpec(
        ("gradient_penalty",), ("8gaussians",), configs=2, seeds=1, steps=40, eval_every=20,
        eval_samples=1000, search="halving", eta=2, rungs=2, search_seeds=1,
    )  # fmt: skip
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    tune.run_tune(s, whole, executor=LocalExecutor(2))

    class Stop(Exception):
        pass

    record_rung = halving._write_rung

    def record_then_stop(out, rung, record):
        record_rung(out, rung, record)
        raise Stop

    monkeypatch.setattr(halving, "_write_rung", record_then_stop)
    with pytest.raises(Stop):
        tune.run_tune(s, stopped, executor=LocalExecutor(2))
    monkeypatch.setattr(halving, "_write_rung", record_rung)
    gone = list(stopped.glob("search/runs/**/checkpoints"))
    assert gone
    for directory in gone:
        shutil.rmtree(directory)
    tune.run_tune(s, stopped, executor=LocalExecutor(2))

    def last_rung(out):
        record = json.loads((out / "search" / "rung1.json").read_text())["searches"][0]
        return [
            (t["trial"], t["results"][0]["step"], t["results"][0]["metrics"])
            for t in record["trials"]
        ]

    ((trial, step, metrics),) = last_rung(stopped)
    assert step == 40 and math.isfinite(metrics["w1"])
    assert last_rung(stopped) == last_rung(whole)


def test_only_a_promoted_halving_trial_continues_a_run_dir_of_fewer_steps():
    s = spec()
    (short,) = halving.trial_cells(s, Halving(seeds=1), "ring", "gradient_penalty", 2, 444)
    (longer,) = halving.trial_cells(s, Halving(seeds=1), "ring", "gradient_penalty", 2, 1333)
    assert short.name == longer.name
    assert longer.continues(short.as_dict()) and not short.continues(longer.as_dict())
    (other,) = halving.trial_cells(s, Halving(seeds=1), "ring", "gradient_penalty", 3, 444)
    assert not longer.continues(other.as_dict())
    plain = dataclasses.replace(longer, trial_seed=None)
    assert not plain.continues(dataclasses.replace(short, trial_seed=None).as_dict())


def test_every_committed_rung_record_promotes_what_todays_rule_promotes():
    """Each committed ``studies/*/search/rung<i>.json`` (every trial's results, the configs
    promoted) re-ranked by today's :func:`halving.mean_score`, in the search's own order (stable,
    best first): the same configs in the same order. So a change of the rule that would have
    changed a committed search fails here, and the 2026-12-07 fix (a no-mode seed no longer
    sinks its config) is shown to change none of them."""
    from pathlib import Path

    records = sorted((Path(__file__).parents[1] / "studies").glob("*/search/rung*.json"))
    assert len(records) >= 15  # five committed halving searches of three rungs each
    for path in records:
        for s in json.loads(path.read_text())["searches"]:
            rescored = [{**t, "mean_score": halving.mean_score(t["results"])} for t in s["trials"]]
            ranked = halving.best_first(rescored)
            promoted = [t["trial"] for t in ranked[: len(s["promoted"])]]
            assert promoted == s["promoted"], (path, s["dataset"], s["constraint"])
