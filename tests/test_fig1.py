"""Fig. 1b's qualitative claim on a quick run, and the checks around it."""

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lipgan.reproduce import fig1, fig1_setup, fig1a, fig1b


@pytest.mark.slow
def test_quick_fig1b_shows_clipping_explode_or_vanish_and_gp_flat(tmp_path):
    result = {"fig1b": fig1b.fig1b(fig1_setup.QUICK, log=lambda line: None)}
    # through JSON, as the shipped numbers are read
    result = json.loads(json.dumps(result))
    b = result["fig1b"]
    assert set(b["layer_grad_norms"]) == {
        "weight_clip_c0.1",
        "weight_clip_c0.01",
        "weight_clip_c0.001",
        "gradient_penalty",
    }
    assert all(len(v) == fig1_setup.QUICK.b_depth for v in b["layer_grad_norms"].values())
    assert (
        max(b["max_over_min"]["weight_clip_c0.1"], b["max_over_min"]["weight_clip_c0.001"]) >= 1e2
    )
    assert b["max_over_min"]["gradient_penalty"] <= 10
    assert fig1b.check_fig1b(result) == []
    # clipping piles the weights at +-c; the GP critic's weights do not sit at their extremes
    assert b["weight_histograms"]["weight_clip_c0.001"]["frac_at_bounds"] > 0.5
    assert b["weight_histograms"]["gradient_penalty"]["frac_at_bounds"] < 0.01


def test_check_fig1b_reports_a_flat_clipped_critic_and_a_steep_gp_critic():
    flat = {
        "weight_clip_c0.1": 3.0,
        "weight_clip_c0.01": 5.0,
        "weight_clip_c0.001": 8.0,
        "gradient_penalty": 2.0,
    }
    failures = fig1b.check_fig1b({"fig1b": {"max_over_min": flat}})
    assert len(failures) == 1 and "clipping" in failures[0]
    steep_gp = dict(flat, **{"weight_clip_c0.001": 1e5, "gradient_penalty": 50.0})
    failures = fig1b.check_fig1b({"fig1b": {"max_over_min": steep_gp}})
    assert len(failures) == 1 and "GP" in failures[0]


def test_max_over_min_treats_a_dead_layer_as_infinite_spread():
    assert fig1b.max_over_min([1.0, 10.0, 100.0]) == pytest.approx(100.0)
    assert fig1b.max_over_min([0.0, 1.0]) >= 1e300


def test_reproduce_out_must_be_a_directory(tmp_path):
    from lipgan.cli.main import cli

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    result = CliRunner().invoke(cli, ["reproduce", "fig1", "--out", str(not_a_dir), "--quick"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: --out {not_a_dir} exists and is not a directory"
    ]


def test_fixed_generator_adds_noise_to_the_same_real_batch():
    """Official gan_toy.py: fake = real_data + N(0, 1), row by row, so the penalty's interpolates
    real + ε(fake − real) stay within one noise step of their own real point."""
    import numpy as np

    rng = np.random.default_rng(0)
    real = rng.uniform(-2, 2, size=(4096, 2)).astype(np.float32)
    fake = fig1a.fixed_generator(real, np.random.default_rng(1))
    noise = fake - real
    assert fake.shape == real.shape and fake.dtype == np.float32
    assert abs(noise.mean()) < 0.05 and noise.std() == pytest.approx(1.0, rel=0.05)
    assert abs(np.corrcoef(noise[:, 0], real[:, 0])[0, 1]) < 0.05  # the noise is independent
    # paired: E‖noise‖ = √(π/2) ≈ 1.25; an independent sample would put the pairs ≈ 2.4 apart
    assert np.linalg.norm(noise, axis=1).mean() < 1.3
    assert (
        fig1_setup.FULL.a_init == fig1_setup.QUICK.a_init == "he_uniform"
    )  # the official code's 'he'


@pytest.mark.parametrize("kind", ["bjorck", "aol"])
def test_fig1a_construction_rows_train_maxmin_critics_that_stay_1_lipschitz(kind):
    """The certified rows of Fig. 1a: a MaxMin critic built by the construction, trained against
    the fixed generator, keeps its certified bound <= 1 and (being orthonormal-ish with a
    norm-preserving activation) gradient norms near 1 at the real points."""
    import dataclasses

    from lipgan.data.toy import SAMPLERS
    from lipgan.metrics import diagnostics

    assert kind in fig1a.FIG1A_KINDS and fig1a.FIG1A_ACTIVATION[kind] == "maxmin"
    s = dataclasses.replace(fig1_setup.QUICK, a_steps=30, a_width=32, points=64)
    critic, loss = fig1a.train_critic_against_fixed_generator("8gaussians", kind, s)
    assert np.isfinite(loss)
    assert any(layer.name.startswith(f"{kind}_") for layer in critic.layers)
    assert fig1_setup._constraint(kind).lipschitz_bound(critic) <= 1.0 + 1e-5
    rng = np.random.default_rng(0)
    real = SAMPLERS["8gaussians"](64, rng)
    grads = diagnostics.gradient_norm_stats(critic, real, fig1a.fixed_generator(real, rng), seed=0)
    assert grads["interp/mean"] <= 1.0 + 1e-3
    assert grads["interp/mean"] > 0.5


def test_rows_cover_every_panel_once():
    assert len(fig1.ROWS) == len(set(fig1.ROWS)) == 4 * 3 + 4
    assert {(t, k) for part, t, k in fig1.ROWS if part == "a"} == {
        (toy_set, kind) for toy_set, _ in fig1_setup.TOY_SETS for kind in fig1a.FIG1A_KINDS
    }
    assert {(k, c) for part, k, c in fig1.ROWS if part == "b"} == set(fig1b.FIG1B_CONFIGS)


@pytest.mark.slow
def test_rows_in_worker_processes_give_the_serial_numbers():
    tiny = dataclasses.replace(
        fig1_setup.QUICK, a_steps=2, a_width=16, grid=4, points=8, b_iterations=1, b_width=16
    )
    lines = []
    serial = fig1.run_rows(tiny, lines.append, jobs=1)
    parallel = fig1.run_rows(tiny, lines.append, jobs=2)
    assert len(lines) == 2 * len(fig1.ROWS)

    def leaves(tree):
        if isinstance(tree, dict):
            return [x for key in sorted(tree) for x in leaves(tree[key])]
        if isinstance(tree, list):
            return [x for item in tree for x in leaves(item)]
        return [tree]

    assert serial["fig1a"].keys() == parallel["fig1a"].keys()
    assert serial["fig1b"]["max_over_min"].keys() == parallel["fig1b"]["max_over_min"].keys()
    assert len(leaves(serial)) == len(leaves(parallel)) > 1000
    np.testing.assert_allclose(leaves(parallel), leaves(serial), rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_bjorck_rows_in_worker_processes_end_certified_and_match_the_in_process_rows():
    """A ``--jobs 2`` run once reported Björck rows with Lipschitz estimates 1.02–1.03
    (CHANGELOG.md, Fixed). A Björck row trained in a single-threaded worker process must end with the
    critic it reports certified (SVD bound ≤ 1 + 1e-3), its estimate and gradient norms under
    that bound, and the numbers of the same row run in this process up to float rounding."""
    s = dataclasses.replace(fig1_setup.QUICK, a_steps=40, a_width=64, grid=8, points=64)
    tasks = [("a", "25gaussians", "bjorck"), ("a", "swissroll", "bjorck")]
    lines = []
    workers = fig1.run_tasks(tasks, s, lines.append, jobs=2)
    here = fig1.run_tasks(tasks, s, lines.append, jobs=1)
    assert len(lines) == 4 and all("bound" in line for line in lines)
    for task in tasks:
        row = workers[task]
        bound = row["lipschitz_bound"]
        assert bound <= 1.0 + 1e-3
        assert row["lipschitz_estimate"] <= bound + 1e-5
        assert row["grad_norm"]["interp/max"] <= bound + 1e-5
        assert row["lipschitz_estimate"] > 0.5  # a trained critic, not a flat one
        for key in ("lipschitz_bound", "lipschitz_estimate", "final_critic_loss"):
            np.testing.assert_allclose(row[key], here[task][key], rtol=1e-3, err_msg=key)
        np.testing.assert_allclose(row["surface"], here[task]["surface"], atol=1e-3)


@pytest.mark.slow
def test_worker_processes_print_nothing_on_the_users_terminal(capfd):
    """The workers of ``lipgan reproduce fig1 --jobs 2`` share the user's stderr. They used to
    print TensorFlow's C++ start-up lines ("oneDNN custom operations are on", "Could not find
    cuda drivers") and, in a worker that ran five 1a rows, tf.function's retracing warning
    (each row's new ``train_steps`` counts towards it, though none retraces)."""
    tiny = dataclasses.replace(fig1_setup.QUICK, a_steps=2, a_width=16, grid=4, points=8)
    tasks = [task for task in fig1.ROWS if task[0] == "a"]  # 12 rows: a worker runs >= 6
    lines = []
    fig1.run_tasks(tasks, tiny, lines.append, jobs=2)
    assert len(lines) == len(tasks)
    out, err = capfd.readouterr()
    assert err == "", err[:2000]


def test_a_worker_that_ran_other_code_fails_the_run_in_one_line(tmp_path):
    """Rows computed by code edited after the run began must not pass silently (CHANGELOG.md,
    Fixed: the parallel run whose Björck rows the committed code does not reproduce)."""
    from lipgan.core.errors import ConfigError

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    before = fig1.source_digest([tmp_path])
    assert fig1.source_digest([tmp_path]) == before
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    after = fig1.source_digest([tmp_path])
    assert after != before
    same = {("a", "8gaussians", "bjorck"): before, ("b", "gradient_penalty", None): before}
    fig1.check_sources(before, same)
    with pytest.raises(ConfigError, match="sources changed while the rows ran") as error:
        fig1.check_sources(before, {**same, ("a", "swissroll", "bjorck"): after})
    assert "\n" not in str(error.value) and "swissroll" in str(error.value)
    assert len(fig1.source_digest()) == 16  # the installed packages' own sources


def test_fixed_generator_batches_are_the_batches_a_step_by_step_loop_draws():
    """The 1a rows draw every batch up front; the critic must see the batches, in the order,
    that drawing one real batch and its fixed-generator batch per step gave."""
    from lipgan.data.toy import SAMPLERS

    s = dataclasses.replace(fig1_setup.QUICK, a_steps=3, batch_size=8)
    real, fake = fig1a.fixed_generator_batches("25gaussians", s)
    assert real.shape == fake.shape == (3, 8, 2) and real.dtype == fake.dtype == np.float32
    rng = np.random.default_rng(s.seed)
    for i in range(s.a_steps):
        expected = SAMPLERS["25gaussians"](s.batch_size, rng)
        np.testing.assert_array_equal(real[i], expected)
        np.testing.assert_array_equal(fake[i], fig1a.fixed_generator(expected, rng))


@pytest.mark.parametrize("kind", fig1a.FIG1A_KINDS)
def test_1a_steps_in_one_call_match_a_call_per_step_and_xla(kind):
    """All of a 1a row's critic steps run in one compiled call; the critic must end as it does
    with one call per step (the step index, which keys the penalty's ε, included), and under XLA
    compute the same function up to float rounding."""
    s = dataclasses.replace(fig1_setup.QUICK, a_steps=6, a_width=16, batch_size=32)
    real, fake = fig1a.fixed_generator_batches("swissroll", s)
    points = np.concatenate([real[0], fake[0]])
    results = {}
    for mode, jit in (("one call", False), ("per step", False), ("xla", True)):
        critic, train = fig1a.critic_trainer(kind, dataclasses.replace(s, a_jit_compile=jit))
        if mode == "per step":
            for i in range(s.a_steps):
                loss = train(real[i : i + 1], fake[i : i + 1], start=i)
        else:
            loss = train(real, fake)
        values = np.asarray(critic(points, training=False)).ravel()
        results[mode] = (loss, fig1b._critic_weights(critic), values)
    loss, weights, values = results["one call"]
    assert np.isfinite(loss) and weights.size > 16 * 16
    assert results["per step"][0] == pytest.approx(loss, rel=1e-5, abs=1e-7)
    np.testing.assert_allclose(results["per step"][1], weights, rtol=1e-5, atol=1e-7)
    # XLA sums in another order; Adam turns a rounding difference in a near-zero gradient (the
    # output bias, a dead unit's) into a step of up to lr, so compare the function, not weights
    assert results["xla"][0] == pytest.approx(loss, rel=1e-4, abs=1e-6)
    np.testing.assert_allclose(results["xla"][2], values, atol=5e-4)
    untrained, _ = fig1a.critic_trainer(kind, s)
    untrained_values = np.asarray(untrained(points, training=False)).ravel()
    assert np.abs(untrained_values - values).max() > 5e-3  # the steps ran
