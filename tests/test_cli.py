"""The CLI as a user meets it: shipped configs run, and every bad input is one clear line."""

import json

import pytest

from lipgan.config.gin_binding import shipped_configs
from tests.helpers import gin_config, invoke, run_record

TOY_CONFIGS = sorted(n for n in shipped_configs() if any(k in n for k in ("toy", "ring", "grid")))
IMAGE_SMOKE = {
    # Image configs run their whole pipeline on mock data, at a tiny global batch and width
    # (dim 16, not 128: the same graph, 61 -> 28 CPU-s measured).
    "wgangp_tpu.gin": [
        "--strategy",
        "mirrored",
        "--mock-data",
        "--bind",
        "train.global_batch_size=8",
        "--bind",
        "dcgan_critic.dim=16",
        "--bind",
        "dcgan_generator.dim=16",
    ],
}


def assert_one_line_error(result, *fragments):
    assert result.exit_code != 0
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


#: Shipped configs whose 2-step run is tested elsewhere (on real offline data).
COVERED_ELSEWHERE = {
    "wgangp_digits.gin": "tests/test_image_runs.py",
    "wgangp_cifar10.gin": "tests/test_cifar10_configs.py",
    "sngan_cifar10.gin": "tests/test_cifar10_configs.py",
}


def test_every_shipped_config_is_covered():
    assert set(shipped_configs()) == set(TOY_CONFIGS) | set(IMAGE_SMOKE) | set(COVERED_ELSEWHERE)


@pytest.mark.slow
@pytest.mark.parametrize("name", TOY_CONFIGS + sorted(IMAGE_SMOKE))
def test_shipped_config_runs_two_steps(tmp_path, name):
    run_dir = tmp_path / "run"
    extra = IMAGE_SMOKE.get(name, [])
    result = invoke(
        "run",
        "--gin",
        f"gin/{name}",
        "--bind",
        "train.steps=2",
        "--bind",
        "train.log_every=1",
        "--run-dir",
        str(run_dir),
        *extra,
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert {"critic_loss", "generator_loss", "wasserstein", "penalty"} <= set(row)
    operative = run_record(run_dir)["gin"]["operative"]
    assert operative.strip() and (run_dir / "operative_config.gin").read_text() == operative
    assert "train.steps = 2" in gin_config(run_dir)
    assert list((run_dir / "checkpoints").glob("ckpt-2.index"))
    assert list((run_dir / "tensorboard").iterdir())
    assert (run_dir / "samples.png").exists()  # contour plot (2-D data) or image grid


@pytest.mark.slow
def test_default_run_uses_the_embedded_toy_config(tmp_path):
    result = invoke(
        "run",
        "--bind",
        "train.steps=1",
        "--bind",
        "train.global_batch_size=16",
        "--bind",
        "mlp_critic.width=8",
        "--bind",
        "mlp_generator.width=8",
        "--run-dir",
        str(tmp_path / "r"),
    )
    assert result.exit_code == 0, result.output
    assert "lipgan_toy/8gaussians" in gin_config(tmp_path / "r")


def test_broken_gin_syntax_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("train.steps = 3\ntrain.n_critic = = 5\n")
    result = invoke("run", "--gin", str(bad), "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(result, f"{bad}:2")
    assert not (tmp_path / "r").exists()


def test_a_binding_without_a_value_and_a_binary_file_say_what_is_wrong(tmp_path):
    empty = tmp_path / "empty.gin"
    empty.write_text("train.steps = \n")
    result = invoke("run", "--gin", str(empty))
    assert_one_line_error(result, f"{empty}:1: a binding with no value gin can read after `=`")
    assert "line 1)" not in result.output  # the location once, not twice
    binary = tmp_path / "binary.gin"
    binary.write_bytes(b"\xb2\xff\x00train")
    assert_one_line_error(invoke("run", "--gin", str(binary)), f"{binary}: not a text file")


def test_unclosed_bracket_is_one_line(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("train.steps = (3,\n")
    assert_one_line_error(invoke("run", "--gin", str(bad)), str(bad), "syntax error")


def test_unknown_configurable_lists_what_exists(tmp_path):
    result = invoke("run", "--bind", "trian.steps=3", "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(result, "unknown configurable 'trian'", "gradient_penalty", "train")
    assert not (tmp_path / "r").exists()


def test_unknown_parameter(tmp_path):
    assert_one_line_error(invoke("run", "--bind", "train.stepz=3"), "train", "stepz")


@pytest.mark.parametrize(
    "binding", ["train.constraint = @gradient_penalti()", "train.strategy = @mirored()"]
)
def test_unknown_plugin_name_in_gin_lists_known_ones(binding):
    assert_one_line_error(
        invoke("run", "--bind", binding), "unknown configurable", "weight_clip", "mirrored"
    )


def test_unknown_strategy_flag_lists_known_ones():
    assert_one_line_error(
        invoke("run", "--strategy", "tpuu"), "unknown strategy 'tpuu'", "default, mirrored"
    )


@pytest.mark.parametrize("binding", ["train.steps", "train.steps=(", "=3"])
def test_bind_that_does_not_parse(binding):
    assert_one_line_error(invoke("run", "--bind", binding), "--bind")


def test_bare_word_in_bind_says_how_to_write_a_value():
    # gin used to say "malformed node or string on line 1: <ast.Name object at 0x...>".
    result = invoke("run", "--bind", "train.steps=abc")
    assert_one_line_error(
        result, "--bind 'train.steps=abc'", "'abc' is not a value", "\"train.steps='abc'\""
    )
    assert "ast." not in result.output


def test_bare_word_in_gin_file_names_line_and_binding(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("train.steps = 3\ntrain.data = foo\n")
    result = invoke("run", "--gin", str(bad), "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(result, f"{bad}:2: train.data", "train.data = 'foo'")
    assert "ast." not in result.output and not (tmp_path / "r").exists()


def test_the_old_name_train_dataset_is_refused_saying_to_write_train_data(tmp_path):
    old = tmp_path / "old.gin"
    old.write_text("train.steps = 3\ntrain.dataset = @dataset()\n")
    result = invoke("run", "--gin", str(old), "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(
        result, f"{old}:2: train.dataset is now train.data: write `train.data = ...`"
    )
    assert not (tmp_path / "r").exists()


def test_tpu_config_without_tpu_says_so_and_suggests_strategy(tmp_path, monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    result = invoke("run", "--gin", "gin/wgangp_tpu.gin", "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(result, "no TPU", "--strategy")
    assert not (tmp_path / "r").exists()


def test_unprepared_dataset_says_how_to_prepare_it(tmp_path):
    result = invoke(
        "run",
        "--bind",
        "dataset.name='cifar10'",
        "--bind",
        f"dataset.data_dir='{tmp_path}'",
        "--bind",
        "dataset.download=False",
        "--run-dir",
        str(tmp_path / "r"),
    )
    assert_one_line_error(result, "cifar10", "not prepared", str(tmp_path), "tfds build cifar10")
    assert not (tmp_path / "r").exists()


def test_unknown_dataset(tmp_path):
    assert_one_line_error(invoke("run", "--bind", "dataset.name='no_such_set'"), "no_such_set")


def test_missing_gin_file_lists_shipped_configs():
    assert_one_line_error(invoke("run", "--gin", "nope.gin"), "nope.gin", "wgangp_toy.gin")


def test_shipped_config_found_by_name(tmp_path):
    result = invoke("run", "--gin", "wgangp_toy", "--bind", "train.steps=0")
    assert_one_line_error(result, "train.steps=0")


def test_invalid_plugin_argument_is_one_line():
    result = invoke(
        "run", "--bind", "train.constraint=@weight_clip()", "--bind", "weight_clip.c=-1.0"
    )
    assert_one_line_error(result, "weight_clip", "positive")


def test_indivisible_global_batch(tmp_path):
    result = invoke("run", "--bind", "train.global_batch_size=0")
    assert_one_line_error(result, "global_batch_size")


def test_run_dir_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("keep me")
    assert_one_line_error(invoke("run", "--run-dir", str(target)), "not a directory")
    assert target.read_text() == "keep me"


def test_plugins_lists_builtins_with_source():
    result = invoke("plugins", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    found = {(p["kind"], p["name"]): p for p in payload["plugins"]}
    for name in ("none", "weight_clip", "gradient_penalty", "spectral_norm"):
        assert found[("constraint", name)]["source"] == "built-in"
        assert found[("constraint", name)]["hooks"] == ["lipgan_register_constraints"]
    for name in ("default", "mirrored", "tpu", "multi_worker"):
        assert found[("strategy", name)]["source"] == "built-in"
    assert payload["failed"] == []
    text = invoke("plugins").output
    assert "constraints:" in text and "gradient_penalty" in text and "multi_worker" in text


def test_plugins_can_be_blocked(monkeypatch):
    monkeypatch.setenv("LIPGAN_DISABLE_PLUGINS", "weight_clip")
    payload = json.loads(invoke("plugins", "--json", "--disable-plugin", "tpu").output)
    names = {p["name"] for p in payload["plugins"]}
    assert "weight_clip" not in names and "tpu" not in names and "gradient_penalty" in names
    assert payload["blocked"] == ["tpu", "weight_clip"]
    result = invoke(
        "run", "--bind", "train.constraint=@weight_clip()", "--disable-plugin", "weight_clip"
    )
    assert_one_line_error(result, "weight_clip")


def test_blocking_a_name_nothing_has_warns_in_one_line():
    result = invoke("plugins", "--disable-plugin", "wieght_clip", "--disable-plugin", "tpu")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if "wieght_clip" in line]
    assert warnings == [
        "warning: nothing is named 'wieght_clip', so blocking it (LIPGAN_DISABLE_PLUGINS or "
        "--disable-plugin) blocks nothing; `lipgan plugins` lists the names"
    ]
    assert "'tpu'" not in result.stderr  # a real plugin's name blocks quietly


@pytest.mark.parametrize(
    "args, message",
    [
        (("sample", "."), "Error: Missing option '--out'. (see `lipgan sample --help`)"),
        (("nosuchcmd",), "Error: No such command 'nosuchcmd'. (see `lipgan --help`)"),
        (("eval", ".", "--samples", "1"), "Error: Invalid value for '--samples': 1 is not in"),
    ],
)
def test_a_usage_mistake_is_one_line_naming_the_help_to_read(args, message):
    result = invoke(*args)
    assert result.exit_code == 2  # click's status for usage errors, kept
    assert result.stderr.splitlines() == [result.stderr.strip()]  # one line, no usage block
    assert result.stderr.startswith(message)


@pytest.mark.parametrize(
    "binding, message",
    [
        ("train.n_critic=2.5", "train.n_critic=2.5 is invalid: must be an integer >= 1"),
        ("train.global_batch_size=-3", "train.global_batch_size=-3 is invalid"),
        ("train.steps=%STEPS", "gin macro %STEPS is used but never defined"),
        ("train.steps=0", "train.steps=0 is invalid"),
    ],
)
def test_config_show_refuses_what_run_would_refuse(binding, message):
    """`config show` prints a config `run` accepts, or the error `run` would give: one line."""
    assert_one_line_error(invoke("config", "show", "--bind", binding), message)
