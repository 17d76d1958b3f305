"""lipgan study: the report (synthetic cells, fast) and one tiny real study (subprocess cells)."""

from __future__ import annotations

import json
import math

import pytest

from lipgan.study import StudySpec, report, run_study
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
    assert report.is_collapsed({"modes_covered": 1, "num_modes": 8}) is True
    assert report.is_collapsed({"modes_covered": 8, "num_modes": 8, "reverse_kl": 2.0}) is True
    assert report.is_collapsed({"modes_covered": 8, "num_modes": 8, "reverse_kl": 0.05}) is False
    assert report.is_collapsed({"w1": 0.1}) is None


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
    summary = report.summarize(results)["8gaussians"]
    mean, se, infinite, count = summary["gp"]["stats"]["w1"]
    assert mean == pytest.approx(0.2) and se == pytest.approx(0.1)  # std(ddof=1)/sqrt(2)
    assert (infinite, count) == (0, 2)
    assert summary["clip"]["collapsed"] == 1 and summary["clip"]["failed"] == 1
    assert summary["gp"]["collapsed"] == 0
    spec = {"steps": 10, "seeds": 2, "eval_samples": 2500}
    md = report.markdown(spec, results)
    row = next(line for line in md.splitlines() if line.startswith("| clip |"))
    assert row.endswith("| 1 | 1 | 1 |")  # seeds, failed, collapsed
    assert "W1 floor" not in md  # a key no cell reports gets no column
    assert "non-finite critic_loss" in md


def test_missing_key_shows_dash():
    results = [
        _cell("a", 0, w1=0.1, reverse_kl=0.1),
        _cell("b", 0, w1=0.2),
    ]
    md = report.markdown({"steps": 1, "seeds": 1, "eval_samples": 2500}, results)
    row = next(line for line in md.splitlines() if line.startswith("| b |"))
    assert "–" in row


def test_pacgan_rows_beside_ring():
    results = [_cell("a", 0, w1=0.1)]
    results[0]["cell"]["dataset"] = "ring"
    md = report.markdown({"steps": 7, "seeds": 1, "eval_samples": 2500}, results)
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
    from lipgan.errors import ConfigError

    with pytest.raises(ConfigError, match="another spec"):
        run_study(StudySpec(**{**vars(spec), "seeds": 2}), tmp_path)


@pytest.mark.slow
def test_quick_study_from_the_cli_reports_structure_and_a_collapsed_cell(tmp_path):
    """`lipgan study --quick` itself (its seeds, iterations and data set), with a frozen generator
    (learning rate 0) as a cell that must be reported collapsed: an untrained generator puts all
    its samples in one blob near the origin, where none of the 8 modes is."""
    from click.testing import CliRunner

    from lipgan.cli import cli
    from lipgan.study import QUICK

    frozen = "gradient_penalty:generator/linear_decay.initial_learning_rate=0.0"
    out = tmp_path / "quick"
    result = CliRunner().invoke(
        cli,
        ["study", "--quick", "--constraint", "gradient_penalty", "--constraint", frozen]
        + ["--jobs", "2", "--quiet", "--out", str(out)],
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


def _processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line contains ``text`` (Linux /proc)."""
    from pathlib import Path

    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                pids.append(int(cmdline.parent.name))
        except OSError:  # the process ended while we looked
            continue
    return pids


@pytest.mark.slow
def test_a_signalled_study_stops_its_cells_and_the_same_command_resumes_them(tmp_path):
    """SIGTERM to `lipgan study` (a scheduler's stop; a terminal's Ctrl-C reaches only the study,
    whose cells run in their own sessions): each running cell saves a checkpoint and stays
    unfinished, not "failed"; no cell process outlives the study; exit 143 with one line saying how
    to resume; the same command then finishes both cells from their checkpoints."""
    import signal
    import time

    from tests.conftest import finish, start_python
    from tests.test_lifecycle import CLI, TINY, checkpoint_steps

    out = tmp_path / "stopped"
    steps = 3000
    args = ["-c", CLI, "study", "--dataset", "8gaussians", "--constraint", "gradient_penalty"]
    args += ["--seeds", "2", "--steps", str(steps), "--jobs", "2", "--out", out]
    args += [*TINY, "--bind", "train.eval_every=0", "--bind", "train.checkpoint_every=0"]
    spec = StudySpec(("gradient_penalty",), ("8gaussians",), 2, steps)
    run_dirs = [cell_dir(out, cell) for cell in spec.cells()]
    proc = start_python(*args)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        logs = [d / "metrics.jsonl" for d in run_dirs]
        if all(f.is_file() and f.read_text().strip() for f in logs):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stopped = finish(proc, timeout=300)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    last = stopped.stderr.strip().splitlines()[-1]
    assert last.startswith("Stopped: SIGTERM: the study stopped with 0 of 2 cells finished"), last
    assert "run the same command again to resume" in last and "Traceback" not in stopped.stderr
    assert _processes_mentioning(str(out)) == []
    for run_dir in run_dirs:
        assert not (run_dir / "result.json").exists()  # unfinished, not failed
        saved = checkpoint_steps(run_dir)
        assert saved and 0 < saved[-1] < steps  # saved on the signal (interval saves are off)

    resumed = finish(start_python(*args), timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    data = json.loads((out / "study.json").read_text())
    assert [c["status"] for c in data["cells"]] == ["ok", "ok"], data["cells"]
    for run_dir, stop_step in zip(run_dirs, [checkpoint_steps(d)[0] for d in run_dirs]):
        assert json.loads((run_dir / "result.json").read_text())["step"] == steps
        logged = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").open()]
        # continued from the checkpoint: the steps before it were not trained (or logged) twice
        assert logged == sorted(set(logged)) and logged[-1] == steps
        assert 0 < stop_step < steps


def test_digits_cells_pick_the_median_seed_by_fd_and_show_an_image_grid():
    import numpy as np

    cells = [
        {"status": "ok", "metrics": {"digits_fd": fd}, "cell": {"seed": k}}
        for k, fd in enumerate([9.0, 3.0, 5.0])
    ]
    assert report._median_cell(cells)["cell"]["seed"] == 2  # FD 5.0, the middle one
    images = np.stack([np.full((4, 4, 1), v, np.float32) for v in (-1.0, 1.0, 0.0)])
    grid = report._image_grid(images, columns=2)
    assert grid.shape == (8, 8)  # 2 rows of 2 columns of 4x4, the empty slot left white
    assert grid[0, 0] == 0.0 and grid[0, 4] == 1.0 and grid[4, 0] == 0.5 and grid[4, 4] == 1.0


def test_an_unknown_constraint_is_refused_before_any_cell_runs(tmp_path):
    from click.testing import CliRunner

    from lipgan.cli import cli

    out = tmp_path / "never"
    result = CliRunner().invoke(
        cli, ["study", "--quick", "--constraint", "nosuch:x=1", "--out", out]
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [lines[0]] and "unknown constraint 'nosuch:x=1'" in lines[0]
    assert "gradient_penalty" in lines[0] and not out.exists()
