"""``lipgan tune`` on an image data set: the search ranks by the first image metric's value (lower
is better) in one place for the random search, halving and the EMA decay choice; ``--metric``
refusals before anything trains; the report's image rows beside the reference rows."""

import json
import math

import pytest

from lipgan.study import ema_choice, halving, search, tune
from lipgan.study.curve import EMA_BY_DECAY, NO_EMA, decay_key
from lipgan.study.image_references import NOISE, REAL
from tests.helpers import invoke
from tests.test_image_study import MEMBER, offline  # noqa: F401 (a fixture)


def _ok(**metrics):
    return {"status": "ok", "metrics": metrics}


def test_an_image_result_scores_minus_its_ranked_value_and_a_failed_or_nan_one_nothing():
    assert search.score(_ok(digits_fd=3.5, digits_kid=0.1), "digits_fd") == (-3.5,)
    for failed in (
        _ok(digits_fd=math.nan),
        _ok(digits_fd=math.inf),
        _ok(digits_kid=0.1),
        {"status": "failed", "metrics": {"digits_fd": 1.0}},
        None,
    ):
        assert search.score(failed, "digits_fd") == (-math.inf,)
    # a point set's key is as before: -W1, then high quality, then -reverse KL
    point = _ok(w1=0.25, high_quality_fraction=0.9, reverse_kl=0.5, digits_fd=1.0)
    assert search.score(point) == (-0.25, 0.9, -0.5)


def test_the_ranked_value_is_the_first_image_metric_s_and_none_on_a_point_set():
    spec = tune.TuneSpec(("gradient_penalty",), ("digits", "cifar10", "ring"))
    assert spec.score_key("digits") == "digits_fd"
    assert spec.score_key("cifar10") == "fid"  # Lucic et al.'s choice, the default scores' first
    assert spec.score_key("ring") is None
    chosen = tune.TuneSpec(("gradient_penalty",), ("cifar10",), metrics=("kid", "fid"))
    assert chosen.score_key("cifar10") == "kid_inception"
    # the spec's JSON: metrics only where given (a point-set study's is unchanged)
    assert "metrics" not in spec.as_dict()
    assert chosen.as_dict()["metrics"] == ["kid", "fid"]


def test_random_search_halving_and_the_ema_decay_choose_the_lowest_value_never_a_nan():
    spec = tune.TuneSpec(("gradient_penalty",), ("digits",), configs=3, ema_decay=(0.99, 0.999))
    cells = tune.search_cells(spec)
    assert all(c.metrics == () for c in cells)  # the data set's default scores (spec.image_metrics)
    fds = (5.0, math.nan, 2.0)
    results = {c: _ok(digits_fd=fd) for c, fd in zip(cells, fds, strict=True)}
    chosen = tune.choose(spec, results)[("digits", "gradient_penalty")]
    assert (chosen["trial"], chosen["score"]) == (2, (-2.0,))
    assert halving.mean_score([_ok(digits_fd=2.0), _ok(digits_fd=4.0)], "digits_fd") == (-3.0,)
    assert halving.mean_score([_ok(digits_fd=2.0), _ok(digits_fd=math.nan)], "digits_fd") == (
        -math.inf,
    )
    # the EMA decays of a replicate: 0.999 has the lower FD on both seeds' mean
    low, high = decay_key(0.99), decay_key(0.999)
    final = {}
    replicates = tune.replicate_cells(spec, {("digits", "gradient_penalty"): chosen})
    for cell, (a, b) in zip(replicates, ((3.0, 1.0), (2.0, 2.5))):
        by_decay = {low: {"digits_fd": a}, high: {"digits_fd": b}}
        metrics = {"digits_fd": a, NO_EMA: {"digits_fd": 9.0}, EMA_BY_DECAY: by_decay}
        final[cell] = _ok(**metrics)
    picked = ema_choice.choose(spec, final)[("digits", "gradient_penalty")]
    assert picked["decay"] == high and picked["scores"][high] == (-1.75,)
    assert picked["means"][high] == {"digits_fd": 1.75}


def test_digits_binds_its_constant_adam_rate_and_cifar10_its_linear_decay():
    config = search.draw("gradient_penalty", 0)
    spec = tune.TuneSpec(("gradient_penalty",), ("digits", "cifar10"))
    digits = spec.search_bindings("digits", "gradient_penalty", config, 100)
    lr = float(config["learning_rate"])
    assert f"critic/Adam.learning_rate = {lr!r}" in digits
    assert f"generator/Adam.learning_rate = {lr!r}" in digits
    assert not any("linear_decay" in b for b in digits)
    cifar = spec.search_bindings("cifar10", "gradient_penalty", config, 100)
    assert f"critic/linear_decay.initial_learning_rate = {lr!r}" in cifar
    assert not any(b.startswith("critic/Adam.learning_rate") for b in cifar)
    assert search.bindings("gradient_penalty", config, 100) == cifar  # the toy configs' as before


@pytest.mark.parametrize(
    "args, expected",
    [
        (("--dataset", "digits", "--metric", "nosuch"), "unknown metric 'nosuch'"),
        (("--dataset", "digits", "--metric", "toy"), "'toy' does not apply"),
        (("--dataset", "ring", "--metric", "digits"), "this study has none"),
    ],
)
def test_a_metric_tune_cannot_use_is_refused_in_one_line_before_training(tmp_path, args, expected):
    out = tmp_path / "never"
    result = invoke("tune", "--constraint", "gradient_penalty", *args, "--out", str(out))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


def test_fid_without_weights_and_a_metric_that_cannot_rank_are_refused_in_one_line(
    tmp_path,
    offline,  # noqa: F811
):
    out = tmp_path / "never"
    for args, expected in (
        (("--dataset", "cifar10"), MEMBER),  # cifar10's default scores need FID's graph
        (("--dataset", "digits", "--metric", "fid"), MEMBER),
    ):
        result = invoke("tune", "--constraint", "gradient_penalty", *args, "--out", str(out))
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


def test_a_first_metric_with_no_lower_is_better_value_is_refused():
    from lipgan.core.errors import ConfigError
    from lipgan.study import spec as study_spec

    registry = search._default_registry()
    with pytest.raises(ConfigError, match=r"'is' has no lower-is-better value.*digits, .*fid"):
        study_spec.check_ranked(("is", "fid"), ("cifar10",), registry)
    study_spec.check_ranked(("fid", "is"), ("cifar10",), registry)  # FID first: ranked by it


@pytest.mark.heavy
@pytest.mark.slow
def test_a_tiny_digits_tune_reports_its_scores_per_row_beside_the_reference_rows(tmp_path):
    out = tmp_path / "tuned"
    result = invoke(
        "tune", "--dataset", "digits", "--constraint", "gradient_penalty", "--configs", "2",
        "--search", "random", "--search-steps", "2", "--steps", "4", "--seeds", "1",
        "--eval-samples", "64", "--jobs", "1", "--quiet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads((out / "tune.json").read_text())
    searched = data["search"]["digits"]["gradient_penalty"]
    assert searched["key"] == "digits_fd" and len(searched["values"]) == 2
    chosen = json.loads((out / "chosen.json").read_text())[0]
    best = min(v for v in searched["values"] if v is not None)
    assert chosen["search_score"] == [-best]
    rows = data["final"]["digits"]
    for row in ("gradient_penalty", "gradient_penalty +EMA"):
        assert rows[row]["seeds"] == 1 and "digits_fd" in rows[row]["stats"]
    text = (out / "tune.md").read_text()
    assert "The search ranks by `digits_fd`" in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert "FD (digits)" in table[0] and "KID (digits)" in table[0]
    fd = rows["gradient_penalty"]["stats"]["digits_fd"][0]
    assert any(line.startswith("| gradient_penalty |") and f"{fd:.2f}" in line for line in table)
    assert any(line.startswith(f"| *{REAL}") for line in table)
    assert any(line.startswith(f"| *{NOISE}") for line in table)
    assert not (out / "tune.png").exists()  # the search figure is a point set's


def test_halving_s_section_names_the_ranked_value_of_an_image_data_set(tmp_path):
    spec = tune.TuneSpec(("gradient_penalty",), ("digits",), configs=2, search="halving", rungs=2)
    trials = [{"trial": 0, "mean_score": [-2.5], "results": []},
              {"trial": 1, "mean_score": [-4.0], "results": []}]  # fmt: skip
    record = {"rung": 0, "searches": [{"dataset": "digits", "constraint": "gradient_penalty",
                                       "steps": 10, "trials": trials, "promoted": [0]}]}  # fmt: skip
    halving._write_rung(tmp_path, 0, record)
    text = halving.section(tmp_path, spec)
    assert "promoted (config: mean digits_fd) |" in text
    assert "| digits | gradient_penalty | 1 | 10 | 0: 2.500 |" in text


def test_the_report_reads_a_trial_s_value_by_the_search_s_rule():
    from lipgan.study import tune_images

    assert tune_images.trial_value(_ok(fid=12.5), "fid") == 12.5
    assert tune_images.trial_value(_ok(fid=math.nan), "fid") is None
    assert tune_images.trial_value({"status": "failed", "metrics": {"fid": 1.0}}, "fid") is None
