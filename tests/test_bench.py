"""Smoke tests of ``lipgan bench``: the harness runs end to end for a few steps and reports what it
promises (records, ratios, keras-io baseline, Markdown, chart). Figures are never asserted."""

import json
import re

import pytest
from click.testing import CliRunner

from lipgan.bench import cases, harness, sweep
from lipgan.cli.main import cli
from lipgan.core.errors import ConfigError
from lipgan.core.plugin_spec import parse_spec
from tests.helpers import TINY_BENCH


def test_parse_spec_reads_python_literals():
    assert parse_spec("gradient_penalty:fast_relu=True,every=16") == (
        "gradient_penalty",
        {"fast_relu": True, "every": 16},
    )
    assert parse_spec("none") == ("none", {})
    with pytest.raises(ConfigError):
        parse_spec("gradient_penalty:every")


def test_default_constraints_cover_the_registry_and_gp_variants():
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    specs = sweep.default_constraints(registry)
    assert set(registry.names("constraint")) <= set(specs)
    assert "gradient_penalty:fast_relu=False" in specs and "gradient_penalty:every=16" in specs


@pytest.mark.slow
def test_bench_smoke(tmp_path):
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            *TINY_BENCH,
            "--constraint",
            "none",
            "--constraint",
            "gradient_penalty:every=2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    assert payload["machine"]["tensorflow"] and payload["command"].startswith("lipgan bench")
    records = payload["records"]
    seen = {(r["constraint"], r["measurement"]) for r in records}
    assert seen == {
        ("none", "critic_step"),
        ("none", "iteration"),
        ("gradient_penalty:every=2", "penalty"),
        ("gradient_penalty:every=2", "critic_step"),
        ("gradient_penalty:every=2", "iteration"),
        (sweep.KERAS_IO, "iteration"),
    }
    for r in records:
        assert r["examples_per_s"] > 0 and r["repetitions"] == 1
        assert r["time_ratio_vs_none"] is not None  # every row has its unconstrained reference
    gp_iteration = next(
        r
        for r in records
        if r["constraint"].startswith("gradient") and r["measurement"] == "iteration"
    )
    assert gp_iteration["speedup_vs_keras_io"] is not None
    none_step = next(
        r for r in records if r["constraint"] == "none" and r["measurement"] == "critic_step"
    )
    assert none_step["flops_per_call"] > 0 and none_step["time_ratio_vs_none"] == pytest.approx(1.0)
    # No --mode: the default 'auto' row names what it resolved to (lipgan.core.jit, as `lipgan
    # run`).
    assert re.search(
        r"\| default \| toy \| 8 \| auto → (xla|function) \|", (out / "results.md").read_text()
    )
    assert (out / "chart.png").stat().st_size > 0


def test_bench_rejects_unknown_constraint_in_one_line(tmp_path):
    result = CliRunner().invoke(
        cli, ["bench", *TINY_BENCH, "--constraint", "nope", "--out", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert (
        "unknown constraint 'nope'" in result.output
        and len(result.output.strip().splitlines()) == 1
    )


@pytest.mark.slow
def test_bench_mirrored_runs_in_a_child_process(tmp_path):
    cfg = sweep.BenchConfig(
        models=["toy"],
        constraints=["none"],
        strategies=["mirrored:logical_cpus=2"],
        batches={"toy": [8]},
        measurements=["critic_step"],
        keras_io=False,
        repetitions=1,
        min_rep_seconds=0,
        count_flops=False,
    )
    records = harness.run(cfg, log=lambda line: None)
    assert [(r["strategy"], r["replicas"]) for r in records] == [("mirrored:logical_cpus=2", 2)]


@pytest.mark.slow
def test_bench_eager_and_xla_modes_run():
    cfg = sweep.BenchConfig(
        models=["toy"],
        constraints=["none", "gradient_penalty:fast_relu=True"],
        modes=["eager", "xla"],
        batches={"toy": [8]},
        measurements=["penalty", "critic_step", "iteration"],
        keras_io=True,
        repetitions=1,
        min_rep_seconds=0,
        n_critic=1,
        steps_per_execution=1,
        count_flops=False,
    )
    records = harness.run(cfg, log=lambda line: None)
    modes = {(r["mode"], r["constraint"], r["measurement"]) for r in records}
    for mode in ("eager", "xla"):
        assert (mode, "gradient_penalty:fast_relu=True", "penalty") in modes
        assert (mode, "gradient_penalty:fast_relu=True", "iteration") in modes
        assert (mode, sweep.KERAS_IO, "iteration") in modes


def test_bf16_modes_split_into_execution_and_precision():
    assert sweep.split_mode("function") == ("function", None)
    assert sweep.split_mode("xla+bf16") == ("xla", "mixed_bfloat16")
    assert sweep.split_mode("function+bf16") == ("function", "mixed_bfloat16")
    with pytest.raises(ConfigError, match=re.escape("unknown mode 'xla+fp8'")):
        sweep.BenchConfig(modes=["xla+fp8"]).validate()


def test_matmul_probe_measures_dense_shapes_and_fractions_follow():
    from lipgan.bench import probe

    assert probe.layer_matmul_flops_per_s([(3, 3, 1, 8)], batch=4) is None  # conv kernels only
    rate = probe.layer_matmul_flops_per_s([(8, 16), (16, 1)], batch=4, min_seconds=0.05)
    assert rate > 0
    limits = {"probe_flops_per_s": 4e9, "peak_flops_per_s": None}
    fractions = harness._fractions({"achieved_flops_per_s": 1e9}, limits)
    assert fractions["fraction_of_probe"] == pytest.approx(0.25)
    assert fractions["fraction_of_peak"] is None


def test_auto_mode_names_what_it_resolved_to():
    assert sweep.BenchConfig().modes == ["auto"]
    assert cases.resolved_mode("auto", use_xla=True) == "xla"
    assert cases.resolved_mode("auto+bf16", use_xla=False) == "function+bf16"
    assert cases.resolved_mode("function", use_xla=False) == "function"
    from lipgan.bench.report import mode_label

    assert mode_label({"mode": "auto", "resolved_mode": "xla"}) == "auto → xla"
    assert mode_label({"mode": "xla", "resolved_mode": "xla"}) == "xla"


@pytest.mark.slow
def test_bench_defaults_to_what_lipgan_run_does(tmp_path):
    """No --mode: train.jit_compile='auto', resolved by lipgan.core.jit as the engine resolves it
    for
    each model (on CPU: XLA for the dense toy MLP, tf.function for the convolutional DCGAN)."""
    import tensorflow as tf

    from lipgan.core.jit import resolve_jit_compile

    result = CliRunner().invoke(
        cli,
        [
            "bench",
            *TINY_BENCH,
            "--model",
            "dcgan",
            "--batch",
            "dcgan=2",
            "--constraint",
            "none",
            "--measure",
            "critic_step",
            "--no-keras-io",
            "--no-flops",
            "--no-probe",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "results.json").read_text())["records"]
    table = (tmp_path / "results.md").read_text()
    assert {r["model"] for r in records} == {"toy", "dcgan"}
    for r in records:
        critic, generator = cases._model_fns(sweep.MODELS[r["model"]])
        shape = sweep.MODELS[r["model"]].data_shape
        models = (critic(shape), generator(shape))
        xla = resolve_jit_compile("auto", tf.distribute.get_strategy(), models)
        assert r["mode"] == "auto"
        assert r["resolved_mode"] == ("xla" if xla else "function")
        assert f"| {r['model']} | {r['batch']} | auto → {r['resolved_mode']} |" in table


def test_results_md_is_what_make_results_renders():
    """benchmarks/RESULTS.md is generated from the run folders, ANALYSIS.md and sweep.txt: a hand
    edit of RESULTS.md would be lost on the next ``python benchmarks/make_results.py`` (it once
    held ~150 lines of findings that ANALYSIS.md lacked). Edit ANALYSIS.md or a run.txt, then
    run the script."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "benchmarks" / "make_results.py"
    spec = importlib.util.spec_from_file_location("make_results", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render()
    assert "## Findings" in rendered and "## soc_gram" in rendered
    assert rendered == (path.parent / "RESULTS.md").read_text()
