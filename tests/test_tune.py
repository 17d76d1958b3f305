"""`lipgan tune`: the search spaces and their draws, the bindings reaching the trainer, the choice,
the EMA split of the replicates, the expected best of k, and a tiny tuned study end to end."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.core.errors import ConfigError
from lipgan.core.search_space import OPTIMIZER_KEYS, Choice
from lipgan.study import search, tune, tune_report
from lipgan.study.curve import NO_EMA
from lipgan.study.spec import Cell


def builtin_spaces() -> dict:
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    return {name: search.space(name, registry) for name in search.tunable(registry)[0]}


def test_every_builtin_constraint_but_none_has_a_search_space():
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    names, left_out = search.tunable(registry)
    assert set(names) == set(registry.names("constraint")) - {"none"}
    assert set(left_out) == {"none"}
    with pytest.raises(ConfigError, match="constraint 'none' has no search space.*search_space"):
        search.space("none")


def test_the_ranges_are_compare_gans_and_the_drawn_configs_are_the_committed_ones():
    """The table moved from the tuner into the constraint classes; the draws must not change, or
    the committed search trials would no longer be the configs they claim to be (the keys' order
    is the draw order; the values are checked against the committed cells below)."""
    assert list(search.space("gradient_penalty")) == [
        "learning_rate",
        "beta_1",
        "beta_2",
        "n_critic",
        "weight",
    ]
    assert list(search.space("weight_clip")) == ["learning_rate", "n_critic", "c"]
    assert search.fixed("dragan") == ("dragan.noise = 'reference'", "dragan.noise_scale = 0.5")
    assert search.fixed("gradient_penalty") == ()


def test_a_draw_depends_on_the_constraint_and_index_only_and_stays_in_its_ranges():
    assert search.draw("gradient_penalty", 7) == search.draw("gradient_penalty", 7)
    assert search.draw("gradient_penalty", 7) != search.draw("gradient_penalty", 8)
    assert search.draw("gradient_penalty", 7) != search.draw("lipschitz_penalty", 7)
    for name, space in builtin_spaces().items():
        configs = [search.draw(name, k) for k in range(200)]
        for key, r in space.items():
            values = [c[key] for c in configs]
            if isinstance(r, Choice):
                assert set(values) == set(r.values), (name, key)
            else:
                assert r.low <= min(values) and max(values) <= r.high, (name, key)
        if "learning_rate" in space:  # log-uniform: about a third of the draws per decade
            decades = np.floor(np.log10([c["learning_rate"] for c in configs]))
            assert set(decades) == {-5, -4, -3} and min(np.bincount((decades + 5).astype(int))) > 40


def test_configs_of_a_longer_search_extend_the_shorter_one():
    spec = tune.TuneSpec(("gradient_penalty",), ("ring",), configs=3)
    more = tune.TuneSpec(("gradient_penalty",), ("ring",), configs=5)
    assert tune.search_cells(spec) == tune.search_cells(more)[:3]
    assert [c.seed for c in tune.search_cells(more)] == [tune.SEARCH_SEED + k for k in range(5)]
    assert tune.search_cells(more)[4].name == "ring/gradient_penalty/config04"


def _trainer_of(cell):
    from lipgan.config import gin_binding as config
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    files, bindings = cell.gin()
    schedule = config.stretched_schedules(files, cell.steps, registry)
    config.parse(files, schedule + bindings, registry)
    try:
        return config.build_trainer()
    finally:
        import gin

        gin.clear_config()


@pytest.mark.parametrize("name", ["gradient_penalty", "weight_clip", "dragan"])
def test_a_search_config_reaches_the_trainer_it_binds(name):
    """Every drawn value is what the trainer trains with: learning rates and their decay to 0
    over the run (critic: n_critic optimizer steps per iteration), betas, n_critic, the
    constraint's own parameter; none is silently shadowed by the data set's config."""
    config = search.draw(name, 3)
    steps = 1000
    cell = Cell("ring", name, 1003, steps, 2500, search.bindings(name, config, steps), 250, trial=3)
    trainer = _trainer_of(cell)
    assert trainer.step_config.n_critic == config["n_critic"]
    for player, optimizer, updates in (
        ("critic", trainer.wgan.critic_optimizer, config["n_critic"] * steps),
        ("generator", trainer.wgan.generator_optimizer, steps),
    ):
        rate = optimizer.learning_rate
        if name == "weight_clip":
            assert type(optimizer).__name__ == "RMSprop", player
            assert float(np.asarray(rate)) == pytest.approx(config["learning_rate"])
        else:
            schedule = optimizer._learning_rate
            assert float(schedule(0)) == pytest.approx(config["learning_rate"])
            assert float(schedule(updates)) == pytest.approx(0.0, abs=1e-12)
            assert float(schedule(updates // 2)) == pytest.approx(config["learning_rate"] / 2)
            assert optimizer.beta_1 == pytest.approx(config["beta_1"])
            assert optimizer.beta_2 == pytest.approx(config["beta_2"])
    constraint = trainer.wgan.constraint
    own = [k for k in config if k not in OPTIMIZER_KEYS]
    for key in own:
        assert getattr(constraint, key) == pytest.approx(config[key])
    if name == "dragan":
        assert constraint.noise == "reference" and constraint.noise_scale == 0.5


def _result(hq, kl=0.1, modes=8, status="ok", w1=0.5):
    metrics = {"high_quality_fraction": hq, "reverse_kl": kl, "modes_covered": modes, "w1": w1}
    return {"status": status, "metrics": metrics if status == "ok" else {}}


def test_the_choice_is_the_nearest_in_w1_then_high_quality_then_kl_never_a_failed_trial():
    spec = tune.TuneSpec(("gradient_penalty", "r1", "dragan"), ("ring",), configs=3)
    cells = tune.search_cells(spec)
    # GP: the collapsed config (all its samples high quality, one mode) is far in W1: config 0
    scores = [_result(0.5, w1=0.1), _result(0.8, w1=0.3), _result(1.0, 2.08, 1, w1=3.7)]
    # R1: a failed trial is never chosen, even with a NaN-free W1 left in its record; equal W1
    # goes to the higher high quality: config 2
    scores += [_result(0.0, status="failed", w1=0.0), _result(0.1, w1=0.2), _result(0.3, w1=0.2)]
    # DRAGAN: equal W1 and high quality go to the lower reverse KL; a NaN W1 counts as far
    scores += [_result(0.3, 0.2), _result(0.3, 0.1), _result(0.9, w1=math.nan)]
    chosen = tune.choose(spec, dict(zip(cells, scores, strict=True)))
    assert chosen[("ring", "gradient_penalty")]["trial"] == 0
    assert chosen[("ring", "r1")]["trial"] == 2
    assert chosen[("ring", "dragan")]["trial"] == 1
    assert chosen[("ring", "r1")]["config"] == search.draw("r1", 2)
    replicates = tune.replicate_cells(spec, chosen)
    assert [c.seed for c in replicates] == list(range(spec.seeds)) * 3
    assert not {c.seed for c in replicates} & {c.seed for c in cells}  # fresh seeds
    assert replicates[0].steps == 4000 and replicates[0].trial is None
    assert f"train.ema_decay = {tune.EMA_DECAY!r}" in replicates[0].bindings
    r1 = next(c for c in replicates if c.constraint == "r1")
    assert set(search.bindings("r1", search.draw("r1", 2), 4000)) <= set(r1.bindings)


def test_the_expected_best_of_k_is_the_mean_best_over_every_subset():
    scores = [0.3, 0.9, 0.1, 0.5, 0.7, 0.2]
    got = tune_report.expected_best(scores)
    for k in range(1, len(scores) + 1):
        subsets = list(itertools.combinations(scores, k))
        assert got[k - 1] == pytest.approx(np.mean([max(s) for s in subsets]))
    assert got[-1] == max(scores) and got[0] == pytest.approx(np.mean(scores))


def test_a_replicate_becomes_a_raw_row_and_an_ema_row_of_the_same_run():
    raw = {"modes_covered": 7, "high_quality_fraction": 0.6, "reverse_kl": 0.2}
    ema = {"modes_covered": 8, "high_quality_fraction": 0.9, "reverse_kl": 0.01}
    result = {
        "status": "ok",
        "cell": {"dataset": "ring", "constraint": "r1", "seed": 0},
        "metrics": {**ema, "w1": 0.1, NO_EMA: {**raw, "w1": 0.2}},
        "curve": [{"step": 250, "seconds": 3.0, **ema, NO_EMA: raw}],
        "seconds_per_iteration": 0.01,
    }
    plain, averaged = tune_report.split_ema(result)
    assert plain["cell"]["constraint"] == "r1" and averaged["cell"]["constraint"] == "r1 +EMA"
    assert plain["metrics"] == {**raw, "w1": 0.2} and averaged["metrics"] == {**ema, "w1": 0.1}
    assert plain["curve"] == [{"step": 250, "seconds": 3.0, **raw}]
    assert averaged["curve"] == [{"step": 250, "seconds": 3.0, **ema}]
    assert plain["seconds_per_iteration"] == averaged["seconds_per_iteration"] == 0.01
    assert result["cell"]["constraint"] == "r1"  # the recorded result is left as it was
    assert tune_report.split_ema({**result, "metrics": ema}) == [{**result, "metrics": ema}]


def test_the_expected_uniform_row_matches_its_analytic_value_on_the_ring():
    """Uniform on [−1, 1]² against 8 modes of σ 0.01 on the unit circle: four modes sit on the
    box's edges (half their 3σ disc inside), so the expected high-quality fraction is
    6·π·(0.03)²/4 and a mode with disc share p is captured with probability 1 − (1 − p)^2500."""
    from lipgan.study import references

    rows = references.evaluate("2d_ring", 2500, 1)
    cells = rows[references.BOX_EXPECTED]["cells"]
    assert len(cells) == references.EXPECTATION_DRAWS
    hq = np.array([c["high_quality_fraction"] for c in cells])
    modes = np.array([c["modes_covered"] for c in cells])
    p_full = math.pi * 0.03**2 / 4
    expected_modes = 4 * (1 - (1 - p_full) ** 2500) + 4 * (1 - (1 - p_full / 2) ** 2500)
    se = lambda x: x.std(ddof=1) / math.sqrt(len(x))  # noqa: E731
    assert abs(hq.mean() - 6 * p_full) < 4 * se(hq)
    assert abs(modes.mean() - expected_modes) < 4 * se(modes)


def test_a_constraint_without_space_or_a_data_set_it_cannot_tune_is_one_line(tmp_path):
    for args, expected in (
        (["--constraint", "none"], "constraint 'none' has no search space"),
        (["--constraint", "nope"], "unknown constraint 'nope'"),
        (["--dataset", "nope"], "a tuned study runs on the data sets whose configs' Adam"),
    ):
        result = CliRunner().invoke(cli, ["tune", *args, "--out", str(tmp_path / "x")])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.heavy
@pytest.mark.slow
def test_a_tiny_tuned_study_end_to_end_then_resumed(tmp_path):
    from lipgan.study.executors import LocalExecutor

    out = tmp_path / "tuned"
    spec = tune.TuneSpec(
        ("gradient_penalty", "weight_clip"), ("8gaussians",), configs=2, search_steps=10,
        seeds=1, steps=20, eval_every=10, eval_samples=1000,
    )  # fmt: skip
    tune.run_tune(spec, out, executor=LocalExecutor(2))
    chosen = json.loads((out / "chosen.json").read_text())
    assert {(c["dataset"], c["constraint"]) for c in chosen} == {
        ("8gaussians", "gradient_penalty"),
        ("8gaussians", "weight_clip"),
    }
    for c in chosen:
        assert c["config"] == search.draw(c["constraint"], c["trial"])
    data = json.loads((out / "tune.json").read_text())
    assert [len(r["hq"]) for r in data["search"]["8gaussians"].values()] == [2, 2]
    final = data["final"]["8gaussians"]
    assert set(final) == {
        "gradient_penalty",
        "gradient_penalty +EMA",
        "weight_clip",
        "weight_clip +EMA",
    }
    assert all(row["seeds"] == 1 for row in final.values())
    md = (out / "tune.md").read_text()
    # 20 iterations end before the EMA's start (1,000): the EMA row equals the raw one, and says why
    assert (
        "| gradient_penalty +EMA | same runs, EMA (= raw: the runs ended at 20 iterations, before "
        "the EMA starts averaging (ema_start 1,000)) |"
    ) in md
    assert "*uniform on the bounding box, expected*" in md and "PARTIAL" not in md
    # one driver session per phase (search, replicates), summed: the wall time end to end
    wall = data["totals"]["wall"]
    assert wall["sessions"] == 2 and wall["cells"] == 4 + 2 and wall["killed"] == 0
    assert "Wall time, end to end: **0 h" in md and "2 driver session(s) that finished 6 runs" in md
    study = (out / "final" / "study.md").read_text()
    assert "| gradient_penalty +EMA (= raw: the runs ended at 20 iterations" in study
    assert "| weight_clip |" in study
    for name in ("tune.png", "final/study.png"):
        assert (out / name).stat().st_size > 10_000
    # the same call again runs nothing and writes the same report, here beside a shared-config
    # study's row of the same constraint (--shared)
    shared = tmp_path / "shared"
    shared.mkdir()
    row = {"stats": {"modes_covered": [7.5, 0.2, 0, 5]}, "seeds": 5, "failed": 0, "collapsed": 0}
    (shared / "study.json").write_text(
        json.dumps({"summary": {"8gaussians": {"gradient_penalty": row}}})
    )
    again = tune.run_tune(spec, out, executor=LocalExecutor(2), shared=(shared,))
    assert json.loads((out / "tune.json").read_text())["final"]["8gaussians"] == final
    assert len(again.final) == 2
    # nothing was run, so no new session
    assert json.loads((out / "tune.json").read_text())["totals"]["wall"]["sessions"] == 2
    md = (out / "tune.md").read_text()
    # the shared study's s.e. 0.2 over 5 seeds is printed as its SD, 0.2·√5 = 0.45
    assert "| gradient_penalty, shared config | the shared config |  | 7.5 ± 0.4 |" in md
    assert "weight_clip, shared config" not in md  # no such row in that study
    with pytest.raises(ConfigError, match="no study report there"):
        tune.run_tune(spec, out, report_only=True, shared=(tmp_path,))
    # a spec that differs is refused (its cells would not match), as a study's
    with pytest.raises(ConfigError, match="--force"):
        tune.run_tune(dataclasses.replace(spec, configs=3), out)
