"""Third-party discovery and resilience: broken, raising, duplicate and blocked plugins."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lipgan.config import gin_binding as config
from lipgan.core.errors import ConfigError
from lipgan.core.plugins import load_registry
from tests.fake_dists import BROKEN_IMPORT, RAISING_HOOK, STRATEGY_PLUGIN, good, make_dist


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path holding fake installed distributions."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("LIPGAN_DISABLE_PLUGINS", raising=False)
    return tmp_path


def test_third_party_plugin_is_discovered_with_its_distribution(site):
    good(site)
    discovery = load_registry()
    entry = {e.name: e for e in discovery.registry.entries("constraint")}["fake_good"]
    assert (entry.plugin, entry.source) == ("fake_good", "lipgan-fake-good 1.2.3")
    assert discovery.hooks_of("fake_good") == ["lipgan_register_constraints"]
    assert "gradient_penalty" in discovery.registry.names("constraint")


def test_third_party_strategy_via_lipgan_register_strategies(site):
    make_dist(
        site,
        "lipgan-fake-strategy",
        "0.3",
        "fake_strategy",
        "fake_strategy_plugin",
        STRATEGY_PLUGIN,
    )
    discovery = load_registry()
    entry = {e.name: e for e in discovery.registry.entries("strategy")}["fake_one_device"]
    assert (entry.kind, entry.source) == ("strategy", "lipgan-fake-strategy 0.3")
    assert discovery.hooks_of("fake_strategy") == ["lipgan_register_strategies"]
    config.parse(["wgangp_toy.gin"], ["train.strategy = @fake_one_device()"], discovery.registry)


def test_import_failure_is_reported_and_others_still_load(site):
    good(site)
    make_dist(site, "lipgan-broken", "0.1", "broken", "broken_plugin", BROKEN_IMPORT)
    discovery = load_registry()
    [failure] = discovery.failures
    assert (failure.plugin, failure.source) == ("broken", "lipgan-broken 0.1")
    assert failure.error == "ImportError: needs the missing package frobnicate"
    assert {"fake_good", "gradient_penalty"} <= set(discovery.registry.names("constraint"))


def test_raising_hook_is_reported_and_its_registrations_rolled_back(site):
    make_dist(site, "lipgan-halfdone", "2.0", "half_done", "half_done_plugin", RAISING_HOOK)
    discovery = load_registry()
    [failure] = discovery.failures
    assert (failure.plugin, failure.source) == ("half_done", "lipgan-halfdone 2.0")
    assert "RuntimeError: boom in hook" in failure.error
    assert "half_done" not in discovery.registry.names("constraint")


def test_duplicate_constraint_name_across_distributions_names_both(site):
    good(site / "a", dist="lipgan-alpha", version="1.0", name="same_name", module="alpha_plugin")
    # Same constraint name under a different plugin (entry point) name in another distribution.
    make_dist(
        site / "b",
        "lipgan-beta",
        "2.0",
        "beta",
        "beta_plugin",
        (site / "a" / "alpha_plugin.py").read_text(),
    )
    sys.path.insert(0, str(site / "a"))
    sys.path.insert(0, str(site / "b"))
    try:
        discovery = load_registry()
    finally:
        sys.path.remove(str(site / "a"))
        sys.path.remove(str(site / "b"))
    # A clash: neither owner gets the name, both are named, everything else still loads.
    assert "same_name" not in discovery.registry.names("constraint")
    message = discovery.clashes["same_name"]
    assert "'same_name'" in message
    assert "lipgan-alpha 1.0" in message and "lipgan-beta 2.0" in message
    with pytest.raises(ConfigError, match="'same_name' is unavailable: constraint name"):
        discovery.registry.get("constraint", "same_name")
    assert "gradient_penalty" in discovery.registry.names("constraint")


def test_plugin_name_taken_by_a_builtin_is_a_clear_error(site):
    """Silently keeping one of two same-named plugins would surprise whoever installed the other."""
    good(site, dist="lipgan-impostor", version="0.9", name="gradient_penalty", module="impostor")
    discovery = load_registry()
    message = discovery.clashes["gradient_penalty"]
    assert "built-in" in message and "lipgan-impostor 0.9" in message
    with pytest.raises(ConfigError, match="gradient_penalty"):
        discovery.registry.get("constraint", "gradient_penalty")


def test_blocking_by_environment_and_argument(site, monkeypatch):
    good(site)
    monkeypatch.setenv("LIPGAN_DISABLE_PLUGINS", "fake_good, weight_clip")
    discovery = load_registry(disabled=["dragan"])
    names = discovery.registry.names("constraint")
    assert not {"fake_good", "weight_clip", "dragan"} & set(names)
    assert discovery.blocked == ["dragan", "fake_good", "weight_clip"]
    assert "gradient_penalty" in names
    with pytest.raises(ConfigError, match="'dragan' is unavailable: plugin 'dragan' is blocked"):
        discovery.registry.get("constraint", "dragan")


def test_config_fails_clearly_only_when_it_needs_the_broken_plugin(site):
    make_dist(site, "lipgan-broken", "0.1", "broken", "broken_plugin", BROKEN_IMPORT)
    registry = load_registry().registry
    config.parse(["wgangp_toy.gin"], [], registry)  # does not need it: fine
    with pytest.raises(ConfigError) as info:
        config.parse(["wgangp_toy.gin"], ["train.constraint = @broken()"], registry)
    assert str(info.value) == (
        "--bind 'train.constraint = @broken()': 'broken' is unavailable: plugin 'broken' "
        "(lipgan-broken 0.1) failed to load: ImportError: needs the missing package frobnicate"
    )
    with pytest.raises(ConfigError, match="unknown configurable 'nonexistent'"):
        config.parse(["wgangp_toy.gin"], ["train.constraint = @nonexistent()"], registry)


def test_config_names_a_constraint_lost_by_a_raising_hook(site):
    make_dist(site, "lipgan-halfdone", "2.0", "hd", "half_done_plugin", RAISING_HOOK)
    registry = load_registry().registry
    with pytest.raises(
        ConfigError, match=r"'half_done' is unavailable: plugin 'hd' \(lipgan-halfdone 2.0\)"
    ):
        config.parse(["wgangp_toy.gin"], ["half_done.foo = 1"], registry)


@pytest.mark.slow
def test_cli_plugins_json_reports_plugins_failures_and_blocked(tmp_path):
    good(tmp_path)
    make_dist(tmp_path, "lipgan-broken", "0.1", "broken", "broken_plugin", BROKEN_IMPORT)
    make_dist(tmp_path, "lipgan-halfdone", "2.0", "half_done", "half_done_plugin", RAISING_HOOK)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LIPGAN_DISABLE_PLUGINS="tpu")
    out = subprocess.run(
        [
            str(Path(sys.executable).with_name("lipgan")),
            "plugins",
            "--json",
            "--disable-plugin",
            "r1",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
        cwd=tmp_path,
    ).stdout
    payload = json.loads(out)
    plugins = {p["name"]: p for p in payload["plugins"]}
    assert plugins["fake_good"]["kind"] == "constraint"
    assert plugins["fake_good"]["source"] == "lipgan-fake-good 1.2.3"
    assert (plugins["fake_good"]["distribution"], plugins["fake_good"]["version"]) == (
        "lipgan-fake-good",
        "1.2.3",
    )
    assert (plugins["dragan"]["distribution"], plugins["dragan"]["source"]) == (
        "lipgan",
        "built-in",
    )
    assert plugins["fake_good"]["hooks"] == ["lipgan_register_constraints"]
    assert plugins["mirrored"]["hooks"] == ["lipgan_register_strategies"]
    # a constraint's and a strategy's gin parameters, with their defaults
    assert plugins["soc"]["parameters"]["bound"] == {"default": "gram"}
    assert plugins["soc"]["unrecorded_defaults"] == {"bound": "holder", "downsample": "before"}
    assert plugins["mirrored"]["parameters"] == {
        "logical_cpus": {"default": None},
        "devices": {"default": None},
    }
    assert plugins["none"]["parameters"] == {} and "parameters" not in plugins["ray"]
    failed = {f["plugin"]: f for f in payload["failed"]}
    assert failed["broken"]["source"] == "lipgan-broken 0.1"
    assert "ImportError" in failed["broken"]["error"]
    assert "RuntimeError: boom in hook" in failed["half_done"]["error"]
    assert payload["blocked"] == ["r1", "tpu"]
    assert not {"r1", "tpu", "half_done"} & set(plugins)


MISSPELLED_HOOK = """
from lipgan import Constraint, hookimpl

class Typo(Constraint):
    name = "typo_constraint"

@hookimpl
def lipgan_register_constraint(register):  # missing the final "s"
    register(Typo)
"""


def test_a_misspelled_hook_is_reported_not_silently_ignored(site):
    good(site)
    make_dist(site, "lipgan-typo", "0.1", "typo", "typo_plugin", MISSPELLED_HOOK)
    discovery = load_registry()
    [failure] = discovery.failures
    assert (failure.plugin, failure.source) == ("typo", "lipgan-typo 0.1")
    assert "lipgan_register_constraint" in failure.error
    assert "lipgan_register_constraints" in failure.error  # what it could have meant
    assert "fake_good" in discovery.registry.names("constraint")  # the others still load
