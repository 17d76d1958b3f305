"""No silent loss: each test backs a row of ``docs/reliability.md``.

Wrong results and lost data first (input position, metrics rows, the non-finite guard, what
``fit`` counts, what resume compares), then the one-line errors. Training is the tiny toy run of
``tests/test_lifecycle.py`` (width 16, n_critic 1, batch 32).
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from tests.helpers import TINY, invoke
from tests.test_lifecycle import checkpoint_steps, one_line_error, snapshot, train, weights
from tests.test_python_api import lipgan_quiet, make_trainer


def metric_steps(run_dir) -> list[int]:
    return [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]


def assert_same_weights(a_dir, b_dir):
    a, b = weights(a_dir), weights(b_dir)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


# -- 1. the checkpoint tracks the iterator the loop reads -----------------------------------------
@pytest.mark.slow
def test_resume_after_a_fast_forward_replays_the_right_input(tmp_path):
    """checkpoint_input off, then on: the second segment fast-forwards; the third must resume
    from the fast-forwarded position, not from a never-advanced iterator."""
    train(tmp_path / "whole", 15)
    train(tmp_path / "split", 5, "--bind", "train.checkpoint_input=False")
    second = train(tmp_path / "split", 10, "--bind", "train.checkpoint_input=True")
    third = train(tmp_path / "split", 15)
    assert_same_weights(tmp_path / "whole", tmp_path / "split")
    assert "fast-forwarding" not in third.output  # ckpt-10 holds the position now
    # and the message no longer blames the (default) strategy
    assert "fast-forwarding the input pipeline by 5 batches (ckpt-5 holds no input position" in (
        second.output
    )
    assert "strategy's input iterator cannot be checkpointed" not in second.output


# -- 2. metrics.jsonl keeps a row for every checkpoint --------------------------------------------
@pytest.mark.slow
def test_a_failure_at_a_logged_step_leaves_no_checkpoint_without_its_row(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    calls = []

    def failing_evaluate(self, num_samples=None):
        calls.append(self.step)
        if len(calls) == 1:
            raise lipgan.core.errors.ConfigError("evaluation failed (simulated)")
        return {"eval/simulated": 1.0}

    monkeypatch.setattr(lipgan.Trainer, "evaluate", failing_evaluate)
    every10 = ["--bind", "train.eval_every=10"]
    failed = invoke("run", *TINY, "--bind", "train.steps=20", *every10, "--run-dir", str(run_dir))
    one_line_error(failed, "evaluation failed")
    assert checkpoint_steps(run_dir) == [5] and metric_steps(run_dir) == [5]
    train(run_dir, 20, *every10)
    assert metric_steps(run_dir) == [5, 10, 15, 20]
    assert "eval/simulated" in json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[1])


@pytest.mark.slow
def test_a_torn_last_metrics_line_is_dropped_with_a_warning(tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    metrics = run_dir / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"step": 6, "critic_lo')
    resumed = train(run_dir, 10)
    assert "dropped its last line, cut short by a crash" in resumed.output
    assert metric_steps(run_dir) == [5, 10]
    # a damaged line before the last is not a crash's doing: one line, nothing written
    metrics.write_text('{"step": 5}\nnot json\n{"step": 10}\n')
    before = snapshot(run_dir)
    refused = invoke("run", *TINY, "--bind", "train.steps=15", "--run-dir", str(run_dir))
    one_line_error(refused, "metrics.jsonl:2 is not a metrics row", "delete that line")
    assert snapshot(run_dir) == before


# -- 3. the non-finite guard checks the weights the checkpoint keeps ------------------------------
def test_an_overflowing_generator_update_is_caught_and_never_checkpointed(tmp_path):
    """Finite loss and gradients, but the update overflows the generator's weights to Inf (the
    issue's ``initial_learning_rate=1e39`` is now refused up front: it is Inf in float32)."""
    refused = invoke(
        "run",
        *TINY,
        "--bind",
        "generator/linear_decay.initial_learning_rate=1e39",
        "--run-dir",
        str(tmp_path / "refused"),
    )
    one_line_error(
        refused, "initial_learning_rate=inf is not a finite number (settings are float32"
    )
    assert not (tmp_path / "refused").exists()

    def generator(shape):  # steep: gradients of ~1e5 wrt its kernel, times lr 1e34 = Inf
        return keras.Sequential(
            [keras.Input((2,)), keras.layers.Dense(2), keras.layers.Rescaling(1e6)]
        )

    trainer = lipgan.Trainer(
        data=tf.data.Dataset.from_tensor_slices(points()),
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=generator,
        constraint=lipgan.constraints.GradientPenalty(weight=1.0),
        generator_optimizer=keras.optimizers.SGD(1e34),
        step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1, seed=3, jit_compile=False),
        intervals=lipgan.Intervals(log_every=1, checkpoint_every=1, plot_samples=0),
    )
    run_dir = tmp_path / "run"
    with pytest.raises(lipgan.core.errors.NonFiniteLossError, match="non-finite generator weights"):
        trainer.fit(5, run_dir=run_dir, progress=lipgan_quiet())
    for step in checkpoint_steps(run_dir):
        prefix = str(run_dir / "checkpoints" / f"ckpt-{step}")
        reader = tf.train.load_checkpoint(prefix)
        for name, _ in tf.train.list_variables(prefix):
            value = reader.get_tensor(name)
            if np.issubdtype(np.asarray(value).dtype, np.floating):
                assert np.all(np.isfinite(value)), (step, name)


def save_nan_checkpoint(run_dir, step):
    """What older versions could leave: a checkpoint whose generator weights are NaN."""
    from lipgan.cli.rundir import load_run
    from lipgan.run.checkpoint import RunCheckpoint

    trainer, _ = load_run(run_dir, [], False, ())
    for variable in trainer.generator.weights:
        variable.assign(tf.fill(variable.shape, float("nan")))
    trainer.wgan.iteration.assign(step)
    checkpoint = RunCheckpoint(run_dir, trainer.wgan)
    checkpoint._manager().save(checkpoint_number=step)


@pytest.mark.slow
def test_readers_refuse_non_finite_weights_and_training_falls_back(tmp_path, tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    save_nan_checkpoint(run_dir, 6)
    out = tmp_path / "s.npz"
    for command in (["sample", str(run_dir), "--out", str(out)], ["eval", str(run_dir)]):
        one_line_error(invoke(*command), "ckpt-6 holds a non-finite generator weight", "earlier")
    assert not out.exists()
    resumed = train(run_dir, 10)
    assert "ckpt-6 holds a non-finite generator weight" in resumed.output
    assert "trying the previous checkpoint" in resumed.output
    assert "resumed from" in resumed.output and "ckpt-5 at step 5" in resumed.output


# -- 4. fit(steps) counts steps in total ----------------------------------------------------------
@pytest.mark.slow
def test_fit_counts_steps_in_total_and_continues_the_data(tmp_path):
    straight = make_trainer().fit(6, progress=lipgan_quiet())
    trainer = make_trainer()
    assert trainer.fit(4, progress=lipgan_quiet()).step == 4
    again = trainer.fit(4, progress=lipgan_quiet())
    assert again.step == 4 and again.history == [] and trainer.step == 4
    more = trainer.fit(6, progress=lipgan_quiet())
    assert more.step == 6 and [row["step"] for row in more.history] == [6]
    for a, b in zip(straight.critic.weights, more.critic.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the data continued, not restarted
    # a new run dir continues the models in memory: checkpoint names are their iterations
    saved = trainer.fit(8, run_dir=tmp_path / "run", progress=lipgan_quiet())
    assert saved.step == 8 and checkpoint_steps(tmp_path / "run") == [8]
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / "checkpoints" / "ckpt-8"))
    assert reader.get_tensor("iteration/.ATTRIBUTES/VARIABLE_VALUE") == 8


# -- 5. the data is fingerprinted, and compared on resume -----------------------------------------
def points(scale=1.0, shift=0.0) -> np.ndarray:
    angles = np.random.default_rng(0).uniform(0, 2 * np.pi, 256)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype("float32")
    return ring * scale + shift


def small_trainer(data, constraint=None):
    return lipgan.Trainer(
        data=data,
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=constraint or lipgan.constraints.GradientPenalty(weight=1.0),
        step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1, seed=3, jit_compile=False),
        intervals=lipgan.Intervals(log_every=1, checkpoint_every=1, plot_samples=0),
    )


@pytest.mark.slow
def test_resume_from_python_refuses_other_data(tmp_path):
    from lipgan.core.errors import RunDirError

    same = lambda: tf.data.Dataset.from_tensor_slices(points())  # noqa: E731
    other = lambda: tf.data.Dataset.from_tensor_slices(points(100.0, 50.0))  # noqa: E731
    small_trainer(same()).fit(1, run_dir=tmp_path / "a", progress=lipgan_quiet())
    with pytest.raises(RunDirError, match=r"data\.fingerprint: \w+ -> \w+"):
        small_trainer(other()).fit(2, run_dir=tmp_path / "a", progress=lipgan_quiet())
    assert small_trainer(same()).fit(2, run_dir=tmp_path / "a", progress=lipgan_quiet()).step == 2

    def factory(scale):
        return lambda batch, seed: (
            tf.data.Dataset.from_tensor_slices(points(scale))
            .repeat()
            .batch(batch, drop_remainder=True)
        )

    small_trainer(factory(1.0)).fit(1, run_dir=tmp_path / "b", progress=lipgan_quiet())
    with pytest.raises(RunDirError, match=r"data\.fingerprint"):
        small_trainer(factory(100.0)).fit(2, run_dir=tmp_path / "b", progress=lipgan_quiet())


def test_data_that_cannot_be_fingerprinted_is_said_once(tmp_path):
    lines = []
    shuffled = tf.data.Dataset.from_tensor_slices(points()).shuffle(256, seed=1)
    from lipgan.run.progress import Progress

    small_trainer(shuffled).fit(1, run_dir=tmp_path, progress=Progress(lines.append))
    notes = [ln for ln in lines if "cannot be fingerprinted" in ln]
    assert len(notes) == 1 and "ShuffleDataset" in notes[0], lines


# -- 6. a parameter kept in a private attribute is compared too -----------------------------------
class PrivateWeight(lipgan.Constraint):
    name = "private_weight_for_tests"

    def __init__(self, w: float = 0.1):
        self._w = float(w)

    def penalty(self, critic, real, fake, ctx):
        return self._w * tf.square(tf.reshape(critic(real, training=False), [-1]))


def test_a_private_constructor_argument_is_part_of_the_settings(tmp_path):
    from lipgan.core.errors import RunDirError

    data = lambda: tf.data.Dataset.from_tensor_slices(points())  # noqa: E731
    small_trainer(data(), PrivateWeight(0.1)).fit(1, run_dir=tmp_path, progress=lipgan_quiet())
    with pytest.raises(RunDirError, match=r"constraint\.arguments\.w: 0\.1 -> 50\b"):
        small_trainer(data(), PrivateWeight(w=50)).fit(2, run_dir=tmp_path, progress=lipgan_quiet())


# -- 7. non-finite numbers are refused before anything is written ---------------------------------
@pytest.mark.parametrize(
    "binding, fragment",
    [
        ("weight_clip.c=1e999", "weight_clip.c = inf is not a finite number"),
        ("gradient_penalty.weight=nan", "'nan' is not a value gin reads"),
        ("critic/Adam.beta_1=-1e999", "critic/Adam.beta_1 = -inf is not a finite number"),
    ],
)
def test_non_finite_numbers_are_refused_before_anything_is_written(tmp_path, binding, fragment):
    run_dir = tmp_path / "run"
    result = invoke(
        "run", *TINY, "--bind", "train.steps=5", "--bind", binding, "--run-dir", str(run_dir)
    )
    line = one_line_error(result, fragment)
    assert "ast." not in line and not run_dir.exists()


def test_non_finite_numbers_are_refused_from_python(tmp_path):
    data = tf.data.Dataset.from_tensor_slices(points())
    trainer = small_trainer(data, lipgan.constraints.GradientPenalty(weight=float("inf")))
    with pytest.raises(
        lipgan.core.errors.ConfigError, match="constraint.weight=inf is not a finite"
    ):
        trainer.fit(1, run_dir=tmp_path / "run", progress=lipgan_quiet())
    assert not (tmp_path / "run").exists()


# -- 8. the conformance kit: a penalty with no gradient, an after_update that differs by replica --
class RoundedPenalty(lipgan.Constraint):
    """Values, but no gradient: tf.round cuts the path from the critic."""

    name = "rounded_penalty_for_tests"

    def penalty(self, critic, real, fake, ctx):
        scores = tf.reshape(critic(real, training=False), [-1])
        return tf.round(tf.square(scores) * 100.0)


@pytest.mark.parametrize("check", ["check_penalty", "check_compiled"])
def test_the_kit_fails_a_penalty_without_gradient(check):
    from lipgan import testing

    kwargs = {"xla": False} if check == "check_compiled" else {}
    with pytest.raises(AssertionError, match="has no gradient with respect to the critic"):
        getattr(testing, check)(RoundedPenalty(), **kwargs)
    getattr(testing, check)(lipgan.constraints.GradientPenalty(), **kwargs)  # a real one passes


# -- one line for each, naming the file or value and the remedy -----------------------------------
@pytest.mark.parametrize(
    "files, main, fragments",
    [
        (
            {"a.gin": "include 'b.gin'\n", "b.gin": "include 'a.gin'\n"},
            "a.gin",
            ["a.gin: its includes form a loop", "b.gin ->", "remove the include"],
        ),
        (
            {"imp.gin": "import lipgan_i27_raising\n", "lipgan_i27_raising.py": "1 / 0\n"},
            "imp.gin",
            ["`import lipgan_i27_raising` failed: it raised ZeroDivisionError", "fix that module"],
        ),
        (
            {"sub/main.gin": "include 'sib.gin'\n", "sub/sib.gin": "train.steps = 3\n"},
            "sub/main.gin",
            ["include 'sib.gin' is not found", "not from the including file's folder", "run from"],
        ),
    ],
)
def test_gin_include_loops_raising_imports_and_sibling_includes(
    tmp_path, monkeypatch, files, main, fragments
):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    one_line_error(invoke("config", "show", "--gin", main), *fragments)


@pytest.mark.slow
def test_bad_seeds_are_one_line(tmp_path, tiny_run):
    run_dir = tiny_run  # trained to step 5 (conftest)
    for command in (
        [
            "sample",
            str(run_dir),
            "--out",
            str(tmp_path / "x.npz"),
            "--seed",
            "99999999999999999999",
        ],
        ["audit", str(run_dir), "--seed", "-3"],
        ["audit", str(run_dir), "--seed", "1e20"],
    ):
        one_line_error(invoke(*command), "--seed")
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.slow
def test_full_disk_at_the_first_checkpoint_names_the_size_needed(tmp_path, monkeypatch):
    def full_disk(self, checkpoint_number=None, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(tf.train.CheckpointManager, "save", full_disk)
    run_dir = tmp_path / "run"
    result = invoke("run", *TINY, "--bind", "train.steps=5", "--run-dir", str(run_dir))
    line = one_line_error(result, "cannot save checkpoint 5", "no checkpoint was written before")
    assert "a checkpoint needs about" in line and "kB free there" in line


def test_too_few_eval_samples_fail_before_the_first_write(tmp_path):
    run_dir = tmp_path / "run"
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.eval_every=10",
        "--bind",
        "train.eval_samples=500",
        "--bind",
        "train.steps=10",
        "--run-dir",
        str(run_dir),
    )
    one_line_error(result, "train.eval_samples=500 is too few", "train.eval_every=0")
    assert not run_dir.exists()


def test_bench_with_an_unknown_strategy_leaves_out_alone(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "results.md").write_text("earlier results\n")
    for spec, fragment in [("nosuch", "nosuch"), ("mirrored:logical_cpus=0", "logical_cpus")]:
        result = invoke("bench", "--strategy", spec, "--out", str(out), "--model", "toy")
        one_line_error(result, fragment)
    assert (out / "results.md").read_text() == "earlier results\n"


def test_sigint_during_start_up_exits_130(monkeypatch):
    from lipgan.cli import main as cli_module
    from lipgan.cli import options

    def interrupted(verbose):
        raise KeyboardInterrupt

    monkeypatch.setattr(options, "import_tensorflow", interrupted)
    monkeypatch.delitem(__import__("sys").modules, "tensorflow_never_imported", raising=False)
    from click.testing import CliRunner

    result = CliRunner().invoke(cli_module.cli, ["run", "--bind", "train.steps=1"])
    assert result.exit_code == 130, result.output
    assert "Aborted!" not in result.output and "Stopped: SIGINT" in result.output


@pytest.mark.slow
def test_debris_of_killed_runs_is_cleaned_on_the_next_start(tmp_path):
    run_dir = tmp_path / "run"
    train(run_dir, 10)
    folder = run_dir / "checkpoints"
    (folder / "ckpt-12_temp").mkdir()
    (folder / "ckpt-12_temp" / "part-00000").write_bytes(b"\0" * 100)
    (run_dir / "run.json.tmp").write_text("")
    for part in folder.glob("ckpt-5.*"):  # a save killed before the state file listed it
        (folder / part.name.replace("ckpt-5", "ckpt-1")).write_bytes(part.read_bytes())
    resumed = train(run_dir, 20)
    assert "leftover(s) of an interrupted write" in resumed.output
    assert not (folder / "ckpt-12_temp").exists() and not (run_dir / "run.json.tmp").exists()
    assert checkpoint_steps(run_dir) == [10, 15, 20]  # max_checkpoints=3 covers the orphan too


@pytest.mark.slow
def test_odd_run_dirs_get_a_plain_line(tmp_path, tiny_run):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    result = invoke("run", *TINY, "--bind", "train.steps=5", "--run-dir", str(loop))
    one_line_error(result, "symbolic link", "leads nowhere")
    run_dir = tiny_run  # trained to step 5 (conftest)
    (run_dir / "run.json").write_text("[]")
    before = snapshot(run_dir)
    result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
    one_line_error(result, "run.json holds a JSON list", "restore it")
    assert snapshot(run_dir) == before


# -- the study: a broken spec.json, a killed cell, --force with other steps -----------------------
def test_a_broken_study_spec_is_one_line_and_rewritten_atomically(tmp_path):
    from lipgan.study.runner import _check_out
    from lipgan.study.spec import StudySpec

    spec = StudySpec(constraints=("none",), datasets=("ring",), seeds=1, steps=10)
    (tmp_path / "spec.json").write_text('{"datasets": ["ri')
    with pytest.raises(lipgan.core.errors.ConfigError, match=r"spec.json holds unreadable \("):
        _check_out(tmp_path, spec, force=False)
    _check_out(tmp_path, spec, force=True)
    assert json.loads((tmp_path / "spec.json").read_text()) == spec.as_dict()
    assert not (tmp_path / "spec.json.tmp").exists()


class FakeProcesses:
    """Stands in for the cell processes: returns a fixed exit status and stderr."""

    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr

    def run(self, args, env):
        import subprocess

        return subprocess.CompletedProcess(args, self.returncode, "", self.stderr)


def test_a_killed_study_cell_is_not_recorded_as_failed(tmp_path):
    from lipgan.study.runner import cell_dir, run_cell_process
    from lipgan.study.spec import Cell

    cell = Cell("ring", "none", 0, 10, 2500)
    cpp_line = "W0000 00:00:1 cpu_allocator_impl.cc:83] Allocation exceeds 10% of free memory."
    result = run_cell_process(tmp_path, cell, 1, FakeProcesses(-9, cpp_line))
    assert result["status"] == "killed" and "killed by SIGKILL" in result["error"]
    assert not (cell_dir(tmp_path, cell) / "result.json").exists()  # retried by a re-run
    crashed = run_cell_process(tmp_path, cell, 1, FakeProcesses(1, "ValueError: boom\n" + cpp_line))
    # a dead process is no verdict on the method: run once more, then recorded with both tries
    assert crashed == {
        "status": "failed",
        "error": "ValueError: boom",
        "cell": cell.as_dict(),
        "unexpected": True,
        "first_try": "ValueError: boom",
    }


def test_a_study_cell_of_another_spec_is_moved_aside_not_resumed(tmp_path):
    from lipgan.study.runner import cell_dir, run_cell_process
    from lipgan.study.spec import Cell

    old, new = Cell("ring", "none", 0, 10, 2500), Cell("ring", "none", 0, 20, 2500)
    run_cell_process(tmp_path, old, 1, FakeProcesses(1, "ValueError: old"))
    run_cell_process(tmp_path, new, 1, FakeProcesses(1, "ValueError: new"))
    here = cell_dir(tmp_path, new)
    aside = here.with_name(here.name + "-replaced")
    assert json.loads((aside / "result.json").read_text())["error"] == "ValueError: old"
    assert json.loads((here / "cell.json").read_text()) == new.as_dict()


def test_a_damaged_data_file_during_training_is_one_line(tmp_path):
    """A damaged TFRecord shard (TFDS stores its data so) was only "Graph execution error"."""
    path = str(tmp_path / "points.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for point in points():
            writer.write(tf.io.serialize_tensor(tf.constant(point)).numpy())
    data = bytearray((tmp_path / "points.tfrecord").read_bytes())
    data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8  # a bad sector in the middle
    (tmp_path / "points.tfrecord").write_bytes(bytes(data))

    def factory(batch, seed):
        records = tf.data.TFRecordDataset(path).map(
            lambda r: tf.ensure_shape(tf.io.parse_tensor(r, tf.float32), [2])
        )
        return records.repeat().batch(batch, drop_remainder=True)

    with pytest.raises(
        lipgan.core.errors.DatasetError, match=r"input data is damaged \(.*corrupted"
    ):
        small_trainer(factory).fit(20, run_dir=tmp_path / "run", progress=lipgan_quiet())


def test_training_diagnostics_report_replica_drift_once(capsys):
    """The loop's side of the replica check (``WGAN.replica_drift`` itself runs on two mirrored
    replicas in the kit test above): logged as a metric, warned about once."""
    from types import SimpleNamespace

    from lipgan.run.loop import TrainingLoop

    wgan = SimpleNamespace(replica_drift=lambda: (0.01, "critic weight dense/kernel"))
    loop = SimpleNamespace(wgan=wgan)
    assert TrainingLoop.replica_drift(loop, 10) == {"replica_drift": 0.01}
    assert TrainingLoop.replica_drift(loop, 20) == {"replica_drift": 0.01}
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "replicas' weights" in ln]
    assert len(warnings) == 1 and "at step 10 (critic weight dense/kernel: by 0.01)" in warnings[0]
