"""The iterations a row needs to be at PacGAN4's means: its curve checked point by point.

``python -m lipgan.study.first_at_means STUDY_DIR...`` prints, per row (data set and SPEC) and per
generator the cells' curves hold (the run's default, its raw generator, each EMA decay), the first
curve point where the row is *at PacGAN4's means*: :func:`lipgan.study.pacgan4.check` over the
seeds' values at that point, the interval's lower end (upper for the reverse KL) at or beyond all
three of PacGAN4's means (Lin et al. 2018, Table 1). It is the strict rule of the reports' final
column applied to every evaluation, not the relaxed per-seed first crossing
(:data:`lipgan.study.summary.THRESHOLDS`).

It answers issue #41's fallback target ("if no row gets there within 4,000 iterations, the
iterations each needs, up to 16,000"), and reads on the schedule the cells trained with. A run
whose learning-rate decay ends at 16,000 iterations is at iteration t not where a t-iteration run
would end, so the answer is the iteration on that schedule. A point counts only when every
finished seed of the row has it.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from lipgan.study import pacgan4
from lipgan.study.curve import EMA_BY_DECAY, NO_EMA, points

#: The generators a curve point may hold: the run's default at its top level, the raw generator
#: under :data:`NO_EMA` when the run keeps an EMA, and each decay's EMA under :data:`EMA_BY_DECAY`.
DEFAULT, RAW = "default", "raw"


def curve_points(result: dict, generator: str = DEFAULT) -> dict[int, dict]:
    """``{step: the three metrics}`` of one finished cell's curve for ``generator`` (``default``,
    ``raw`` or an EMA decay as the curve writes it, e.g. ``'0.999'``); points that lack one are
    left out, and so is a failed cell's whole curve."""
    if result.get("status") != "ok":
        return {}
    keys = [key for key, *_ in pacgan4.METRICS]
    found = {}
    for point in points(result.get("curve") or []):
        if generator == DEFAULT:
            values = point
        elif generator == RAW:
            values = point.get(NO_EMA)
        else:
            values = (point.get(EMA_BY_DECAY) or {}).get(generator)
        if values and all(values.get(k) is not None for k in keys):
            found[int(point["step"])] = {k: float(values[k]) for k in keys}
    return found


def generators(results: list[dict]) -> list[str]:
    """The generators every one of ``results``' curves holds, the default first."""
    found = [DEFAULT]
    curve = next((points(r["curve"]) for r in results if r.get("curve")), [])
    point = curve[0] if curve else {}
    if point.get(NO_EMA):
        found.append(RAW)
    found += sorted(point.get(EMA_BY_DECAY) or {}, key=float)
    return found


def first_at_means(results: list[dict], means: dict, generator: str = DEFAULT) -> dict:
    """The first point of the row's curves at ``means``, and whether the row stays there.

    Returns ``{'step', 'check', 'last_step', 'last_check', 'stays_from', 'points_at',
    'points_from'}``: ``step`` is the first point at the means (None when no point is);
    ``last_*`` the row at its last common point, to show how near it came; ``stays_from`` the
    first point from which every later point is at the means too (None when the last is not): a
    first point can be one lucky evaluation, so a reader needs both; ``points_at`` of the
    ``points_from`` points from ``step`` on are at the means. Steps are those that every seed's
    curve has."""
    found = {"step": None, "check": None, "last_step": None, "last_check": None}
    found.update(stays_from=None, points_at=0, points_from=0)
    curves = [c for c in (curve_points(r, generator) for r in results) if c]
    if len(curves) < 2:
        return found
    steps = sorted(set.intersection(*(set(c) for c in curves)))
    for step in steps:
        check = pacgan4.check([c[step] for c in curves], means)
        found["last_step"], found["last_check"] = step, check
        if found["step"] is None and check["at_means"]:
            found["step"], found["check"] = step, check
        if found["step"] is not None:
            found["points_from"] += 1
            found["points_at"] += bool(check["at_means"])
        if not check["at_means"]:
            found["stays_from"] = None
        elif found["stays_from"] is None:
            found["stays_from"] = step
    return found


def rows_of(study_dir: Path) -> dict[tuple[str, str, int], list[dict]]:
    """``{(data set, SPEC, iterations): finished results}`` of the cells under ``study_dir``'s
    ``runs/`` (a tuned study's replicates too, ``final/runs``; its search trials are left out)."""
    rows: dict[tuple[str, str, int], list[dict]] = defaultdict(list)
    for path in sorted(Path(study_dir).glob("**/runs/**/result.json")):
        result = json.loads(path.read_text())
        cell = result.get("cell") or {}
        if cell.get("trial") is None and cell.get("dataset") in pacgan4.MEANS:
            rows[(cell["dataset"], cell["constraint"], int(cell["steps"]))].append(result)
    return dict(rows)


def _line(label: str, found: dict) -> str:
    last = found["last_check"]
    if last is None:
        return f"  {label}: fewer than two seeds with a curve"
    if found["step"] is not None:
        stays = found["stays_from"]
        there = (
            f"there at every point from iteration {stays:,} to the last"
            if stays is not None
            else "not at the last point"
        )
        return (
            f"  {label}: first at PacGAN4's means at iteration {found['step']:,}; at them at "
            f"{found['points_at']} of the {found['points_from']} points from there; {there} "
            f"({found['last_step']:,})"
        )
    titles = {key: title for key, title, *_ in pacgan4.METRICS}
    missed = ", ".join(titles[k] for k in last["missed"])
    return (
        f"  {label}: not at any point up to iteration {found['last_step']:,} "
        f"(at the last, {last['seeds']} seeds, misses on {missed})"
    )


def report(study_dirs: list[Path]) -> list[str]:
    """Lines: per study dir, row and generator, :func:`first_at_means`."""
    lines = []
    for study_dir in study_dirs:
        for (dataset, spec, steps), results in sorted(rows_of(study_dir).items()):
            lines.append(
                f"{study_dir}: {dataset} {spec}, {steps:,} iterations, {len(results)} seeds"
            )
            lines += _row_lines(dataset, results)
    return lines


def _row_lines(dataset: str, results: list[dict]) -> list[str]:
    """One line per generator of the row's curves."""
    lines = []
    for generator in generators(results):
        label = generator if generator in (DEFAULT, RAW) else f"EMA {generator}"
        found = first_at_means(results, pacgan4.MEANS[dataset], generator)
        lines.append(_line(label, found))
    return lines


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m lipgan.study.first_at_means STUDY_DIR...", file=sys.stderr)
        return 2
    missing = [d for d in argv if not Path(d).is_dir()]
    if missing:
        print(f"error: not a study dir: {missing[0]}", file=sys.stderr)
        return 2
    print("\n".join(report([Path(d) for d in argv])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
