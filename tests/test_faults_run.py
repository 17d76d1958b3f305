"""Faults a hostile user found in runs, records, data and the CLI (issue #42): each is one line, and
nothing is lost or half-written.

Every test backs a row of ``docs/reliability.md``. Training is the tiny toy run of
``tests/test_faults_hostile_input.py``; one run trained per module is copied where a test damages it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from lipgan.core.errors import ConfigError, DatasetError, RunDirError
from tests.conftest import REPO
from tests.helpers import TINY, drawn_points, invoke
from tests.test_lifecycle import one_line_error, snapshot


def train(run_dir, steps, *extra):
    result = invoke(
        "run", *TINY, "--bind", f"train.steps={steps}", "--run-dir", str(run_dir), *extra
    )
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 5-step toy run with a samples picture, and the output of the command that trained it."""
    run_dir = tmp_path_factory.mktemp("faults") / "run"
    result = train(run_dir, 5, "--bind", "train.plot_samples=16")
    return run_dir, result.output


@pytest.fixture
def run_copy(trained, tmp_path):
    """A copy of the trained run to damage."""
    copy = tmp_path / "run"
    shutil.copytree(trained[0], copy, symlinks=True)
    (copy / ".lock").unlink(missing_ok=True)
    return copy


# -- run.json: the run's own regular file, of the shape lipgan writes ----------------------------
def _fifo(path):
    os.mkfifo(path)


def _link_to_dev_zero(path):
    os.symlink("/dev/zero", path)


def _dangling_link(path):
    os.symlink("gone.json", path)


def _directory(path):
    path.mkdir()


@pytest.mark.parametrize(
    "make, what",
    [
        (_fifo, "is a FIFO (named pipe)"),
        (_directory, "is a directory"),
        (_link_to_dev_zero, "is a symbolic link to '/dev/zero'"),
        (_dangling_link, "is a symbolic link to 'gone.json', which leads nowhere"),
    ],
)
def test_a_record_that_is_not_a_regular_file_is_named_for_what_it_is(
    run_copy, tmp_path, make, what
):
    """Was "no run.json there" (and a FIFO would block the read): say what is there."""
    (run_copy / "run.json").unlink()
    make(run_copy / "run.json")
    before = sorted(p.name for p in run_copy.iterdir())
    for command in (
        ["eval", str(run_copy)],
        ["audit", str(run_copy)],
        ["sample", str(run_copy), "--out", str(tmp_path / "s")],
        ["run", "--resume", str(run_copy)],
    ):
        one_line_error(invoke(*command), f"run.json {what}, not the record lipgan writes")
    assert not (tmp_path / "s.npz").exists()
    with pytest.raises(RunDirError, match=re.escape(what)):
        lipgan.run.record.read(run_copy)
    assert sorted(p.name for p in run_copy.iterdir()) == before


def test_a_record_that_is_a_directory_is_refused_with_force_and_leaves_no_tmp(run_copy):
    """Was: ``--force`` wrote ``run.json.tmp`` and failed renaming it over the directory."""
    (run_copy / "run.json").unlink()
    (run_copy / "run.json").mkdir()
    result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_copy), "--force")
    one_line_error(result, "run.json is a directory")
    assert not (run_copy / "run.json.tmp").exists()


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [500, 100_000])
def test_a_deeply_nested_record_is_one_line_in_every_reader(run_copy, tmp_path, depth):
    """Was a RecursionError traceback in resume, eval, sample, audit and fit."""
    text = (run_copy / "run.json").read_text().rstrip().removesuffix("}")
    (run_copy / "run.json").write_text(f'{text}, "deep": {_nested(depth)}}}')
    message = "run.json holds JSON nested deeper than 100 levels"
    for command in (
        ["eval", str(run_copy)],
        ["audit", str(run_copy)],
        ["sample", str(run_copy), "--out", str(tmp_path / "s")],
        ["run", "--resume", str(run_copy)],
        ["run", *TINY, "--run-dir", str(run_copy)],
    ):
        one_line_error(invoke(*command), message)
    with pytest.raises(RunDirError, match=message):
        python_trainer().fit(2, run_dir=run_copy, verbose=0)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: r.update(rebuild="x"), "rebuild: a JSON string where an object belongs"),
        (lambda r: r["rebuild"].update(steps="10"), "rebuild.steps: a JSON string where a number"),
        (lambda r: r["rebuild"]["data"].update(kind=3), "rebuild.data.kind: a JSON number where"),
        (lambda r: r.update(gin=[]), "gin: a JSON list where an object belongs"),
        (lambda r: r.update(settings=None), "settings: a JSON null where an object belongs"),
    ],
)
def test_a_record_of_another_shape_is_one_line(run_copy, damage, message):
    record = json.loads((run_copy / "run.json").read_text())
    damage(record)
    (run_copy / "run.json").write_text(json.dumps(record))
    one_line_error(invoke("eval", str(run_copy)), message)


# -- the record is bound to its checkpoints -------------------------------------------------------
@pytest.mark.slow
def test_another_runs_record_linked_or_copied_in_is_refused(tmp_path):
    """Was: A's checkpoints (GP weight 0.1) continued at B's 1.0 with exit 0; only the seed was
    checked against the checkpoint."""
    a, b = tmp_path / "A", tmp_path / "B"
    train(a, 5, "--bind", "gradient_penalty.weight=0.1")
    train(b, 5, "--bind", "gradient_penalty.weight=1.0")
    (a / "run.json").unlink()
    os.symlink("../B/run.json", a / "run.json")
    before = snapshot(a)
    one_line_error(
        invoke("run", "--resume", str(a), "--bind", "train.steps=10"),
        "run.json is a symbolic link to '../B/run.json'",
    )
    (a / "run.json").unlink()
    shutil.copy(b / "run.json", a / "run.json")
    before = snapshot(a)
    one_line_error(
        invoke("run", "--resume", str(a), "--bind", "train.steps=10"),
        f"{a / 'run.json'} does not describe {a / 'checkpoints' / 'ckpt-5'}",
    )
    assert snapshot(a) == before and not list(a.glob("run-before-*"))
    # Its own record resumes; --force continues these checkpoints with the settings given.
    forced = invoke("run", "--resume", str(a), "--bind", "train.steps=10", "--force")
    assert forced.exit_code == 0 and "resumed from" in forced.output, forced.output


@pytest.mark.slow
def test_force_turning_the_ema_on_starts_it_from_the_restored_generator(trained, run_copy):
    """Was "no readable checkpoint … start a new run": the checkpoints had no EMA to restore."""
    result = train(
        run_copy, 10, "--bind", "train.ema_decay=0.9", "--bind", "train.ema_start=7", "--force"
    )
    assert f"resumed from {run_copy / 'checkpoints' / 'ckpt-5'} at step 5" in result.output
    assert "force: continuing with changed settings (step_config.ema_decay: 0.0 -> 0.9" in (
        result.output
    )
    reader = tf.train.load_checkpoint(str(run_copy / "checkpoints" / "ckpt-10"))
    assert any(n.startswith("generator_ema/") for n in reader.get_variable_to_shape_map())


# -- the CLI's own inputs -------------------------------------------------------------------------
def test_a_refused_resume_does_not_advise_resume(trained):
    run_dir = trained[0]
    line = one_line_error(
        invoke(
            "run",
            "--resume",
            str(run_dir),
            "--bind",
            "gradient_penalty.weight=5.0",
            "--bind",
            "train.steps=10",
        ),
        f"--resume {run_dir}: the --bind given change the run's settings (constraint.weight: "
        "0.1 -> 5.0)",
        "add --force",
    )
    assert "resume it with" not in line


def test_gin_that_is_not_a_file_says_what_it_is(tmp_path):
    one_line_error(invoke("run", "--gin", "/dev/null"), "--gin /dev/null is a character device")
    os.symlink("missing.gin", tmp_path / "link.gin")
    one_line_error(
        invoke("run", "--gin", str(tmp_path / "link.gin")), "which leads nowhere, not a gin file"
    )


def test_an_empty_path_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """Was: ``--run-dir ''`` trained into the current directory."""
    monkeypatch.chdir(tmp_path)
    for command in (
        ["run", "--run-dir", ""],
        ["run", "--resume", ""],
        ["eval", ""],
        ["sample", "", "--out", "s"],
    ):
        result = invoke(*command)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert "an empty path (an unset shell variable?) would mean the current directory" in (
            result.output
        )
    assert list(tmp_path.iterdir()) == []


def test_a_huge_echoed_value_is_cut_short():
    """Was: a 100 kB ``--bind`` value echoed whole in the error line."""
    for binding in ("nosuch.param=" + "x" * 100_000, "train.steps='" + "y" * 100_000 + "'"):
        line = one_line_error(invoke("run", "--bind", binding))
        assert len(line) < 1000 and "…" in line, len(line)
    assert str(ConfigError("value " + "z" * 5000 + " end")) == f"value {'z' * 200}… end"


def test_ema_start_beyond_int64_is_refused_before_training():
    """Was: validation passed, then ``update_ema`` overflowed."""
    message = "train.ema_start=100000000000000000000000 is invalid: must fit in 64 bits"
    with pytest.raises(ConfigError, match=message):
        lipgan.StepConfig(ema_start=10**23)
    lipgan.StepConfig(ema_start=2**63 - 1)  # the largest int64 is fine
    one_line_error(
        invoke("run", "--bind", "train.ema_decay=0.9", "--bind", f"train.ema_start={10**23}"),
        message,
    )


def test_the_last_line_of_a_run_names_its_samples_picture(trained):
    run_dir, output = trained
    assert output.strip().splitlines()[-1].endswith(f"; samples: {run_dir / 'samples.png'}")
    assert (run_dir / "samples.png").is_file()


# -- lipgan sample: bounded memory ----------------------------------------------------------------
def test_sample_streams_its_npz_in_chunks_and_plots_a_bounded_subsample(
    trained, tmp_path, monkeypatch
):
    """Was: ``sample -n 10000000`` held every sample and drew them all before writing the .npz.

    With chunks of 100 (10^7 points are written the same way, 2^16 at a time), no noise is drawn
    for more than one chunk; the first chunk is the noise it always was, so a smaller ``-n`` gives
    a prefix of a larger one; the PNG shows the first 150 points.
    """
    from lipgan.cli import rundir as rundir_cli
    from lipgan.metrics import evaluation

    monkeypatch.setattr(evaluation, "NOISE_CHUNK", 100)
    monkeypatch.setattr(rundir_cli, "PLOT_POINTS", 150)
    drawn = drawn_points(monkeypatch)
    sizes = []
    normal = tf.random.stateless_normal

    def spy(shape, *args, **kwargs):
        sizes.append(int(shape[0]))
        return normal(shape, *args, **kwargs)

    monkeypatch.setattr(tf.random, "stateless_normal", spy)
    run_dir = trained[0]
    result = invoke("sample", str(run_dir), "-n", "1050", "--out", str(tmp_path / "big"))
    assert result.exit_code == 0, result.output
    assert max(sizes) == 100 and sizes.count(100) == 10 and 50 in sizes  # 10 chunks and 50
    with np.load(tmp_path / "big.npz") as big:
        samples, step = big["samples"], int(big["step"])
    assert samples.shape == (1050, 2) and samples.dtype == np.float32 and step == 5
    assert len(np.unique(samples, axis=0)) == 1050  # every chunk draws its own noise
    assert max(len(points) for points in drawn.values()) == 150
    assert not list(tmp_path.glob("*.tmp"))
    small = invoke("sample", str(run_dir), "-n", "60", "--out", str(tmp_path / "small"))
    assert small.exit_code == 0, small.output
    with np.load(tmp_path / "small.npz") as prefix:
        np.testing.assert_array_equal(prefix["samples"], samples[:60])


# -- data from Python -----------------------------------------------------------------------------
def ring(n: int) -> np.ndarray:
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype("float32")


def python_trainer(data=None, generator=None):
    from lipgan.constraints import GradientPenalty

    return lipgan.Trainer(
        data=ring(64) if data is None else data,
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=generator or (lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1)),
        constraint=GradientPenalty(weight=1.0),
        step_config=lipgan.StepConfig(global_batch_size=8, n_critic=1, seed=0, jit_compile=False),
        intervals=lipgan.Intervals(log_every=1, checkpoint_every=1, plot_samples=0),
    )


@pytest.mark.parametrize(
    "dtype, low, high",
    [(np.uint8, 0, 255), (np.uint16, 0, 65535), (np.int8, -128, 127), (np.int16, -32768, 32767)],
)
def test_integer_data_maps_its_dtypes_range_onto_minus_one_to_one(dtype, low, high):
    """Was: int8 scaled as if 0-255 (data landed in [-2, -0.004])."""
    from lipgan.data.adapt import examples

    middle = (low + high) // 2
    data = np.array([[low, high], [middle, middle + 1]], dtype)
    got = np.stack(list(examples(data).as_numpy_iterator()))
    expected = (data.astype(np.float64) - low) * 2 / (high - low) - 1
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert got.min() == -1.0 and got.max() == 1.0


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_integer_data_of_no_agreed_range_is_refused_in_one_line(dtype):
    from lipgan.data.adapt import examples

    with pytest.raises(
        ConfigError, match=f"dtype {np.dtype(dtype).name} have no agreed range"
    ) as info:
        examples(np.zeros((4, 2), dtype))
    assert "\n" not in str(info.value) and "to uint8" in str(info.value)


def test_data_that_cannot_train_is_one_line_before_anything_is_written(tmp_path):
    """Was: an empty array ended in OutOfRangeError after writing run.json, metrics.jsonl and
    tensorboard/; a generator function was called as a factory; a pipeline that raises was a
    traceback."""

    def points():  # a generator function, not a factory
        yield from ring(8)

    for data, error, message in [
        (np.zeros((0, 2), np.float32), ConfigError, "the dataset holds no examples"),
        (points, ConfigError, "points is a Python generator, not a factory"),
        (lambda: None, ConfigError, "does not take those two arguments"),
        (lambda batch, seed: ring(8), ConfigError, "returned a ndarray, not a tf.data.Dataset"),
    ]:
        with pytest.raises(error, match=message):
            python_trainer(data).fit(1, run_dir=tmp_path / "run", verbose=0)
    raising = tf.data.Dataset.from_tensor_slices(ring(64)).map(
        lambda x: tf.debugging.check_numerics(x / 0.0, "a bad example")
    )
    none_left = tf.data.Dataset.from_tensor_slices(ring(64)).filter(lambda x: False)
    for data, message in [
        (raising, r"reading its first batch failed \(.*a bad example"),
        (none_left, "the dataset gives no batch"),
    ]:
        trainer = python_trainer(data)
        with pytest.raises(DatasetError, match=message) as info:
            trainer.fit(1, run_dir=tmp_path / "run", verbose=0)
        assert "\n" not in str(info.value)
    assert not (tmp_path / "run").exists()


class NoInputGenerator(keras.Model):
    """A subclassed generator never called: it has no input_shape."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)

    def call(self, z):
        return self.dense(z)


def test_a_subclassed_generator_without_an_input_shape_is_one_line():
    with pytest.raises(ConfigError, match=r"generator: NoInputGenerator .* has no input_shape"):
        python_trainer(generator=NoInputGenerator())


def test_a_failed_generator_clone_says_why(monkeypatch):
    """Was "cloning failed: " and nothing after it (the reason's first line was empty)."""
    from lipgan.core.engine import WGAN

    def clone(model):
        raise ValueError("\nthis model's get_config() takes arguments")

    monkeypatch.setattr(keras.models, "clone_model", clone)
    generator = lipgan.models.mlp_generator((2,), width=8, depth=1)
    with pytest.raises(ConfigError, match=r"cloning failed: ValueError: this model's get_config"):
        WGAN._ema_copy(generator)


# -- the install ----------------------------------------------------------------------------------
@pytest.mark.slow  # a fresh Python importing TensorFlow
def test_the_installed_package_wins_over_a_clone_named_lipgan_in_the_working_dir(tmp_path):
    """Was: run from the folder holding a clone named ``lipgan``, Python took that clone (a
    namespace package) for lipgan and its top-level ``plugins/`` for ``lipgan.core.plugins``."""
    os.symlink(REPO, tmp_path / "lipgan")
    code = (
        "import lipgan.core.plugins, lipgan_plugins; lipgan.core.plugins.load_registry; "
        "print(lipgan.__file__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert Path(result.stdout.split()[-1]).name == "__init__.py"


@pytest.mark.slow
def test_a_junk_layer_in_a_python_runs_record_is_one_line(tmp_path):
    """Keras' deserialization fails in many ways (not only TypeError and ValueError)."""
    run_dir = tmp_path / "run"
    python_trainer().fit(1, run_dir=run_dir, verbose=0)
    good = json.loads((run_dir / "run.json").read_text())
    junk = [
        {"class_name": "Dense", "config": {"units": "x"}, "module": "keras.layers"},
        {"class_name": 5, "config": {}, "module": "keras.layers"},
        {"class_name": "Dense", "config": {"units": 4, "activation": 7}, "module": "keras.layers"},
        {"class_name": "Dense", "config": 42, "module": "keras.layers", "registered_name": None},
        "x",
    ]
    for layer in junk:
        record = json.loads(json.dumps(good))
        record["rebuild"]["critic"]["keras"]["config"]["layers"][1] = layer
        (run_dir / "run.json").write_text(json.dumps(record))
        line = one_line_error(invoke("eval", str(run_dir)), f"{run_dir / 'run.json'} (critic): ")
        assert "the recorded model cannot be rebuilt" in line and "register" not in line, line
