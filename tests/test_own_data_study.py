"""`lipgan study` and `lipgan tune` on a .npz of the user's own, from the CLI: the report with its
W1 floor and reference rows, the figure, a resume refused when the file changed, bad input in one
line with nothing written. Narrow MLPs and one critic update per iteration: the plumbing and the
report are checked here, not the config's models (as tests/test_study.py's --quick test)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli

SMALL = ["mlp_critic.width=16", "mlp_generator.width=16", "train.n_critic=1"]
BINDS = [arg for binding in SMALL for arg in ("--bind", binding)]
MODES = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])


def _npz(path, seed=0):
    rng = np.random.default_rng(seed)
    x = MODES[rng.integers(0, 4, 600)] + 0.05 * rng.standard_normal((600, 2))
    np.savez(path, x=x.astype(np.float32), modes=MODES, mode_std=0.05)
    return path


def _one_line_refusal(result, expected):
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.output, lines


@pytest.mark.slow  # six CLI calls, each loading the plugins (tens of seconds under load)
def test_bad_files_are_refused_in_one_line_before_anything_is_written(tmp_path):
    np.savez(tmp_path / "keys.npz", a=np.zeros((600, 2)), b=np.zeros(3))
    np.save(tmp_path / "nan.npy", np.full((600, 2), np.nan))
    for command in ("study", "tune"):
        for path, expected in (
            (tmp_path / "missing.npz", "no such file"),
            (tmp_path / "keys.npz", "holds arrays a, b; put the examples under 'x'"),
            (tmp_path / "nan.npy", "1200 non-finite value(s)"),
        ):
            out = tmp_path / "out"
            result = CliRunner().invoke(
                cli, [command, "--dataset", str(path), "--constraint", "gradient_penalty",
                      "--seeds", "1", "--steps", "1", "--out", str(out)],
            )  # fmt: skip
            _one_line_refusal(result, expected)
            assert not out.exists()


@pytest.mark.heavy
@pytest.mark.slow
def test_a_study_and_a_tune_on_your_own_npz(tmp_path):
    data = _npz(tmp_path / "pts.npz")
    out = tmp_path / "study"
    args = ["study", "--dataset", str(data), "--constraint", "gradient_penalty"]
    args += ["--constraint", "weight_clip", "--seeds", "1", "--steps", "20", "--jobs", "2"]
    args += ["--quiet", "--out", str(out), *BINDS]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "study.json").read_text())
    (own,) = report["spec"]["data"]
    name = own["name"]
    assert name.startswith("pts-") and report["spec"]["datasets"] == [name]
    assert (own["kind"], own["held_out"], own["modes"]) == ("vectors", 200, 4)
    cells = report["cells"]
    assert len(cells) == 2 and all(c["status"] == "ok" for c in cells), cells
    floor = report["references"][name]["floor"]
    assert floor["n"] == 200 and 0 < floor["mean"]
    for c in cells:
        metrics = c["metrics"]
        assert {"w1", "critic_wasserstein", "modes_covered", "reverse_kl"} <= set(metrics)
        assert metrics["num_modes"] == 4 and metrics["w1"] > floor["mean"]  # 20 iterations
    md = (out / "study.md").read_text()
    assert f"## {name}" in md and "W1 floor (real vs real, n = 200" in md
    assert "trained with wgangp_toy_quick.gin (the toy MLPs)" in md
    assert "| *real data: training rows" in md and "| *uniform on the bounding box:" in md
    assert (out / "study.png").stat().st_size > 10_000
    assert (out / "data" / f"{name}.npz").is_file()
    # the file changes: resuming the same study is refused in one line, nothing run or written
    before = (out / "spec.json").read_text()
    _npz(data, seed=1)
    _one_line_refusal(CliRunner().invoke(cli, args), "pts.npz changed since the study in")
    assert (out / "spec.json").read_text() == before
    assert set((out / "data").glob("pts-*.npz")) == {out / "data" / f"{name}.npz"}

    tuned = tmp_path / "tuned"
    args = ["tune", "--dataset", str(data), "--constraint", "gradient_penalty", "--configs", "1"]
    args += ["--search-steps", "10", "--seeds", "1", "--steps", "20", "--jobs", "2", "--quiet"]
    args += ["--out", str(tuned), *BINDS]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (own,) = json.loads((tuned / "tune.json").read_text())["spec"]["data"]
    assert own["name"] != name  # the changed file is another data set
    md = (tuned / "tune.md").read_text()
    assert f"## {own['name']}" in md and "Your data:" in md and "| *real data* |" in md
    final = (tuned / "final" / "study.md").read_text()
    assert "W1 floor (real vs real, n = 200" in final
    assert (tuned / "tune.png").is_file() and (tuned / "final" / "study.png").is_file()
