"""The run lifecycle: exact resume after SIGKILL, graceful stops, the NaN guard, run-dir rules.

Everything trains a tiny toy model; the kill and signal tests run ``lipgan run`` in a subprocess
because that is what a user (or a scheduler) kills.
"""

import json
import signal
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import finish, start_python
from tests.fake_dists import make_dist
from tests.helpers import CLI, TINY, drawn_points, gin_config, invoke, wait_while_running


def one_line_error(result, *fragments):
    """Exit != 0, no traceback, and exactly one error line (progress lines may precede it)."""
    lines = [ln for ln in result.output.splitlines() if ln.startswith("Error")]
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def train(run_dir, steps, *extra):
    result = invoke(
        "run", *TINY, "--bind", f"train.steps={steps}", "--run-dir", str(run_dir), *extra
    )
    assert result.exit_code == 0, result.output
    return result


def weights(run_dir: Path) -> dict:
    """Every model and optimizer tensor of the latest checkpoint (not the input-pipeline state).

    Keras 3 models share their variables with their optimizer, so the weights are stored under
    ``critic_optimizer/_trainable_variables/...`` next to the moments and the step counter.
    """
    reader = tf.train.load_checkpoint(str(run_dir / "checkpoints"))
    names = [
        n
        for n, _ in tf.train.list_variables(str(run_dir / "checkpoints"))
        if n.startswith(("critic", "generator", "iteration", "seed"))
    ]
    for expected in (
        "critic_optimizer/_trainable_variables/0/",
        "generator_optimizer/_trainable_variables/0/",
        "critic_optimizer/_iterations/",
        "iteration/",
    ):
        assert any(n.startswith(expected) for n in names), (expected, names)
    return {n: reader.get_tensor(n) for n in names}


def checkpoint_steps(run_dir: Path) -> list[int]:
    return sorted(
        int(p.name.split("-")[1].split(".")[0])
        for p in (run_dir / "checkpoints").glob("ckpt-*.index")
    )


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# -- exact resume ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path):
    steps = 60
    bindings = [
        *TINY,
        "--bind",
        f"train.steps={steps}",
        "--bind",
        "train.checkpoint_every=10",
        "--bind",
        "train.steps_per_execution=10",
    ]
    train(tmp_path / "whole", steps, *bindings)  # uninterrupted, in this process

    killed_dir = tmp_path / "killed"
    args = ["-c", CLI, "run", *bindings, "--run-dir", killed_dir]
    proc = start_python(*args)
    reached = wait_while_running(
        proc,
        lambda: (
            (killed_dir / "checkpoints").is_dir()
            and any(s >= 20 for s in checkpoint_steps(killed_dir))
        ),
        "a checkpoint at step >= 20",
        poll=0.01,
    )
    assert reached and proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    finish(proc)
    assert proc.returncode == -signal.SIGKILL
    assert max(checkpoint_steps(killed_dir)) < steps

    resumed = finish(start_python(*args))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed from" in resumed.stdout
    a, b = weights(tmp_path / "whole"), weights(killed_dir)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    logged = [
        json.loads(ln)["step"] for ln in (killed_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert logged == sorted(set(logged)) and logged[-1] == steps  # no step logged twice


RUN_SEPARATOR = "=== lipgan run ===\n"

#: ``lipgan run ARGS`` for each ARGS of a JSON list, in one process (one TensorFlow start); each
#: run's output follows RUN_SEPARATOR; the first failing run ends the process with its status.
RUNS_IN_ONE_PROCESS = """
import json, sys, traceback
from click.testing import CliRunner
from lipgan.cli import cli
for args in json.loads(sys.argv[1]):
    result = CliRunner().invoke(cli, args)
    print("=== lipgan run ===\\n" + result.output, flush=True)
    if result.exit_code != 0:
        if result.exc_info and not isinstance(result.exception, SystemExit):
            traceback.print_exception(*result.exc_info)
        sys.exit(result.exit_code)
"""


@pytest.mark.slow
def test_sigkill_then_resume_across_checkpoint_input_and_strategy_changes(tmp_path):
    """The kill -9 test again, with the segments changing what they checkpoint.

    Killed without the input position, continued under another strategy (mirrored: its input
    cannot be checkpointed, so it fast-forwards), then back on the default strategy (fast-forwards
    and must checkpoint the iterator it then reads), then resumed once more from that position.
    """
    steps = 60
    bindings = [
        *TINY,
        "--bind",
        "train.checkpoint_every=10",
        "--bind",
        "train.steps_per_execution=10",
    ]
    train(tmp_path / "whole", steps, *bindings)
    split = tmp_path / "split"
    run = ["-c", CLI, "run", *bindings, "--run-dir", split]
    killed = start_python(
        *run, "--bind", f"train.steps={steps}", "--bind", "train.checkpoint_input=False"
    )
    reached = wait_while_running(
        killed,
        lambda: (split / "checkpoints").is_dir() and any(s >= 10 for s in checkpoint_steps(split)),
        "a checkpoint at step >= 10",
        poll=0.01,
    )
    # Frozen at once, then killed: the run cannot write more checkpoints between the check and
    # the kill (it could reach step 30, the next segment's end, on a fast machine otherwise).
    killed.send_signal(signal.SIGSTOP)
    assert reached and killed.poll() is None, "the run finished before it could be killed"
    killed.send_signal(signal.SIGKILL)
    finish(killed)
    first = max(checkpoint_steps(split))
    assert first < 30
    segments = [
        (30, ["--strategy", "mirrored", "--bind", "mirrored.logical_cpus=1", "--force"]),
        (45, ["--strategy", "default", "--force"]),
        (steps, []),
    ]
    # The three resumes in one child (one TensorFlow start, not three): `lipgan run` in-process.
    runs = [
        ["run", *bindings, "--run-dir", str(split), "--bind", f"train.steps={until}", *extra]
        for until, extra in segments
    ]
    done = finish(start_python("-c", RUNS_IN_ONE_PROCESS, json.dumps(runs)))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    outputs = done.stdout.split(RUN_SEPARATOR)[1:]
    assert len(outputs) == len(segments), done.stdout[-2000:]
    assert "fast-forwarding" in outputs[0] and "fast-forwarding" in outputs[1]
    assert "fast-forwarding" not in outputs[2]  # ckpt-45 holds the position of what was read
    a, b = weights(tmp_path / "whole"), weights(split)
    for name in a:  # mirrored on one device may order float operations differently
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=name)


MIRRORED_SPLIT_RUN = """
import sys
from click.testing import CliRunner
from lipgan.cli import cli
root, args = sys.argv[1], sys.argv[2:]
for steps, run_dir in [(20, "whole"), (10, "split"), (20, "split")]:
    result = CliRunner().invoke(cli, ["run", *args, "--bind", f"train.steps={steps}",
                                      "--run-dir", f"{root}/{run_dir}"])
    print(result.output)
    assert result.exit_code == 0
"""


@pytest.mark.slow
def test_mirrored_resume_replays_the_input_exactly(tmp_path):
    """MirroredStrategy's input iterator cannot be checkpointed: the pipeline is replayed instead."""
    # One subprocess (its own logical CPUs) trains 20 steps, then 10 steps and resumes them to 20.
    result = finish(
        start_python(
            "-c",
            MIRRORED_SPLIT_RUN,
            tmp_path,
            *TINY,
            "--strategy",
            "mirrored",
            "--bind",
            "mirrored.logical_cpus=2",
        )
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "fast-forwarding the input pipeline by 10 batches" in result.stdout
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "split")
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_saves_a_checkpoint_and_says_how_to_resume(tmp_path, sig):
    run_dir = tmp_path / "run"
    proc = start_python(
        "-c",
        CLI,
        "run",
        *TINY,
        "--bind",
        "train.steps=100000",
        "--bind",
        "train.checkpoint_every=0",
        "--run-dir",
        run_dir,
    )
    rows = run_dir / "metrics.jsonl"
    started = wait_while_running(
        proc, lambda: rows.is_file() and rows.read_text().strip(), "a first metrics row"
    )
    assert started, f"the run ended before its signal: {finish(proc).stderr[-2000:]}"
    proc.send_signal(sig)
    result = finish(proc, timeout=120)
    assert result.returncode == 128 + sig, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Stopped: {sig.name} at step "), last
    assert f"lipgan run --resume {run_dir}" in last
    step = int(last.split(" at step ")[1].split(":")[0])
    assert checkpoint_steps(run_dir) == [
        step
    ]  # saved on the signal, although interval saves are off
    assert "Traceback" not in result.stderr


# -- the NaN guard --------------------------------------------------------------------------------
NAN_PLUGIN = '''
import tensorflow as tf
from lipgan import Constraint, hookimpl

class NanAfter(Constraint):
    """Injects a NaN into the penalty, or only into its gradient, from iteration ``step`` on."""
    name = "nan_after"

    def __init__(self, step: int = 7, where: str = "penalty"):
        self.step, self.where = step, where

    def penalty(self, critic, real, fake, ctx):
        bad = tf.cast(ctx.step >= self.step, tf.float32)
        if self.where == "penalty":
            nan = tf.fill([tf.shape(real)[0]], float("nan"))
            return tf.where(bad > 0, nan, tf.zeros_like(nan))
        # Finite value, non-finite gradient: d/dx sqrt(x) at 0 is inf, times 0 is NaN.
        scores = tf.reshape(critic(real, training=False), [-1])
        x = tf.where(bad > 0, 0.0 * scores * scores, tf.ones_like(scores))
        return tf.sqrt(x) - (1.0 - bad)

@hookimpl
def lipgan_register_constraints(register):
    register(NanAfter)
'''


@pytest.mark.parametrize(
    "where, term",
    [
        ("penalty", "penalty (critic update 1 of 1)"),
        ("gradient", "critic gradient (critic update 1 of 1)"),
    ],
)
def test_non_finite_value_stops_with_step_and_term_and_keeps_last_good_checkpoint(
    tmp_path, monkeypatch, where, term
):
    site = make_dist(
        tmp_path / "site", "lipgan-nan", "0.1", "nan_after", "lipgan_nan_after", NAN_PLUGIN
    )
    monkeypatch.syspath_prepend(str(site))
    run_dir = tmp_path / "run"
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=20",
        "--bind",
        "train.constraint = @nan_after()",
        "--bind",
        f"nan_after.where = '{where}'",
        "--run-dir",
        str(run_dir),
    )
    # Iteration index 7 is the 8th iteration, i.e. "step 8" (steps count completed iterations).
    line = one_line_error(result, f"non-finite {term} at step 8;", "ckpt-5")
    assert "lower the learning rate" in line
    assert checkpoint_steps(run_dir) == [5]
    rows = [json.loads(ln) for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [5] and all(np.isfinite(v) for v in rows[0].values())


# -- run-dir rules ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_different_config_is_refused_then_forced(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    before = snapshot(run_dir)
    refused = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=10",
        "--bind",
        "gradient_penalty.weight=1.0",
        "--run-dir",
        str(run_dir),
    )
    one_line_error(refused, "different config", "constraint.weight: 0.1 -> 1.0", "--force")
    assert snapshot(run_dir) == before  # nothing written

    forced = train(run_dir, 10, "--bind", "gradient_penalty.weight=1.0", "--force")
    assert "resumed from" in forced.output
    assert "gradient_penalty.weight = 1.0" in gin_config(run_dir)
    replaced = json.loads((run_dir / "run-before-5.json").read_text())
    assert "gradient_penalty.weight = 0.1" in replaced["gin"]["config"]
    assert checkpoint_steps(run_dir)[-1] == 10


@pytest.mark.slow
def test_resume_uses_the_runs_own_config_and_can_extend_it(tmp_path, tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    again = invoke(
        "run", "--resume", str(run_dir)
    )  # the default config differs; --resume reads the run's own (its record's gin config)
    assert again.exit_code == 0 and "already trained to step 5" in again.output, again.output
    longer = invoke("run", "--resume", str(run_dir), "--bind", "train.steps=10")
    assert longer.exit_code == 0, longer.output
    assert "resumed from" in longer.output and checkpoint_steps(run_dir)[-1] == 10
    one_line_error(invoke("run", "--resume", str(tmp_path / "nothing")), "no such run directory")


@pytest.mark.slow
def test_corrupted_checkpoint_falls_back_then_fails_clearly(tmp_path):
    run_dir = tmp_path / "run"
    train(run_dir, 10)
    data = next((run_dir / "checkpoints").glob("ckpt-10.data-*"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 64] = bytes(64)  # flip bytes in the middle: checksums fail
    data.write_bytes(bytes(raw))
    result = train(run_dir, 15)
    assert "cannot restore" in result.output and "ckpt-10" in result.output
    assert "resumed from" in result.output and "ckpt-5 at step 5" in result.output

    for data in (run_dir / "checkpoints").glob("ckpt-*.data-*"):
        data.write_bytes(data.read_bytes()[:16])  # every checkpoint truncated
    before = snapshot(run_dir)
    result = invoke("run", *TINY, "--bind", "train.steps=20", "--run-dir", str(run_dir))
    one_line_error(result, "no readable checkpoint", "another --run-dir")
    assert snapshot(run_dir) == before


def test_run_dir_that_is_a_file_or_not_writable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(invoke("run", *TINY, "--run-dir", str(blocker)), "is not a directory")
    one_line_error(invoke("run", *TINY, "--run-dir", str(blocker / "sub")), "is a file")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        probe = locked / "probe"
        try:
            probe.write_text("x")  # root ignores permissions: use a kernel filesystem instead
            probe.unlink()
            target = Path("/sys/lipgan-run-dir-test")
        except OSError:
            target = locked / "run"
        one_line_error(invoke("run", *TINY, "--run-dir", str(target)), "not writable")
        assert not target.exists()
    finally:
        locked.chmod(0o700)


# -- eval, sample, config show --------------------------------------------------------------------
@pytest.mark.slow
def test_eval_sample_and_config_show(tmp_path, tiny_run, monkeypatch):
    run_dir = tiny_run  # trained to step 5 (conftest)
    result = invoke("eval", str(run_dir), "--samples", "1000")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)
    assert metrics["step"] == 5 and metrics["num_modes"] == 8
    assert 0 <= metrics["high_quality_fraction"] <= 1 and metrics["w1"] > 0

    out = tmp_path / "samples" / "s"
    drawn = drawn_points(monkeypatch)
    result = invoke("sample", str(run_dir), "-n", "50", "--out", str(out))
    assert result.exit_code == 0, result.output
    # The real points beside the generated ones (they were left out: only the samples showed).
    assert len(drawn["generated"]) == len(drawn["real"]) == 50
    radii = np.linalg.norm(np.asarray(drawn["real"]), axis=1)
    assert np.all(np.abs(radii - radii.mean()) < 0.2) and radii.mean() > 1  # the 8 Gaussians
    with np.load(tmp_path / "samples" / "s.npz") as npz:
        assert npz["samples"].shape == (50, 2) and int(npz["step"]) == 5
    assert (tmp_path / "samples" / "s.png").read_bytes()[:4] == b"\x89PNG"

    shown = invoke("config", "show", "--bind", "train.steps=7", "--json")
    assert shown.exit_code == 0, shown.output
    config = json.loads(shown.output)
    assert config["train.steps"] == "7" and config["dataset.name"] == "'lipgan_toy/8gaussians'"
    assert not list(Path.cwd().glob("runs/wgangp_toy-*T*"))  # nothing trained


def test_eval_and_sample_need_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    one_line_error(invoke("eval", str(run_dir)), "no run.json there")
    shown = invoke("config", "show")  # a record as a run that failed before its checkpoint left
    record = {"format": 1, "settings": {}, "rebuild": {}, "gin": {"config": shown.output}}
    (run_dir / "run.json").write_text(json.dumps(record))
    one_line_error(invoke("eval", str(run_dir)), "no checkpoint in")
    one_line_error(invoke("sample", str(run_dir), "--out", str(tmp_path / "s")), "no checkpoint in")
    assert not (tmp_path / "s.npz").exists()


# -- progress and TensorBoard ---------------------------------------------------------------------
@pytest.mark.slow
def test_terminal_gets_a_bar_pipes_get_lines_quiet_gets_the_run_dir(tmp_path):
    import io

    from lipgan.progress import Bar, Progress, Quiet, for_terminal

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert isinstance(for_terminal(False, Terminal()), Bar)
    assert type(for_terminal(False, io.StringIO())) is Progress
    assert isinstance(for_terminal(True, Terminal()), Quiet)

    stream = Terminal()
    bar = Bar(stream)
    bar.start(total=10, initial=0)
    bar.update(5, {"critic_loss": -0.25})
    bar.close()
    assert (
        "5/10" in stream.getvalue()
        and "it/s" in stream.getvalue()
        and "critic_loss=-0.250" in stream.getvalue()
    )

    lines = train(tmp_path / "plain", 5).output
    assert "step 5/5  critic_loss" in lines and "it/s" in lines
    quiet = invoke(
        "run", *TINY, "--bind", "train.steps=5", "--run-dir", str(tmp_path / "q"), "--quiet"
    )
    assert quiet.exit_code == 0 and quiet.output.strip() == str(tmp_path / "q")


@pytest.mark.slow
def test_tensorboard_gets_scalars_histograms_and_sample_images(tmp_path):
    run_dir = tmp_path / "run"
    train(
        run_dir,
        10,
        "--bind",
        "train.histogram_every=5",
        "--bind",
        "train.eval_every=10",
        "--bind",
        "train.eval_samples=1000",
        "--bind",
        "train.diagnostics_every=10",
    )
    tags: dict[str, set] = {}
    for event_file in (run_dir / "tensorboard").glob("events.*"):
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            for value in event.summary.value:
                kind = value.metadata.plugin_data.plugin_name
                tags.setdefault(kind, set()).add(value.tag)
    assert {
        "critic_loss",
        "eval/w1",
        "eval/high_quality_fraction",
        "diag/lipschitz_estimate",
    } <= tags["scalars"]
    assert any(t.startswith("weights/critic/") for t in tags["histograms"])
    assert any(t.startswith("weights/generator/") for t in tags["histograms"])
    assert "samples" in tags["images"]
    row = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert row["step"] == 10 and row["eval/modes_covered"] <= 8


@pytest.mark.slow
def test_resume_without_the_input_in_checkpoints_replays_it_exactly(tmp_path):
    off = ["--bind", "train.checkpoint_input=False"]
    train(tmp_path / "whole", 10, *off)
    train(tmp_path / "split", 5, *off)
    second = train(tmp_path / "split", 10, *off)
    assert "fast-forwarding the input pipeline by 5 batches" in second.output
    names = {
        n.split("/")[0] for n, _ in tf.train.list_variables(str(tmp_path / "split" / "checkpoints"))
    }
    assert "data" not in names
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "split")
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
