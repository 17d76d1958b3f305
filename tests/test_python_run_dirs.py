"""Run dirs written from Python describe themselves (run.json's rebuild section,
lipgan/run/description.py; read by lipgan/run/rebuild.py), so the CLI's eval/sample/audit/run
--resume work on them; Trainer.audit; the run's summary line; the ReLU hint
for certified constraints; no XLA Assert noise from lipgan's compiled step."""

import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from lipgan.core import child_process
from lipgan.core.errors import LipganWarning
from tests.helpers import drawn_points, invoke


@keras.saving.register_keras_serializable(package="lipgan_tests")
class Scale(keras.layers.Layer):
    """A registered custom layer (its module, this file, is importable by the CLI)."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(keras.layers.Layer):
    def call(self, x):
        return x


def critic(shape, layer=Scale):
    inputs = keras.Input(shape=shape)
    x = layer()(inputs) if layer is Unregistered else layer(0.5)(inputs)
    x = keras.layers.Dense(8, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def generator(shape):
    inputs = keras.Input(shape=(3,))  # the Input shape sets the latent size
    return keras.Model(inputs, keras.layers.Dense(shape[-1])(inputs))


def dict_data(n=64):
    points = np.random.default_rng(0).normal(size=(n, 2)).astype("float32")
    return tf.data.Dataset.from_tensor_slices({"image": points, "label": np.arange(n)})


def make_trainer(data=None, critic_factory=critic, **intervals):
    return lipgan.Trainer(
        data=dict_data() if data is None else data,
        critic=critic_factory,
        generator=generator,
        constraint=lipgan.constraints.GradientPenalty(weight=1.0),
        critic_optimizer=keras.optimizers.Adam(1e-3, beta_1=0.5, beta_2=0.9),
        step_config=lipgan.StepConfig(global_batch_size=8, n_critic=1, seed=3, jit_compile=False),
        intervals=lipgan.Intervals(
            **{"log_every": 1, "checkpoint_every": 2, "plot_samples": 0, **intervals}
        ),
    )


def one_line(result, match):
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert match in lines[0], lines[0]


def test_the_cli_evaluates_samples_and_audits_a_run_dir_written_from_python(tmp_path):
    run_dir = tmp_path / "run"
    trainer = make_trainer(eval_samples=16)
    trainer.fit(2, run_dir=run_dir, verbose=0)
    assert (run_dir / "data").is_dir()  # the data's copy; everything else is in the one record
    record = json.loads((run_dir / "run.json").read_text())
    assert {"keras"} == set(record["rebuild"]["critic"]) == set(record["rebuild"]["generator"])
    assert "gin" not in record
    assert sorted(p.name for p in run_dir.glob("*.json")) == ["run.json"]

    evaluated = invoke("eval", str(run_dir), "--samples", "16")
    assert evaluated.exit_code == 0, evaluated.output
    expected = {k.removeprefix("eval/"): v for k, v in trainer.evaluate(16).items()}
    assert json.loads(evaluated.output) == {
        "run_dir": str(run_dir),
        "step": 2,
        "generator": "raw",  # a run without an EMA samples from its generator
        **expected,
    }
    assert {"w1", "w1_floor"} <= set(expected)  # own data: W1 with its floor

    audited = invoke("audit", str(run_dir), "--points", "16")
    assert audited.exit_code == 0, audited.output
    assert json.loads(audited.output) == {
        "run_dir": str(run_dir),
        "step": 2,
        "generator": "raw",
        **json.loads(json.dumps(trainer.audit(points=16))),
    }

    sampled = invoke("sample", str(run_dir), "-n", "5", "--out", str(tmp_path / "s"))
    assert sampled.exit_code == 0, sampled.output
    with np.load(tmp_path / "s.npz") as npz:
        np.testing.assert_array_equal(npz["samples"], trainer.sample(5))


@pytest.mark.slow
def test_resuming_a_python_run_from_the_cli_continues_it_exactly(tmp_path):
    whole = make_trainer(eval_every=4, eval_samples=16)
    whole.fit(4, run_dir=tmp_path / "whole", verbose=0)
    make_trainer(eval_every=4, eval_samples=16).fit(2, run_dir=tmp_path / "half", verbose=0)

    one_line(
        invoke("run", "--resume", str(tmp_path / "half"), "--bind", "train.lr=1"),
        "a run dir written from Python takes only train.steps",
    )
    one_line(
        invoke("run", "--resume", str(tmp_path / "half"), "--gin", "wgangp_toy.gin"),
        "takes no --gin",
    )
    resumed = invoke("run", "--resume", str(tmp_path / "half"), "--bind", "train.steps=4")
    assert resumed.exit_code == 0, resumed.output
    assert "resumed from" in resumed.output
    # It ends with one summary line: the last evaluation's W1 and its floor.
    assert resumed.output.strip().splitlines()[-1].startswith("last evaluation (step 4): W1 ")

    def row(name, step):
        rows = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").open()]
        return next(r for r in rows if r["step"] == step)

    assert row("half", 4) == pytest.approx(row("whole", 4), rel=1e-6)
    for ours, theirs in zip(
        whole.critic.get_weights(), _restored_critic(tmp_path / "half"), strict=True
    ):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def _restored_critic(run_dir):
    from lipgan.config import recorded
    from lipgan.core.plugins import load_registry

    trainer, steps = recorded.rebuild_trainer(run_dir, load_registry().registry)
    assert trainer.restore(run_dir) == steps == 4
    return trainer.critic.get_weights()


@pytest.mark.slow
def test_a_layer_keras_cannot_rebuild_is_named_with_how_to_register_it(tmp_path, capsys):
    run_dir = tmp_path / "run"
    make_trainer(critic_factory=lambda s: critic(s, Unregistered)).fit(
        1, run_dir=run_dir, verbose=0
    )
    note = capsys.readouterr()
    assert "Unregistered" in note.err and "register_keras_serializable" in note.err
    for command in (("eval", str(run_dir)), ("sample", str(run_dir), "--out", str(tmp_path / "s"))):
        result = invoke(*command)
        one_line(result, "Unregistered")
        assert "register_keras_serializable" in result.output
    assert not (tmp_path / "s.npz").exists()


@pytest.mark.slow
def test_a_forced_run_on_other_data_replaces_the_stored_copy(tmp_path):
    run_dir = tmp_path / "run"
    make_trainer().fit(1, run_dir=run_dir, verbose=0)
    stored = lambda: next(iter(tf.data.Dataset.load(str(run_dir / "data")))).numpy()  # noqa: E731
    np.testing.assert_array_equal(stored(), next(iter(dict_data()))["image"].numpy())
    sevens = {"image": np.full((64, 2), 7.0, "float32"), "label": np.arange(64)}
    other = tf.data.Dataset.from_tensor_slices(sevens)  # the same pipeline, other values
    make_trainer(data=other).fit(2, run_dir=run_dir, verbose=0, force=True)
    np.testing.assert_array_equal(stored(), [7.0, 7.0])
    assert not (run_dir / "data.old").exists() and not (run_dir / "data.tmp").exists()


@pytest.mark.slow
def test_data_from_a_factory_samples_but_says_why_it_cannot_be_evaluated(tmp_path, monkeypatch):
    def factory(batch, seed):
        return tf.data.Dataset.from_tensors(tf.ones([2])).repeat().batch(batch, drop_remainder=True)

    run_dir = tmp_path / "run"
    make_trainer(data=factory).fit(1, run_dir=run_dir, verbose=0)
    assert not (run_dir / "data").exists()
    one_line(invoke("eval", str(run_dir)), "the run's data was not stored")
    one_line(invoke("run", "--resume", str(run_dir)), "the run's data was not stored")
    drawn = drawn_points(monkeypatch)
    assert invoke("sample", str(run_dir), "--out", str(tmp_path / "s")).exit_code == 0
    # No real points to draw, and the legend says so (not the stand-in zeros as "real").
    assert len(drawn["generated"]) == 64 and len(drawn["real: not available"]) == 0


def test_mock_data_is_refused_in_one_line_where_the_run_dir_stores_the_data(tmp_path):
    """Was silently ignored: the resume trained on data/ and exited 0."""
    run_dir = tmp_path / "run"
    make_trainer().fit(1, run_dir=run_dir, verbose=0)
    before = {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    for command in (("run", "--resume"), ("eval",), ("audit",)):
        one_line(
            invoke(*command, str(run_dir), "--mock-data"),
            f"--mock-data: {run_dir}'s data is stored in the run dir",
        )
    after = {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing trained


@pytest.mark.slow
def test_mock_data_stands_in_for_a_named_dataset_when_resuming_a_python_run(tmp_path, monkeypatch):
    """A run dir that records its data by name (a TFDS dataset) resumes, evaluates and audits on
    mock examples with --mock-data, as a gin run does; without the flag it needs the real data."""
    from lipgan.core.errors import DatasetError
    from lipgan.data import pipeline

    def unavailable(builder, name, download=True):  # the real data is not on this machine
        raise DatasetError(f"dataset {name!r} is not prepared here")

    monkeypatch.setattr(pipeline, "_prepare", unavailable)
    run_dir = tmp_path / "run"
    named = pipeline.dataset("lipgan_toy", data_dir=str(tmp_path / "tfds"), shuffle_buffer=64)
    with lipgan.data.mock_data():
        make_trainer(data=named).fit(2, run_dir=run_dir, verbose=0)
    assert json.loads((run_dir / "run.json").read_text())["rebuild"]["data"]["kind"] == "name"

    one_line(invoke("run", "--resume", str(run_dir), "--bind", "train.steps=3"), "not prepared")
    resumed = invoke("run", "--resume", str(run_dir), "--mock-data", "--bind", "train.steps=3")
    assert resumed.exit_code == 0, resumed.output
    assert "resumed from" in resumed.output
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for command in ("eval", "audit"):
        result = invoke(command, str(run_dir), "--mock-data")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["step"] == 3


def test_trainer_audit_refuses_bad_points():
    with pytest.raises(lipgan.core.errors.ConfigError, match=r"audit\(points=0\)"):
        make_trainer().audit(points=0)


def test_the_summary_line_gives_the_headline_numbers_of_the_last_evaluation():
    from lipgan.metrics.evaluation import summary_line

    toy = {
        "step": 40,
        "eval/modes_covered": 7,
        "eval/num_modes": 8,
        "eval/high_quality_fraction": 0.918,
        "eval/w1": 0.0371,
        "eval/w1_floor": 0.0482,
        "eval/critic_wasserstein": 0.1,
    }
    history = [{"step": 20, "eval/w1": 9.0}, {"step": 30, "critic_loss": 1.0}, toy]
    assert summary_line(history) == (
        "last evaluation (step 40): 7/8 modes, 91.8 % high quality, W1 0.0371 (floor 0.0482)"
    )
    digits = [{"step": 5, "eval/digits_fd": 12.345, "eval/critic_wasserstein": 0.2}]
    assert summary_line(digits) == "last evaluation (step 5): digits FD 12.3"
    assert "lipgan eval runs/x" in summary_line([{"step": 1, "critic_loss": 0.0}], "runs/x")


@pytest.mark.parametrize("constraint", ["bjorck", "aol"])
def test_certified_constraints_hint_once_at_maxmin_for_a_relu_critic(
    constraint, capfd, monkeypatch
):
    from lipgan.core import critic_checks as checks

    monkeypatch.setattr(checks, "_HINTED", set(), raising=False)
    cls = {"bjorck": lipgan.constraints.Bjorck, "aol": lipgan.constraints.AOL}[constraint]

    def build(activation):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lipgan.Trainer(
                data=np.zeros((16, 2), "float32"),
                critic=lambda s: lipgan.models.mlp_critic(
                    s, width=8, depth=2, activation=activation
                ),
                generator=lambda s: lipgan.models.mlp_generator(s, width=8),
                constraint=cls(),
                step_config=lipgan.StepConfig(global_batch_size=8, seed=0, jit_compile=False),
            )
        assert capfd.readouterr().err == ""  # a warning, not a print
        return [str(w.message) for w in caught if issubclass(w.category, LipganWarning)]

    assert build("maxmin") == []
    (hint,) = build("relu")
    assert "\n" not in hint and hint.startswith(f"hint: {constraint}: ")
    assert "MaxMin/GroupSort" in hint and "Anil et al. 2019" in hint
    assert build("relu") == []  # once


@pytest.mark.slow
def test_a_compiled_fit_logs_no_assert_noise():
    """XLA logs "Ignoring Assert operator" for each Assert op in a compiled graph; lipgan's step
    had three per loss (tf.nn.compute_average_loss's checks)."""
    proc = child_process.run(
        "tests.xla_noise_probe", env={"TF_CPP_MIN_LOG_LEVEL": "0"}, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "trained to step 2" in proc.stdout
    assert "Compiled cluster using XLA" in proc.stderr  # it did compile, and the log was on
    assert "Ignoring Assert operator" not in proc.stderr
