"""lipgan study: the report (synthetic cells, fast) and one tiny real study (subprocess cells)."""

from __future__ import annotations

import json
import math

import pytest

from lipgan.study import StudySpec, figure, run_study, summary, tables
from lipgan.study.runner import cell_dir


def _cell(constraint, seed, status="ok", **metrics):
    cell = {
        "dataset": "8gaussians",
        "constraint": constraint,
        "seed": seed,
        "steps": 10,
        "eval_samples": 2500,
        "bindings": [],
    }
    out = {"status": status, "cell": cell}
    if status == "ok":
        out["metrics"], out["seconds_per_iteration"] = metrics, 0.01
    else:
        out["error"] = "Error: non-finite critic_loss"
    return out


def test_collapse_rule():
    assert summary.is_collapsed({"modes_covered": 1, "num_modes": 8}) is True
    assert summary.is_collapsed({"modes_covered": 8, "num_modes": 8, "reverse_kl": 2.0}) is True
    assert summary.is_collapsed({"modes_covered": 8, "num_modes": 8, "reverse_kl": 0.05}) is False
    assert summary.is_collapsed({"w1": 0.1}) is None


def test_report_marks_collapsed_and_failed_cells_and_aggregates(tmp_path):
    good = dict(modes_covered=8, num_modes=8, high_quality_fraction=0.9, w1=0.1)
    results = [
        _cell("gp", 0, **good, reverse_kl=0.02),
        _cell("gp", 1, **{**good, "w1": 0.3}, reverse_kl=0.04),
        _cell(
            "clip",
            0,
            modes_covered=1,
            num_modes=8,
            high_quality_fraction=0.9,
            w1=2.0,
            reverse_kl=2.07,
        ),
        _cell("clip", 1, status="failed"),
    ]
    by_row = summary.summarize(results)["8gaussians"]
    mean, se, infinite, count = by_row["gp"]["stats"]["w1"]
    assert mean == pytest.approx(0.2) and se == pytest.approx(0.1)  # std(ddof=1)/sqrt(2)
    assert (infinite, count) == (0, 2)
    assert by_row["clip"]["collapsed"] == 1 and by_row["clip"]["failed"] == 1
    assert by_row["gp"]["collapsed"] == 0
    spec = {"steps": 10, "seeds": 2, "eval_samples": 2500}
    md = tables.markdown(spec, results)
    row = next(line for line in md.splitlines() if line.startswith("| clip |"))
    assert row.endswith("| 1 | 1 | 1 |")  # seeds, failed, collapsed
    assert "W1 floor" not in md  # a key no cell reports gets no column
    assert "non-finite critic_loss" in md


def test_missing_key_shows_dash():
    results = [
        _cell("a", 0, w1=0.1, reverse_kl=0.1),
        _cell("b", 0, w1=0.2),
    ]
    md = tables.markdown({"steps": 1, "seeds": 1, "eval_samples": 2500}, results)
    row = next(line for line in md.splitlines() if line.startswith("| b |"))
    assert "–" in row


def test_pacgan_rows_beside_ring():
    results = [_cell("a", 0, w1=0.1)]
    results[0]["cell"]["dataset"] = "ring"
    md = tables.markdown({"steps": 7, "seeds": 1, "eval_samples": 2500}, results)
    assert "PacGAN4 | 7.8±0.1" in md and "not the same training" in md


@pytest.mark.slow
def test_tiny_study_end_to_end_resume_and_failure(tmp_path):
    spec = StudySpec(
        constraints=("gradient_penalty", "gradient_penalty:no_such_option=1"),
        datasets=("8gaussians",),
        seeds=1,
        steps=4,
        eval_samples=1000,  # toy W1 needs >= 1000 points
        bindings=("train.steps_per_execution = 2", "train.eval_every = 0"),
    )
    study = run_study(spec, tmp_path, jobs=2)
    data = json.loads((tmp_path / "study.json").read_text())
    assert data["spec"] == spec.as_dict()
    by = {c["cell"]["constraint"]: c for c in data["cells"]}
    ok, bad = by["gradient_penalty"], by["gradient_penalty:no_such_option=1"]
    assert ok["status"] == "ok", ok.get("error")
    assert ok["metrics"]["modes_covered"] <= 8
    assert math.isfinite(ok["seconds_per_iteration"])
    assert bad["status"] == "failed" and "no_such_option" in bad["error"]
    md = (tmp_path / "study.md").read_text()
    assert "## 8gaussians" in md and "| gradient_penalty |" in md
    assert (tmp_path / "study.png").stat().st_size > 1000
    result_file = cell_dir(tmp_path, study.spec.cells()[0]) / "result.json"
    before = result_file.stat().st_mtime_ns
    run_study(spec, tmp_path, jobs=2)  # resume: nothing left to run
    assert result_file.stat().st_mtime_ns == before
    from lipgan.core.errors import ConfigError

    with pytest.raises(ConfigError, match="another spec"):
        run_study(StudySpec(**{**vars(spec), "seeds": 2}), tmp_path)


@pytest.mark.heavy
@pytest.mark.slow
def test_quick_study_from_the_cli_reports_structure_and_a_collapsed_cell(tmp_path, monkeypatch):
    """`lipgan study --quick` itself (its seeds, iterations and data set), with a frozen generator
    (learning rate 0) as a cell that must be reported collapsed: an untrained generator puts all
    its samples in one blob near the origin, where none of the 8 modes is. Narrow MLPs and one
    critic update per iteration: what is checked is the study's plumbing and report, not the
    config's models, and the n_critic critic updates are traced one copy each (~40 % of a cell's
    CPU at the config's n_critic = 5)."""
    from click.testing import CliRunner

    from lipgan.cli.main import cli
    from lipgan.study import QUICK

    frozen = "gradient_penalty:generator/linear_decay.initial_learning_rate=0.0"
    out = tmp_path / "quick"
    figures = []
    draw = figure.draw

    def keep(*args, **kwargs):
        figures.append(draw(*args, **kwargs))
        return figures[-1]

    monkeypatch.setattr(figure, "draw", keep)  # study.png's figure, to read its title
    small = ["mlp_critic.width=16", "mlp_generator.width=16", "train.n_critic=1"]
    result = CliRunner().invoke(
        cli,
        ["study", "--quick", "--constraint", "gradient_penalty", "--constraint", frozen]
        + ["--jobs", "2", "--quiet", "--out", str(out)]
        + [arg for binding in small for arg in ("--bind", binding)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "study.json").read_text())
    assert data["spec"]["seeds"] == QUICK["seeds"] and data["spec"]["steps"] == QUICK["steps"]
    assert data["spec"]["datasets"] == QUICK["datasets"]
    cells = data["cells"]
    assert len(cells) == 2 * QUICK["seeds"]
    assert all(c["status"] == "ok" for c in cells), [c.get("error") for c in cells]
    floor = data["references"]["8gaussians"]["floor"]  # once per data set, not per cell
    for c in cells:
        assert {"modes_covered", "high_quality_fraction", "reverse_kl", "w1"} <= set(c["metrics"])
        assert floor["mean"] < c["metrics"]["w1"]
        assert c["seconds_per_iteration"] > 0
        assert [p["step"] for p in c["curve"]] == [0, 50, 100]  # --quick: a point every 50
    frozen_cells = [c for c in cells if c["cell"]["constraint"] == frozen]
    assert [c["collapsed"] for c in frozen_cells] == [True] * QUICK["seeds"]
    assert all(c["metrics"]["modes_covered"] < 4 for c in frozen_cells)
    md = (out / "study.md").read_text()
    assert "SMOKE TEST" in md
    header = next(line for line in md.splitlines() if line.startswith("| constraint"))
    for column in ("modes", "reverse KL", "W1", "collapsed"):
        assert column in header, header
    row = next(line for line in md.splitlines() if line.startswith(f"| {frozen} |"))
    assert row.rstrip(" |").endswith(f"| {QUICK['seeds']}")  # the collapsed column, last
    assert (out / "study.png").stat().st_size > 1000
    title = figures[-1].get_suptitle()
    assert f"SMOKE TEST (--quick): {QUICK['steps']} iterations, not results" in title


@pytest.mark.heavy
@pytest.mark.slow
def test_a_signalled_study_stops_its_cells_and_the_same_command_resumes_them(tmp_path):
    """SIGTERM to `lipgan study` (a scheduler's stop; a terminal's Ctrl-C reaches only the study,
    whose cells run in their own sessions): each running cell saves a checkpoint and stays
    unfinished, not "failed"; no cell process outlives the study; exit 143 with one line saying how
    to resume; the same command then finishes both cells from their checkpoints."""
    from tests.helpers import CLI, TINY, resume_study, stop_study_once_cells_log
    from tests.test_lifecycle import checkpoint_steps

    out = tmp_path / "stopped"
    steps = 3000
    args = ["-c", CLI, "study", "--dataset", "8gaussians", "--constraint", "gradient_penalty"]
    args += ["--seeds", "2", "--steps", str(steps), "--jobs", "2", "--out", out]
    # --quick: the report's W1 floor from 3 real-vs-real pairs, not 30 (~40 CPU-s of exact W1
    # this test does not look at); the curve keeps its default interval.
    args += ["--quick", "--eval-every", "250"]
    args += [*TINY, "--bind", "train.eval_every=0", "--bind", "train.checkpoint_every=0"]
    spec = StudySpec(("gradient_penalty",), ("8gaussians",), 2, steps)
    run_dirs = [cell_dir(out, cell) for cell in spec.cells()]
    stop_study_once_cells_log(args, run_dirs, out)
    for run_dir in run_dirs:
        saved = checkpoint_steps(run_dir)
        assert saved and 0 < saved[-1] < steps  # saved on the signal (interval saves are off)

    resume_study(args, run_dirs, out, steps)
    for run_dir in run_dirs:  # continued from the checkpoint the signal saved
        assert 0 < checkpoint_steps(run_dir)[0] < steps


def test_digits_cells_pick_the_median_seed_by_fd_and_show_an_image_grid():
    import numpy as np

    cells = [
        {"status": "ok", "metrics": {"digits_fd": fd}, "cell": {"seed": k}}
        for k, fd in enumerate([9.0, 3.0, 5.0])
    ]
    assert figure._median_cell(cells)["cell"]["seed"] == 2  # FD 5.0, the middle one
    images = np.stack([np.full((4, 4, 1), v, np.float32) for v in (-1.0, 1.0, 0.0)])
    grid = figure._image_grid(images, columns=2)
    assert grid.shape == (8, 8)  # 2 rows of 2 columns of 4x4, the empty slot left white
    assert grid[0, 0] == 0.0 and grid[0, 4] == 1.0 and grid[4, 0] == 0.5 and grid[4, 4] == 1.0


def test_an_unknown_constraint_is_refused_before_any_cell_runs(tmp_path):
    from click.testing import CliRunner

    from lipgan.cli.main import cli

    out = tmp_path / "never"
    result = CliRunner().invoke(
        cli, ["study", "--quick", "--constraint", "nosuch:x=1", "--out", out]
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [lines[0]] and "unknown constraint 'nosuch:x=1'" in lines[0]
    assert "gradient_penalty" in lines[0] and not out.exists()


def test_the_default_budget_is_each_configs_own_steps_and_every_row_the_study_runs_is_accepted():
    from lipgan.core.plugins import load_registry
    from lipgan.study import default_constraints
    from lipgan.study.spec import check_spec

    spec = StudySpec(("gradient_penalty",), ("ring", "grid"), seeds=1)
    assert [(c.dataset, c.steps, c.eval_every) for c in spec.cells()] == [
        ("ring", 4000, 250),
        ("grid", 4000, 250),
    ]
    defaults = default_constraints(load_registry().registry)
    certified = [d for d in defaults if d.split(":")[0] in ("bjorck", "aol")]
    assert len(certified) == 2 and all("mlp_critic.activation=maxmin" in d for d in certified)
    lazy = StudySpec(
        (*defaults, "gradient_penalty:every=4", "gradient_penalty:every=16"), ("ring",), 1
    )
    check_spec(lazy)
    binding = {c.constraint: c.gin()[1] for c in lazy.cells()}
    assert "gradient_penalty.every = 16" in binding["gradient_penalty:every=16"]
    bjorck = next(v for k, v in binding.items() if k.startswith("bjorck"))
    assert "mlp_critic.activation = 'maxmin'" in bjorck
    # The config's own periodic evaluation is replaced by the cheaper curve; --bind still wins.
    assert binding["gradient_penalty:every=4"][-1] == "train.eval_every = 0"


def test_each_data_sets_default_budget_is_its_shipped_configs_train_steps():
    """The study reads no gin: its table of budgets (CONFIG_STEPS) says what the configs bind."""
    from lipgan.config import gin_binding
    from lipgan.core.plugins import load_registry
    from lipgan.study.own_data import CONFIGS
    from lipgan.study.spec import CONFIG_STEPS, DATASETS

    registry = load_registry().registry
    assert set(CONFIG_STEPS) == {config for config, _ in DATASETS.values()} | set(CONFIGS.values())
    for config, steps in CONFIG_STEPS.items():
        assert steps == int(gin_binding.query([config], "train.steps", registry))


@pytest.mark.slow
def test_a_cell_sees_the_import_path_of_the_study_that_started_it(tmp_path, monkeypatch):
    """A cell is a child ``python -m`` started by lipgan.core.child_process: it imports from the
    study's own ``sys.path`` (a plugin on a path added in-process, e.g. from a notebook, is
    found by the cell too), not only from the inherited PYTHONPATH."""
    from lipgan.study.runner import run_cell_process
    from lipgan.study.spec import Cell
    from tests.fake_dists import make_dist

    marker = tmp_path / "imported"
    source = f"open({str(marker)!r}, 'w').write('seen')\n"
    site = make_dist(tmp_path / "site", "lipgan-path-probe", "0.1", "path_probe", "probe", source)
    monkeypatch.syspath_prepend(str(site))
    # The plugins load before the bindings are parsed; this one fails there, at once.
    cell = Cell("ring", "none", 0, 10, 2500, ("no_such_configurable.x=1",))
    result = run_cell_process(tmp_path / "out", cell, 1)
    assert result["status"] == "failed" and "no_such_configurable" in result["error"], result
    assert marker.read_text() == "seen"  # the plugin was discovered on the study's sys.path
