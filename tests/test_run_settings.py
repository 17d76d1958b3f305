"""One place for each setting: the gin root ``train`` is generated from the Python API, the run
dir's settings have one comparison, and a study cell runs a Trainer without gin."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys

import keras
import numpy as np
import pytest

import lipgan
from lipgan.core.errors import ConfigError
from tests.helpers import TINY, invoke
from tests.test_lifecycle import one_line_error


def _trainer_keywords() -> dict[str, inspect.Parameter]:
    parameters = inspect.signature(lipgan.Trainer.__init__).parameters
    return {k: p for k, p in parameters.items() if k not in ("self", "step_config", "intervals")}


def test_every_api_setting_is_a_train_binding_with_the_apis_default():
    from lipgan.config.train_root import train

    bound = inspect.signature(train).parameters
    for name, parameter in _trainer_keywords().items():
        assert bound[name].default == parameter.default, name  # train.data is the Trainer's data
    for cls in (lipgan.StepConfig, lipgan.Intervals):
        for field in dataclasses.fields(cls):
            assert bound[field.name].default == field.default, field.name
    fit = inspect.signature(lipgan.Trainer.fit).parameters
    for name, parameter in fit.items():
        if name not in ("self", "steps"):
            assert bound[name].default == parameter.default, name
    # and nothing else: train has no setting of its own but the number of iterations
    names = set(_trainer_keywords()) | set(fit) - {"self"}
    names |= {
        f.name for cls in (lipgan.StepConfig, lipgan.Intervals) for f in dataclasses.fields(cls)
    }
    assert set(bound) == names


def test_the_dataclasses_check_their_own_types():
    """Checked where the settings are defined, the same from Python as from gin."""
    with pytest.raises(
        ConfigError, match=r"train.n_critic=2.5 is invalid: must be an integer >= 1 \(a float"
    ):
        lipgan.StepConfig(global_batch_size=256, n_critic=2.5)
    with pytest.raises(ConfigError, match="train.seed='0' is invalid: must be an integer"):
        lipgan.StepConfig(global_batch_size=256, seed="0")
    with pytest.raises(
        ConfigError, match="train.checkpoint_input='yes' is invalid: must be True or False"
    ):
        lipgan.Trainer(
            data=None,
            critic=None,
            generator=None,
            constraint=lipgan.constraints.GradientPenalty(),
            checkpoint_input="yes",
        )


def test_fit_takes_no_gin_text():
    assert not {"config_text", "operative_config"} & set(
        inspect.signature(lipgan.Trainer.fit).parameters
    )


def _tiny_trainer(**kwargs):
    points = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    return lipgan.Trainer(
        data=points,
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=lipgan.constraints.GradientPenalty(weight=1.0),
        **kwargs,
    )


def test_step_config_and_step_each_mean_one_thing():
    config = lipgan.StepConfig(global_batch_size=16, n_critic=1, jit_compile=False)
    trainer = _tiny_trainer(step_config=config)
    assert trainer.step_config is config and trainer.step == 0
    assert trainer.batches.element_spec.shape.as_list() == [16, 2]
    with pytest.raises(TypeError, match="step"):
        _tiny_trainer(step=config)  # the pre-release name of step_config is gone


OLDER_RECORDS = {
    "settings.json": "{}",
    "config.gin": "train.steps = 2\n",
    "trainer.json": "{}",
}


@pytest.mark.parametrize("name", sorted(OLDER_RECORDS))
def test_a_run_dir_of_an_older_lipgan_is_refused_in_one_line_and_left_as_it_was(tmp_path, name):
    """Dirs written before run.json (settings.json, config.gin, trainer.json and checkpoints) are
    not read: training, resuming, evaluating or sampling them is one line, and nothing is written."""
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / name).write_text(OLDER_RECORDS[name])
    (run_dir / "checkpoints" / "ckpt-2.index").write_bytes(b"")
    before = {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    expected = f"run dir {run_dir} was written by an older lipgan ({name}, no run.json)"
    for args in (
        ("run", *TINY, "--bind", "train.steps=4", "--run-dir", str(run_dir)),
        ("run", "--resume", str(run_dir)),
        ("eval", str(run_dir)),
        ("sample", str(run_dir), "--out", str(tmp_path / "s")),
    ):
        one_line_error(invoke(*args), expected, "start a new --run-dir")
    with pytest.raises(lipgan.core.errors.RunDirError, match="written by an older lipgan"):
        _tiny_trainer(
            step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1, jit_compile=False)
        ).fit(4, run_dir=run_dir, verbose=0)
    after = {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert after == before and not (tmp_path / "s.npz").exists()


@pytest.mark.slow
def test_a_study_cell_trains_a_python_trainer_without_gin(tmp_path, monkeypatch):
    from lipgan.study.cell import train_cell

    monkeypatch.setitem(sys.modules, "gin", None)  # `import gin` now fails
    keras.utils.set_random_seed(0)
    trainer = lipgan.Trainer(
        data="lipgan_toy/8gaussians",
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=lipgan.constraints.GradientPenalty(weight=0.1),
        step_config=lipgan.StepConfig(global_batch_size=32, n_critic=1, jit_compile=False),
        intervals=lipgan.Intervals(log_every=2, checkpoint_every=2, plot_samples=0),
    )
    result = train_cell(trainer, tmp_path, 4, eval_samples=1000, eval_every=2)
    assert result["status"] == "ok" and result["step"] == 4
    assert [p["step"] for p in result["curve"]] == [0, 2, 4]
    assert result["metrics"]["num_modes"] == 8 and np.isfinite(result["metrics"]["w1"])
    assert (tmp_path / "samples.npy").is_file()
    assert "gin" not in json.loads((tmp_path / "run.json").read_text())  # a Python run's record


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"format": 2, "settings": {}}', "run.json has format 2, this lipgan reads format 1"),
        ('{"format": 1}', "run.json holds no settings, not the record lipgan writes"),
        ("{", "run.json is unreadable"),
    ],
)
def test_a_record_lipgan_cannot_read_is_one_line(tmp_path, text, message):
    from lipgan.run import record

    (tmp_path / "run.json").write_text(text)
    with pytest.raises(lipgan.core.errors.RunDirError, match=message):
        record.read(tmp_path)
    one_line_error(invoke("eval", str(tmp_path)), message)


def test_the_one_comparison_ignores_how_long_and_how_often():
    from lipgan.run.spec import settings_differences as differences

    old = {"step_config": {"seed": 0}, "intervals": {"log_every": 1}, "constraint": {"weight": 1}}
    new = {"step_config": {"seed": 0}, "intervals": {"log_every": 5}, "constraint": {"weight": 2}}
    assert differences(old, new) == ["constraint.weight: 1 -> 2"]
    assert differences(old, old) == []
