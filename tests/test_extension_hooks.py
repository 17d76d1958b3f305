"""Every extension point is a hook: executors, metrics, loggers and a constraint's search space,
each registered by an in-process plugin exactly as an installed one would be, and each used by the
command or API that chooses it by name. Built-ins go through the same hooks (checked here too)."""

import json
import sys
import types

import keras
import numpy as np
import pytest

import lipgan
from lipgan import hookimpl
from lipgan.core.errors import ConfigError
from lipgan.core.executor import Executor
from lipgan.core.logger import Logger
from lipgan.core.metric import Metric
from lipgan.core.search_space import ADAM, LogUniform


class Mean(Metric):
    name = "mean_norm"
    description = "‖mean fake − mean real‖ (test)."
    default = False
    needs_more_real = True

    def compute(self, data):
        gap = np.linalg.norm(data.fake.mean(0) - data.real.mean(0))
        floor = np.linalg.norm(data.real_again().mean(0) - data.real.mean(0))
        return {"mean_gap": float(gap), "mean_gap_floor": float(floor)}


class ImagesOnly(Metric):
    name = "images_only"

    def applies(self, data):
        return data.is_image

    def compute(self, data):
        raise AssertionError("never computed on 2-D data")


class Recorder(Logger):
    name = "recorder"
    calls: list = []

    def on_train_begin(self, step, steps):
        Recorder.calls.append(("begin", step, steps, self.view.run_dir, self.view.chief))

    def on_log(self, step, metrics):
        Recorder.calls.append(("log", step, sorted(metrics)))


class Inline(Executor):
    name = "inline"
    accepts = frozenset({"jobs"})
    commands = frozenset({"study"})

    def __init__(self, jobs=None):
        self.jobs = jobs


class Tunable(lipgan.Constraint):
    name = "tunable_penalty"
    search_space = {**ADAM, "weight": LogUniform(0.5, 2.0)}

    def __init__(self, weight: float = 1.0):
        self.weight = weight


class Untunable(lipgan.Constraint):
    name = "untunable_penalty"


@pytest.fixture
def plugin(monkeypatch):
    """An in-process plugin module registered beside the built-ins."""
    from lipgan.core import plugins

    module = types.ModuleType("lipgan_test_extensions")

    @hookimpl
    def lipgan_register_metrics(register):
        register(Mean)
        register(ImagesOnly)

    @hookimpl
    def lipgan_register_loggers(register):
        register(Recorder)

    @hookimpl
    def lipgan_register_executors(register):
        register(Inline)

    @hookimpl
    def lipgan_register_constraints(register):
        register(Tunable)
        register(Untunable)

    for fn in (
        lipgan_register_metrics,
        lipgan_register_loggers,
        lipgan_register_executors,
        lipgan_register_constraints,
    ):
        setattr(module, fn.__name__, fn)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(plugins.BUILTIN_PLUGINS, "test_extensions", module.__name__)
    monkeypatch.delenv("LIPGAN_DISABLE_PLUGINS", raising=False)
    plugins._discovered.cache_clear()
    yield plugins.load_registry().registry
    plugins._discovered.cache_clear()


def test_the_builtins_register_through_the_hooks():
    from lipgan.core.plugins import load_registry

    discovery = load_registry()
    registry = discovery.registry
    assert {"local", "ray", "tune"} <= set(registry.names("executor"))
    assert {"critic_wasserstein", "toy", "data_w1", "digits"} <= set(registry.names("metric"))
    assert registry.names("logger")[:1] == ["csv"]
    assert discovery.hooks_of("executors") == ["lipgan_register_executors"]
    assert discovery.hooks_of("metrics") == ["lipgan_register_metrics"]
    assert discovery.hooks_of("csv") == ["lipgan_register_loggers"]


def tiny_trainer():
    from lipgan.constraints import GradientPenalty

    points = np.random.default_rng(0).normal(size=(256, 2)).astype("float32")
    return lipgan.Trainer(
        data=points,
        critic=lambda s: lipgan.models.mlp_critic(s, width=8, depth=1),
        generator=lambda s: lipgan.models.mlp_generator(s, width=8, depth=1),
        constraint=GradientPenalty(weight=1.0),
        critic_optimizer=keras.optimizers.Adam(1e-3),
        generator_optimizer=keras.optimizers.Adam(1e-3),
        step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1, seed=0, jit_compile=False),
        intervals=lipgan.Intervals(log_every=2, checkpoint_every=4, eval_every=0, plot_samples=0),
    )


def test_metrics_are_chosen_by_name_and_refused_in_one_line(plugin):
    trainer = tiny_trainer()
    default = trainer.evaluate(num_samples=64)
    assert "eval/mean_gap" not in default and "eval/w1" in default  # off by default
    named = trainer.evaluate(num_samples=64, metrics=["mean_norm"])
    assert set(named) == {"eval/mean_gap", "eval/mean_gap_floor"}
    assert named["eval/mean_gap"] > 0 and named["eval/mean_gap_floor"] > 0
    with pytest.raises(ConfigError, match="unknown metric 'nope'; known: .*mean_norm"):
        trainer.evaluate(num_samples=64, metrics=["nope"])
    with pytest.raises(ConfigError, match="metric 'images_only' does not apply.*mean_norm"):
        trainer.evaluate(num_samples=64, metrics=["images_only"])


@pytest.mark.slow
def test_a_logger_is_off_until_named_and_sees_a_narrow_view(plugin, tmp_path):
    Recorder.calls.clear()
    tiny_trainer().fit(2, run_dir=tmp_path / "a", verbose=0)
    assert Recorder.calls == []
    tiny_trainer().fit(4, run_dir=tmp_path / "b", verbose=0, loggers=["recorder", "csv"])
    assert Recorder.calls[0] == ("begin", 0, 4, tmp_path / "b", True)
    assert [c[1] for c in Recorder.calls[1:]] == [2, 4]
    rows = (tmp_path / "b" / "metrics.csv").read_text().splitlines()
    assert rows[0].split(",")[:2] == ["step", "critic_loss"] and len(rows) == 3
    jsonl = [json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in jsonl] == [int(r.split(",")[0]) for r in rows[1:]]
    with pytest.raises(ConfigError, match="unknown logger 'nope'"):
        tiny_trainer().fit(2, run_dir=tmp_path / "c", verbose=0, loggers=["nope"])
    assert not (tmp_path / "c").exists()


def test_executors_are_built_by_name_with_the_options_they_take(plugin):
    from lipgan.cli.options import make_executor

    built = make_executor("inline", "study", plugin, jobs=3, storage=None)
    assert isinstance(built, Inline) and built.jobs == 3
    with pytest.raises(
        ConfigError, match="^--storage is an option of --executor ray, not of inline$"
    ):
        make_executor("inline", "study", plugin, storage="/tmp/x")
    with pytest.raises(
        ConfigError, match="^--executor inline is for lipgan study, not lipgan tune$"
    ):
        make_executor("inline", "tune", plugin)
    with pytest.raises(ConfigError, match="^--executor tune is for lipgan tune, not lipgan study$"):
        make_executor("tune", "study", plugin)
    with pytest.raises(ConfigError, match="unknown executor 'slurm'; known: inline, local, ray"):
        make_executor("slurm", "study", plugin)


def test_a_third_party_constraint_with_a_search_space_is_tuned_and_one_without_is_named(plugin):
    from lipgan.study import search, tune

    assert "tunable_penalty" in tune.default_constraints(plugin)
    assert "untunable_penalty" not in tune.default_constraints(plugin)
    assert tune.left_out(plugin) == [
        "tune: leaves out constraint 'untunable_penalty' (plugin 'test_extensions' (built-in)): "
        "Untunable declares no search_space; declare a search_space to tune it (docs/plugins.md)"
    ]
    config = search.draw("tunable_penalty", 0, plugin)
    assert 0.5 <= config["weight"] <= 2.0
    assert f"tunable_penalty.weight = {config['weight']!r}" in search.bindings(
        "tunable_penalty", config, 10, plugin
    )
    with pytest.raises(ConfigError, match="'untunable_penalty' has no search space.*search_space"):
        search.space("untunable_penalty", plugin)
