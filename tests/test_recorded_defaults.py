"""A run keeps the constraint it trained with when a plugin's defaults move on.

SOC's ``bound`` became an argument on 2026-12-07 (Hölder's scale before) and its default became
``'gram'`` the same day. A run dir recorded before either must rebuild (``eval``, ``sample``,
``audit``) and resume with Hölder's scale: its weights were trained for that function. Two
mechanisms, both tested on the real plugin: a gin run's recorded arguments pinned where its
config left them to a default (:func:`lipgan.config.recorded.default_pins`), and an argument a
record predates read as ``Named.unrecorded_defaults`` (in the rebuild and in the settings
comparison, :func:`lipgan.run.spec.settings_differences`).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import lipgan
from lipgan.config.recorded import default_pins, rebuild_trainer
from lipgan.core.plugins import default_registry
from lipgan.run import spec as run_spec
from lipgan.run.spec import RunSpec
from lipgan_plugins.soc import SOC
from tests.helpers import invoke, run_record

#: ``lipgan run`` bindings of a 2-iteration SOC run on the embedded toy config, width 8.
TINY = [
    argument
    for binding in (
        "train.constraint=@soc()",
        "train.steps=2",
        "train.global_batch_size=16",
        "mlp_critic.width=8",
        "mlp_generator.width=8",
        "train.checkpoint_every=2",
    )
    for argument in ("--bind", binding)
]


def _without(record: dict, *names: str) -> dict:
    """``record`` as a lipgan without SOC's ``names`` arguments wrote it."""
    record = json.loads(json.dumps(record))
    for name in names:
        del record["settings"]["constraint"][name]
        del record["rebuild"]["constraint"]["arguments"][name]
    return record


def test_an_argument_the_record_predates_compares_as_its_unrecorded_default():
    old = {"constraint": {"class": "soc", "norm": 0.5, "terms": 4, "arguments": {}}}
    new = {"constraint": {**old["constraint"], "bound": "holder", "downsample": "before"}}
    plugins = {"constraint": SOC}
    assert run_spec.settings_differences(old, new, plugins) == []
    gram = {"constraint": {**new["constraint"], "bound": "gram"}}
    assert run_spec.settings_differences(old, gram, plugins) == ["constraint.bound: holder -> gram"]
    # without the plugin's classes (or for another plugin) the missing key is a difference
    assert run_spec.settings_differences(old, new) == [
        "constraint.bound: (unset) -> holder",
        "constraint.downsample: (unset) -> before",
    ]
    other = {"constraint": {**old["constraint"], "class": "cayley"}}
    assert run_spec.unrecorded_settings("constraint", SOC, other, new) == {}


def test_every_argument_added_since_run_json_has_its_unrecorded_default():
    """run.json (94c9519, 2026-12-05) records every argument; those added to a built-in
    constraint after it, and what a run before them trained (found with ``git log -S``)."""
    from lipgan_plugins.spectral_norm import SpectralNorm

    assert SOC.unrecorded_defaults == {"bound": "holder", "downsample": "before"}
    assert SpectralNorm.unrecorded_defaults == {"output_scale": 1.0}
    old = {"constraint": {"class": "spectral_norm", "power_iterations": 1, "arguments": {}}}
    new = {"constraint": {**old["constraint"], "output_scale": 1.0}}
    assert run_spec.settings_differences(old, new, {"constraint": SpectralNorm}) == []


@pytest.fixture(scope="module")
def holder_era_run(tmp_path_factory):
    """A ``lipgan run`` of SOC trained while Hölder's scale was the default (the default moved
    back for the run only), with its config leaving ``soc.bound`` unbound."""
    run_dir = tmp_path_factory.mktemp("soc") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SOC.__init__, "__defaults__", (4, 0.5, "before", "holder"))
        result = invoke("run", *TINY, "--run-dir", str(run_dir))
    assert result.exit_code == 0, result.output
    assert "bound" not in run_record(run_dir)["gin"]["config"]
    assert run_record(run_dir)["settings"]["constraint"]["bound"] == "holder"
    return run_dir


def test_a_gin_run_rebuilds_with_the_scale_it_trained_with_not_todays_default(holder_era_run):
    registry = default_registry()
    assert SOC().bound == "gram"  # today's default
    assert default_pins(run_record(holder_era_run), registry) == ["soc.bound = 'holder'"]
    trainer, steps = rebuild_trainer(holder_era_run, registry)
    assert (trainer.constraint.bound, steps) == ("holder", 2)
    layers = [layer for layer in trainer.critic.layers if hasattr(layer, "bound")]
    assert layers and {layer.bound for layer in layers} == {"holder"}
    # a user may still bind another scale, after the pin
    other, _ = rebuild_trainer(holder_era_run, registry, bound=["soc.bound='gram'"])
    assert other.constraint.bound == "gram"


def test_a_gin_run_of_the_old_default_resumes_and_evaluates_from_the_cli(holder_era_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(holder_era_run, run_dir)
    result = invoke("run", "--resume", str(run_dir), "--bind", "train.steps=3")
    assert result.exit_code == 0, result.output
    assert run_record(run_dir)["settings"]["constraint"]["bound"] == "holder"
    result = invoke("audit", str(run_dir))
    assert result.exit_code == 0, result.output


def test_a_record_that_predates_the_argument_rebuilds_with_hoelders_scale(holder_era_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(holder_era_run, run_dir)
    old = _without(run_record(run_dir), "bound", "downsample")
    (run_dir / "run.json").write_text(json.dumps(old))
    registry = default_registry()
    assert default_pins(old, registry) == ["soc.bound = 'holder'"]
    trainer, _ = rebuild_trainer(run_dir, registry)
    assert trainer.constraint.bound == "holder"
    # and its settings compare equal to the record's: a resume is not refused
    assert trainer.spec.differences(old["settings"], trainer) == []


def test_a_python_run_that_predates_the_argument_rebuilds_with_hoelders_scale(tmp_path):
    points = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    trainer = lipgan.Trainer(
        data=points,
        critic=lambda shape: lipgan.models.mlp_critic(shape, width=8, depth=1),
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=SOC(bound="holder"),
        step_config=lipgan.StepConfig(global_batch_size=16),
    )
    run_dir = tmp_path / "run"
    trainer.fit(1, run_dir=run_dir, verbose=0)
    old = _without(run_record(run_dir), "bound")
    spec, _ = RunSpec.from_json(old, run_dir, default_registry())
    assert spec.constraint.bound == "holder"
    rebuilt = lipgan.Trainer.from_spec(spec)
    assert rebuilt.spec.differences(old["settings"], rebuilt) == []
    rebuilt.restore(run_dir, warn=lambda line: None)
    np.testing.assert_array_equal(trainer.sample(16), rebuilt.sample(16))
