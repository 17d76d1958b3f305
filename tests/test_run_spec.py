"""One spec per run (:mod:`lipgan.run.spec`): the record round-trips, one comparison names what
differs, a trainer is rebuilt equal from its record, a changed resume is one line, and a record
written before the spec existed (lipgan e900949, ``fixtures/run_json_e900949.json``) still
compares equal to the same run built today."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import lipgan
from lipgan.core.errors import ConfigError, RunDirError
from lipgan.run import spec as run_spec
from lipgan.run.spec import RunSpec

FIXTURE = Path(__file__).parent / "fixtures" / "run_json_e900949.json"


def _keywords(**changes) -> dict:
    """The run of ``fixtures/run_json_e900949.json`` (written by /tmp/smoke.py on e900949)."""
    points = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    return {
        "data": points,
        "critic": lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        "generator": lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        "constraint": lipgan.constraints.GradientPenalty(weight=1.0),
        "step_config": lipgan.StepConfig(global_batch_size=16),
        "intervals": lipgan.Intervals(log_every=1),
        **changes,
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("spec") / "run"
    trainer = lipgan.Trainer(**_keywords())
    trainer.fit(2, run_dir=run_dir, verbose=0)
    return trainer, run_dir


def test_the_trainer_keywords_are_the_spec_fields():
    keywords = [p for p in lipgan.Trainer.__init__.__signature__.parameters if p != "self"]
    assert keywords == [f.name for f in dataclasses.fields(RunSpec)]
    assert RunSpec.__dataclass_params__.frozen


def test_the_record_is_the_specs_json_and_reads_back(trained):
    trainer, run_dir = trained
    record = json.loads((run_dir / "run.json").read_text())
    again = trainer.spec.to_json(trainer, run_dir, steps=2, warn=lambda line: None)
    assert again == {"settings": record["settings"], "rebuild": record["rebuild"]}
    spec, steps = RunSpec.from_json(record, run_dir, lipgan.core.plugins.default_registry())
    assert steps == 2
    assert spec.step_config == trainer.spec.step_config
    assert spec.intervals == trainer.spec.intervals
    assert spec.constraint.arguments == trainer.spec.constraint.arguments
    assert not spec.checkpoint_input  # data/ is replayed, not restored (lipgan.run.rebuild)


def test_from_spec_rebuilds_an_equal_trainer(trained):
    trainer, run_dir = trained
    record = json.loads((run_dir / "run.json").read_text())
    spec, _ = RunSpec.from_json(record, run_dir, lipgan.core.plugins.default_registry())
    rebuilt = lipgan.Trainer.from_spec(spec)
    rebuilt.restore(run_dir, warn=lambda line: None)
    assert run_spec.settings_differences(trainer.settings(), rebuilt.settings()) == []
    for mine, theirs in zip(trainer.critic.weights, rebuilt.critic.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    np.testing.assert_array_equal(trainer.sample(32), rebuilt.sample(32))


def test_differences_names_the_field_that_differs(trained):
    trainer, _ = trained
    other = lipgan.Trainer(**_keywords(constraint=lipgan.constraints.GradientPenalty(weight=3.0)))
    diffs = trainer.spec.differences(other.settings(), trainer)
    assert diffs == ["constraint.weight: 3.0 -> 1.0"]
    # how often is not what a step computes: intervals never differ
    often = trainer.spec.replace(intervals=lipgan.Intervals(log_every=7))
    assert often.differences(trainer.settings(), trainer) == []


def test_differences_reads_a_field_a_record_predates_as_its_default():
    old = {"step_config": {"n_critic": 5}}
    assert run_spec.settings_differences(old, {"step_config": {"n_critic": 5, "seed": 0}}) == []
    assert run_spec.settings_differences(old, {"step_config": {"n_critic": 5, "seed": 3}}) == [
        "step_config.seed: 0 -> 3"
    ]


def test_a_resume_with_a_changed_field_is_refused_in_one_line(trained, tmp_path):
    _, run_dir = trained
    changed = lipgan.Trainer(
        **_keywords(step_config=lipgan.StepConfig(global_batch_size=16, n_critic=2))
    )
    with pytest.raises(RunDirError) as refused:
        changed.fit(3, run_dir=run_dir, verbose=0)
    message = str(refused.value)
    assert "\n" not in message
    assert "step_config.n_critic: 5 -> 2" in message


def test_a_record_written_before_the_spec_compares_equal_to_the_same_run(tmp_path):
    record = json.loads(FIXTURE.read_text())
    assert record["format"] == 1
    today = lipgan.Trainer(**_keywords())
    assert run_spec.settings_differences(record["settings"], today.settings()) == []
    # the rebuild section is the same too (the data's copy: its settings and fingerprint), but
    # for the names Keras numbers per process (models, layers, optimizers)
    described = today.spec.to_json(today, tmp_path, steps=2, warn=lambda line: None)["rebuild"]
    names = (
        "critic",
        "generator",
        "critic_optimizer.config.name",
        "generator_optimizer.config.name",
    )
    # the record predates the layout move: its strategy's class path read at today's module
    # (the rebuild reads a "given" strategy by name, lipgan.run.rebuild)
    before = run_spec.at_today_paths(record["rebuild"])
    assert run_spec.differences(before, described, ignore=names) == []
    for model in ("critic", "generator"):  # the architectures themselves: settings' hashes
        classes = [
            [layer["class_name"] for layer in entry["keras"]["config"]["layers"]]
            for entry in (record["rebuild"][model], described[model])
        ]
        assert classes[0] == classes[1]


def test_a_recorded_gin_config_of_the_old_name_is_converted():
    from lipgan.config.gin_messages import convert_recorded

    text = "train.dataset = @dataset()\ntrain.steps = 3\ndataset.name = 'lipgan_toy/8gaussians'\n"
    assert convert_recorded(text) == (
        "train.data = @dataset()\ntrain.steps = 3\ndataset.name = 'lipgan_toy/8gaussians'\n"
    )


def test_the_spec_checks_its_fields_once_where_it_is_made():
    with pytest.raises(ConfigError, match="train.constraint must be a constraint"):
        RunSpec(data=None, critic=None, generator=None, constraint="gp")
    with pytest.raises(ConfigError, match="step_config must be a lipgan.StepConfig, not dict"):
        RunSpec(
            data=None,
            critic=None,
            generator=None,
            constraint=lipgan.constraints.GradientPenalty(),
            step_config={"n_critic": 2},
        )
