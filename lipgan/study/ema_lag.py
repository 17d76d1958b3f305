"""Lag or averaging: why a generator EMA can score below the raw generator of the same run.

An EMA of the generator's weights with decay ``d``, started at iteration ``s`` (it follows the
weights until then: :meth:`lipgan.core.engine.WGAN.update_ema`), is at iteration ``t``

    ema(t) = d^n·w(s) + Σ_{k<n} (1 − d)·d^k·w(t − k),   n = t − s,

an average of weights that are :func:`mean_age` iterations old on average (``d/(1 − d)`` once
``n`` is large: 99 at 0.99, 999 at 0.999, 9,999 at 0.9999). Two explanations of an EMA scoring
below its raw generator predict different things (issue #41 item 4):

* **lag**: the average sits behind weights that are still improving. The EMA at ``t`` then scores
  like the raw generator about one mean age earlier (the *lag-matched gap*
  ``EMA(t) − raw(t − age)`` is about 0), the gap to ``raw(t)`` grows with the decay's age and
  shrinks where the raw curve is flat.
* **averaging**: averaged weights make a worse generator than the weights averaged (averaging
  weights is not averaging samples). The EMA then scores below the raw generator of every recent
  iteration: the lag-matched gap stays negative, at short ages and on flat curves too.

The lag-matched point is read off the raw curve by linear interpolation between its points
(every ``eval_every`` iterations). Under a learning rate that decays towards the end the weights
moved faster earlier, so ``raw(t − age)`` is a *later* (better, on a rising curve) point than the
one the average is equivalent to: the lag-matched gap then under-credits lag, and only a gap
below zero beyond that is evidence of averaging. :func:`rows` measures both gaps, and the raw
curve's rise over the last quarter, per study row and decay from the cells' curves (every EMA is
recorded: :data:`lipgan.study.curve.EMA_BY_DECAY`), as means over seeds with 95 % bootstrap
intervals (:func:`lipgan.study.intervals.bootstrap_interval`).

    python -m lipgan.study.ema_lag STUDY_DIR... [--out report.md]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from lipgan.study.curve import EMA_BY_DECAY, NO_EMA, decay_key, points, read
from lipgan.study.intervals import bootstrap_interval, fmt_interval
from lipgan.study.spec import row_parameters

#: The metric compared (PacGAN's high-quality fraction: the one the EMA sentence is about).
METRIC = "high_quality_fraction"


def mean_age(decay: float, n: int) -> float:
    """The mean age, in iterations, of the weights in an EMA ``n`` iterations after its start.

    The weight ``(1 − d)·d^k`` on ``w(t − k)`` for ``k < n`` and ``d^n`` on ``w(t − n)`` (the
    weights at the start, which the EMA copied): ``Σ_{k<n} k(1 − d)d^k + n·d^n``, which is
    ``d(1 − d^n)/(1 − d)``; 0 at ``n = 0`` and ``d/(1 − d)`` for a long run.
    """
    if not 0.0 <= decay < 1.0:
        raise ValueError(f"decay {decay} is outside [0, 1)")
    if n < 0:
        raise ValueError(f"n = {n} iterations since the start is negative")
    return decay * (1.0 - decay**n) / (1.0 - decay)


def raw_at(curve: list[dict], step: float) -> float:
    """The raw generator's metric at ``step`` by linear interpolation between the curve's points
    (the raw generator's keys are under :data:`NO_EMA` in a run that keeps an EMA)."""
    steps = np.array([p["step"] for p in curve], np.float64)
    values = np.array([p[NO_EMA][METRIC] for p in curve], np.float64)
    if not steps[0] <= step <= steps[-1]:
        raise ValueError(f"step {step} is outside the curve's {steps[0]:.0f}..{steps[-1]:.0f}")
    return float(np.interp(step, steps, values))


def ema_at(point: dict, decay: str) -> float:
    """One curve point's metric of the EMA at ``decay`` (a :func:`decay_key`)."""
    emas = point.get(EMA_BY_DECAY)
    if emas is None:  # a run with one EMA: the point's own keys are it
        return float(point[METRIC])
    return float(emas[decay][METRIC])


@dataclasses.dataclass(frozen=True)
class Seed:
    """One seed's numbers for one decay at its final curve point."""

    raw: float
    ema: float
    lagged_raw: float  # raw(t − age)
    quarter_rise: float  # raw(t) − raw(3t/4)


def seed_numbers(result: dict, curve: list[dict], decay: float) -> Seed:
    """The :class:`Seed` of one finished cell (its ``result.json`` and curve points)."""
    start = ema_start(result["cell"])
    last = curve[-1]
    t = int(last["step"])
    age = mean_age(decay, max(t - start, 0))
    return Seed(
        raw=float(last[NO_EMA][METRIC]),
        ema=ema_at(last, decay_key(decay)),
        lagged_raw=raw_at(curve, t - age),
        quarter_rise=float(last[NO_EMA][METRIC]) - raw_at(curve, 0.75 * t),
    )


def _bound(cell: dict, key: str) -> str | None:
    """The value a cell's run gives gin ``key``: the last of its row's parameters and then the
    study's ``--bind``s, the order :meth:`lipgan.study.spec.Cell.gin` passes them in; None when
    neither binds it."""
    value = None
    for binding in [*row_parameters(cell["constraint"]), *cell["bindings"]]:
        name, _, text = binding.partition("=")
        if name.strip() == key:
            value = text.strip()
    return value


def ema_start(cell: dict) -> int:
    """``train.ema_start`` of a cell (0, the engine's default, when unbound)."""
    return int(_bound(cell, "train.ema_start") or 0)


def ema_decays(cell: dict) -> list[float]:
    """``train.ema_decay`` of a cell as a list (``(0.999, 0.99)`` or ``0.999``; [] when unbound)."""
    text = _bound(cell, "train.ema_decay")
    if text is None:
        return []
    parsed = ast.literal_eval(text)
    return [float(d) for d in (parsed if isinstance(parsed, tuple | list) else [parsed])]


def cells(study_dir: Path) -> list[tuple[dict, list[dict]]]:
    """(result, curve points) of every finished cell under ``study_dir/runs``."""
    found = []
    for path in sorted(Path(study_dir).glob("runs/*/*/*/result.json")):
        result = json.loads(path.read_text())
        if result.get("status") == "ok":
            found.append((result, points(read(path.parent))))
    return found


def rows(study_dir: Path) -> list[dict]:
    """Per data set, row and decay: the seeds' :class:`Seed` numbers and their means with
    intervals, for every finished cell of the study in ``study_dir``."""
    grouped: dict[tuple, list[tuple[dict, list[dict]]]] = {}
    for result, curve in cells(study_dir):
        cell = result["cell"]
        grouped.setdefault((cell["dataset"], cell["constraint"], cell["steps"]), []).append(
            (result, curve)
        )
    out = []
    for (dataset, constraint, steps), runs in grouped.items():
        decays = ema_decays(runs[0][0]["cell"])
        start = ema_start(runs[0][0]["cell"])
        for decay in decays:
            seeds = [seed_numbers(result, curve, decay) for result, curve in runs]
            out.append(
                {
                    "dataset": dataset,
                    "row": constraint,
                    "steps": steps,
                    "start": start,
                    "decay": decay,
                    "age": mean_age(decay, max(steps - start, 0)),
                    "seeds": seeds,
                }
            )
    return out


def _mean_interval(values) -> str:
    values = [100.0 * v for v in values]
    return f"{np.mean(values):+.1f} {fmt_interval(bootstrap_interval(values), 1.0, 1)}"


def table(study_rows: list[dict]) -> str:
    """A markdown table of :func:`rows`: high quality in percent points, means over seeds."""
    lines = [
        "| data | row | iterations | EMA from | decay | mean age | seeds | raw HQ % | EMA HQ % "
        "| EMA − raw [95 %] | EMA − raw one age earlier [95 %] | raw rise over the last "
        "quarter [95 %] |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in study_rows:
        s = r["seeds"]
        lines.append(
            f"| {r['dataset']} | {r['row']} | {r['steps']:,} | {r['start']:,} | {r['decay']} "
            f"| {r['age']:,.0f} | {len(s)} | {100 * np.mean([x.raw for x in s]):.1f} "
            f"| {100 * np.mean([x.ema for x in s]):.1f} "
            f"| {_mean_interval([x.ema - x.raw for x in s])} "
            f"| {_mean_interval([x.ema - x.lagged_raw for x in s])} "
            f"| {_mean_interval([x.quarter_rise for x in s])} |"
        )
    return "\n".join(lines) + "\n"


HEADER = """# EMA: lag or averaging

`python -m lipgan.study.ema_lag {dirs}`. High quality (PacGAN's protocol) in percent and
percent points at each cell's last curve point; means over seeds with 95 % percentile-bootstrap
intervals of the mean. *Mean age*: the average age in iterations of the weights an EMA holds
there; *one age earlier*: the raw generator's curve read at that many iterations before (linear
between its points); see lipgan/study/ema_lag.py for what each explanation predicts.

"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lipgan.study.ema_lag", description=__doc__.splitlines()[0]
    )
    parser.add_argument("study_dirs", nargs="+", type=Path, metavar="STUDY_DIR")
    parser.add_argument("--out", type=Path, help="write the tables here (default: stdout)")
    args = parser.parse_args(argv)
    dirs = " ".join(str(d) for d in args.study_dirs)
    text = HEADER.format(dirs=dirs) + "\n".join(table(rows(d)) for d in args.study_dirs)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
