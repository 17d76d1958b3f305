"""The EMA lag analysis (lipgan.study.ema_lag) on numbers known in closed form."""

import json

import numpy as np
import pytest

from lipgan.study import ema_lag


@pytest.mark.parametrize("decay,n", [(0.9, 7), (0.99, 250), (0.999, 3000), (0.5, 1)])
def test_mean_age_is_the_weighted_age_of_the_averaged_weights(decay, n):
    # ema(t) = d^n·w(t−n) + Σ_{k<n} (1−d)·d^k·w(t−k): the ages k weighted as the EMA weights them
    k = np.arange(n)
    weights = np.append((1 - decay) * decay**k, decay**n)
    ages = np.append(k, n)
    assert weights.sum() == pytest.approx(1.0)
    assert ema_lag.mean_age(decay, n) == pytest.approx(float((weights * ages).sum()), rel=1e-9)


def test_mean_age_limits():
    assert ema_lag.mean_age(0.999, 0) == 0.0
    assert ema_lag.mean_age(0.999, 10**6) == pytest.approx(999.0)
    assert ema_lag.mean_age(0.99, 10**5) == pytest.approx(99.0)
    with pytest.raises(ValueError, match="outside"):
        ema_lag.mean_age(1.0, 5)


def _point(step, raw, emas):
    first = next(iter(emas.values()))
    return {
        "step": step,
        "seconds": 0.0,
        "high_quality_fraction": first,
        "no_ema": {"high_quality_fraction": raw},
        "ema_by_decay": {k: {"high_quality_fraction": v} for k, v in emas.items()},
    }


def _write_cell(run_dir, seed, curve, constraint, bindings, steps=4000):
    run_dir.mkdir(parents=True)
    cell = {"dataset": "grid", "constraint": constraint, "seed": seed, "steps": steps}
    cell["bindings"] = bindings
    (run_dir / "result.json").write_text(json.dumps({"status": "ok", "cell": cell}))
    (run_dir / "curve.jsonl").write_text("".join(json.dumps(p) + "\n" for p in curve))


def test_a_pure_lag_has_no_lag_matched_gap_and_an_averaging_loss_keeps_one(tmp_path):
    # Raw quality rises linearly; the 0.99 EMA is exactly the raw curve one mean age behind (pure
    # lag), the 0.999 EMA that minus 0.1 (lag and a loss of its own).
    steps, start = 4000, 1000
    age99 = ema_lag.mean_age(0.99, steps - start)
    age999 = ema_lag.mean_age(0.999, steps - start)

    def raw(t):
        return t / 8000

    for seed in range(3):
        curve = [
            _point(t, raw(t), {"0.999": raw(max(t - age999, 0)) - 0.1, "0.99": raw(t - age99)})
            for t in range(0, steps + 1, 250)
        ]
        _write_cell(
            tmp_path / f"runs/grid/gp/seed{seed}",
            seed,
            curve,
            "gradient_penalty:train.ema_start=1000",
            ["train.ema_decay = (0.999, 0.99)"],
        )
    rows = {r["decay"]: r for r in ema_lag.rows(tmp_path)}
    assert set(rows) == {0.999, 0.99}
    for decay, age, loss in ((0.99, age99, 0.0), (0.999, age999, 0.1)):
        row = rows[decay]
        assert row["start"] == start and row["age"] == pytest.approx(age)
        for seed in row["seeds"]:
            assert seed.ema - seed.raw == pytest.approx(-age / 8000 - loss)
            assert seed.ema - seed.lagged_raw == pytest.approx(-loss)
            assert seed.quarter_rise == pytest.approx(1000 / 8000)
    table = ema_lag.table(ema_lag.rows(tmp_path))
    assert "| 0.99 | 99 | 3 |" in table and "-10.0 [-10.0, -10.0]" in table


def test_a_study_binding_wins_over_the_rows_as_in_the_run():
    # Cell.gin passes the row's bindings first and --bind's after: gin keeps the last.
    cell = {
        "constraint": "gradient_penalty:train.ema_start=4000",
        "bindings": ["train.ema_start = 1000", "train.ema_decay = 0.999"],
    }
    assert ema_lag.ema_start(cell) == 1000
    assert ema_lag.ema_decays(cell) == [0.999]
    assert ema_lag.ema_start({"constraint": "gradient_penalty", "bindings": []}) == 0
    assert ema_lag.ema_decays({"constraint": "r1", "bindings": []}) == []


def test_the_command_writes_the_table(tmp_path):
    curve = [_point(t, t / 4000, {"0.999": t / 5000}) for t in range(0, 4001, 1000)]
    _write_cell(tmp_path / "s/runs/grid/r1/seed0", 0, curve, "r1", ["train.ema_decay = 0.999"])
    out = tmp_path / "lag.md"
    assert ema_lag.main([str(tmp_path / "s"), "--out", str(out)]) == 0
    text = out.read_text()
    assert (
        text.startswith("# EMA: lag or averaging")
        and "| data | row |" in text
        and "| grid | r1 | 4,000 | 0 | 0.999 |" in text
    )
