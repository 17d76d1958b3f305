"""The study's numbers: each cell's values, each row's statistics over seeds, and the verdicts on
them (collapsed, target reached, still rising, beats uniform noise). The report's tables
(:mod:`lipgan.study.tables`), figure (:mod:`lipgan.study.figure`) and JSON, and the tuned study's
report, all compute from here, so a number means the same in each.

Metrics are read generically from the dict that :func:`lipgan.evaluation.evaluate` returns
(``eval/`` prefix removed); :data:`COLUMNS` is the one table mapping its keys to report columns. A
key a run does not report shows as "–".

A cell is **collapsed** when fewer than half of the modes are captured, or when the reverse KL of
its mode histogram exceeds 1.0 (a sampler on one of 8 modes scores log 8 ≈ 2.08; one covering 4 of
8 evenly scores log 2 ≈ 0.69). For digits the same rule applies to the classes.
"""

from __future__ import annotations

import math

import numpy as np

from lipgan.study import pacgan4
from lipgan.study.intervals import bootstrap_interval

#: (metric key in the evaluation dict, column title, scale for display, digits). One place to edit.
COLUMNS = [
    ("modes_covered", "modes captured", 1.0, 1),
    ("high_quality_fraction", "high quality %", 100.0, 1),
    ("reverse_kl", "reverse KL", 1.0, 2),
    ("w1", "W1", 1.0, 3),
    ("w1_floor", "W1 floor (real vs real)", 1.0, 3),
    ("critic_gap_ratio", "critic gap / W1", 1.0, 2),
    ("digits_fd", "FD (digits)", 1.0, 2),
    ("digits_kid", "KID (digits)", 1.0, 4),
    ("classes_covered", "classes covered", 1.0, 1),
    ("class_reverse_kl", "class reverse KL", 1.0, 2),
    # On FID's own 2015 Inception network (plugins/metrics.py: fid, is, kid, prdc).
    ("fid", "FID", 1.0, 2),
    ("inception_score", "IS", 1.0, 2),
    ("kid_inception", "KID", 1.0, 4),
    ("precision", "precision", 1.0, 3),
    ("recall", "recall", 1.0, 3),
    ("density", "density", 1.0, 3),
    ("coverage", "coverage", 1.0, 3),
    ("seconds_per_iteration", "ms / iteration", 1000.0, 2),
]

#: Keys of an image metric that are no score of their own: the spread within one evaluation
#: (the rows show the spread over seeds) and the count a coverage is out of.
NOT_SCORES = ("num_classes", "num_modes", "n")


def extra_columns(references: dict | None) -> list[tuple]:
    """Columns for the image scores a study records that :data:`COLUMNS` does not know (a
    plugin's metric chosen with ``--metric``): every numeric key of the image data sets'
    reference rows (which hold exactly the study's image metrics,
    :mod:`lipgan.study.image_references`), titled by its key, in the order first seen."""
    known = {key for key, *_ in COLUMNS}
    keys: dict = {}
    for ref in (references or {}).values():
        if not (ref or {}).get("image"):
            continue
        for row in ref["rows"].values():
            for cell in row["cells"]:
                for key, value in cell.items():
                    if (
                        key not in known
                        and key not in NOT_SCORES
                        and not key.endswith("_std")
                        and isinstance(value, (int, float))
                    ):
                        keys.setdefault(key, (key, key, 1.0, 4))
    return list(keys.values())


#: Stated thresholds for a curve's first crossing, its "iterations / seconds to threshold": the
#: first curve point of a seed meeting all three. Near PacGAN4's level but relaxed (high quality
#: 95 % for 95.9 %; grid 93 % for 93.6 %, reverse KL 0.05 for 0.04), so *not* PacGAN4's means:
#: those are :data:`lipgan.study.pacgan4.MEANS`, checked at the final evaluation with intervals.
#: Modes are whole numbers per seed, so 7.8 and 24.8 mean every mode.
THRESHOLDS = {
    "ring": {"modes_covered": 7.8, "high_quality_fraction": 0.95, "reverse_kl": 0.07},
    "grid": {"modes_covered": 24.8, "high_quality_fraction": 0.93, "reverse_kl": 0.05},
}

COLLAPSE_KL = 1.0


def cell_values(result: dict) -> dict:
    """The cell's numbers under the keys of :data:`COLUMNS` (metrics plus timing).

    ``critic_gap_ratio`` is the critic's own estimate (mean D(real) − mean D(fake) on the
    evaluation samples) over the exact W1: ≤ 1 for a 1-Lipschitz critic (Kantorovich–Rubinstein),
    so a ratio above 1 says the critic is not 1-Lipschitz and its gap is no W1 estimate.
    """
    values = dict(result.get("metrics") or {})
    if result.get("seconds_per_iteration") is not None:
        values["seconds_per_iteration"] = result["seconds_per_iteration"]
    gap, w1 = values.get("critic_wasserstein"), values.get("w1")
    if gap is not None and w1:
        values["critic_gap_ratio"] = gap / w1
    return values


def meets(values: dict, target: dict) -> bool:
    """Whether ``values`` reach every threshold of ``target`` (reverse KL: at most)."""
    return (
        values.get("modes_covered", -1) >= target["modes_covered"]
        and values.get("high_quality_fraction", -1) >= target["high_quality_fraction"]
        and values.get("reverse_kl", math.inf) <= target["reverse_kl"]
    )


def to_target(result: dict, target: dict) -> tuple[int, float] | None:
    """(iteration, training seconds) of the first curve point meeting ``target``; None if none."""
    for point in result.get("curve") or ():
        if meets(point, target):
            return point["step"], point["seconds"]
    return None


def late_change(result: dict, key: str = "high_quality_fraction") -> float | None:
    """How much ``key`` moved over the last quarter of the budget: the mean of the curve points in
    the last quarter (step > ¾ of the cell's steps) minus the mean of those in the third quarter
    (½ < step ≤ ¾). None without points in both. A target missed at the end is then told apart
    as *still rising* (the budget ran out) or *flat* (more iterations of this config will not
    get there), as a study whose target is missed must show; averaging a quarter's points
    keeps one noisy evaluation from deciding it."""
    steps = result["cell"]["steps"]
    third = [p[key] for p in result.get("curve") or () if steps / 2 < p["step"] <= 3 * steps / 4]
    last = [p[key] for p in result.get("curve") or () if p["step"] > 3 * steps / 4]
    values = third + last
    if not third or not last or not all(math.isfinite(v) for v in values):
        return None
    return float(np.mean(last) - np.mean(third))


def censored_median(values: list[float], total: int) -> float:
    """The median over ``total`` seeds of which only ``values`` got there (the others count as
    never, +inf): an honest median of times that are censored at the budget."""
    xs = sorted(values) + [math.inf] * (total - len(values))
    if not xs:
        return math.inf
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def is_collapsed(values: dict) -> bool | None:
    """See the module docstring; None when the cell has no mode or class metrics."""
    verdict = None
    for covered, total, kl in [
        ("modes_covered", "num_modes", "reverse_kl"),
        ("classes_covered", "num_classes", "class_reverse_kl"),
    ]:
        if covered in values and total in values:
            verdict = bool(verdict) or values[covered] < values[total] / 2
        if kl in values and values[kl] is not None:
            verdict = bool(verdict) or values[kl] > COLLAPSE_KL
    return verdict


def threshold_text(dataset: str) -> str:
    """A data set's :data:`THRESHOLDS` in words, for a column header."""
    t = THRESHOLDS[dataset]
    return (
        f"modes ≥ {t['modes_covered']}, HQ ≥ {t['high_quality_fraction']:.0%}, "
        f"rKL ≤ {t['reverse_kl']}"
    )


def sd_of(stat) -> float:
    """The standard deviation over seeds behind a :func:`mean_se` tuple (s.e. × √n finite)."""
    mean, se, infinite, count = stat
    return se * math.sqrt(count - infinite) if not math.isnan(se) else math.nan


def mean_se(xs) -> tuple[float, float, int, int] | None:
    """(mean, standard error, infinite count, count): mean ± s.e. over the finite values, and how
    many of all values were infinite (a reverse KL with no high-quality sample), so that
    [inf, inf, 0.05] shows as "0.05 [∞ in 2/3]" and never as a plain 0.05. None when empty."""
    values = [float(x) for x in xs if x is not None and not math.isnan(float(x))]
    if not values:
        return None
    finite = [x for x in values if math.isfinite(x)]
    infinite = len(values) - len(finite)
    if not finite:
        return math.inf, math.nan, infinite, len(values)
    se = float(np.std(finite, ddof=1) / math.sqrt(len(finite))) if len(finite) > 1 else math.nan
    return float(np.mean(finite)), se, infinite, len(values)


def summarize(results: list[dict], last_k: int = pacgan4.LAST_K, extra=()) -> dict:
    """{data set: {constraint: {'stats': {column key: mean_se}, 'seeds', 'failed', 'collapsed',
    'late_change' (mean_se) and 'late_interval' (bootstrap), where the data set has thresholds:
    'to_target', and where PacGAN4 reported it: 'pacgan4' (:func:`lipgan.study.pacgan4.check`
    of each seed's last ``last_k`` evaluations)}}}; ``extra``: columns beside :data:`COLUMNS`
    (:func:`extra_columns`)."""
    out: dict = {}
    for r in results:
        cell = r["cell"]
        row = out.setdefault(cell["dataset"], {}).setdefault(
            cell["constraint"],
            {"cells": [], "failed": 0, "collapsed": 0, "reached": [], "late": [], "pacgan4": []},
        )
        if r["status"] != "ok":
            row["failed"] += 1
            continue
        values = cell_values(r)
        row["cells"].append(values)
        row["collapsed"] += bool(is_collapsed(values))
        if cell["dataset"] in pacgan4.MEANS and (v := pacgan4.seed_values(r, last_k)):
            row["pacgan4"].append(v)
        target = THRESHOLDS.get(cell["dataset"])
        if target and r.get("curve"):
            row["curved"] = row.get("curved", 0) + 1
            if (hit := to_target(r, target)) is not None:
                row["reached"].append(hit)
        if (change := late_change(r)) is not None:
            row["late"].append(change)
    for dataset, rows in out.items():
        for row in rows.values():
            cells, reached, curved = row.pop("cells"), row.pop("reached"), row.pop("curved", 0)
            row["seeds"] = len(cells)
            row["stats"] = _stats(cells, extra)
            late = row.pop("late")
            row["late_change"] = mean_se(late)
            row["late_interval"] = bootstrap_interval(late)
            if seeds := row.pop("pacgan4"):
                row["pacgan4"] = pacgan4.check(seeds, pacgan4.MEANS[dataset])
            if curved:
                row["to_target"] = {
                    "iterations": censored_median([h[0] for h in reached], curved),
                    "seconds": censored_median([h[1] for h in reached], curved),
                    "reached": len(reached),
                    "of": curved,
                }
    return out


def _stats(cells: list[dict], extra=()) -> dict:
    return {
        key: stat
        for key, *_ in [*COLUMNS, *extra]
        if (stat := mean_se([c.get(key) for c in cells])) is not None
    }


#: The metrics on which a row must beat uniform noise on the bounding box (higher, higher, lower,
#: lower): PacGAN's three mode metrics and the exact W1, the distance the tuned study chooses by.
#: A row nearer the modes than noise but farther from the data in W1 has not learned the data
#: (issue #42: a --quick study's gradient penalty, W1 0.606 against uniform's 0.511, said yes).
BEAT_KEYS = (
    ("modes_covered", 1),
    ("high_quality_fraction", 1),
    ("reverse_kl", -1),
    ("w1", -1),
)
#: How a report names :data:`BEAT_KEYS`, in their order.
BEAT_NAMES = {
    "modes_covered": "modes",
    "high_quality_fraction": "HQ",
    "reverse_kl": "rKL",
    "w1": "W1",
}
#: The words a report's *beats uniform* column and figure use for what it compares.
BEATS_WHAT = "modes, HQ, reverse KL and W1"


def uniform_reference(ref_stats: dict) -> dict:
    """What a row must beat, from a data set's reference rows' stats (``{row: {key: mean_se}}``):
    uniform noise on the bounding box in expectation (:data:`lipgan.study.references.
    BOX_EXPECTED`, many draws) on the mode metrics, and the box's W1 over the study's seeds (the
    expected row has no W1: an exact W1 costs about a second a draw). {} without a box row."""
    from lipgan.study.references import BOX, BOX_EXPECTED

    box = ref_stats.get(BOX)
    if box is None:
        return {}
    out = dict(ref_stats.get(BOX_EXPECTED) or box)
    if "w1" in box:
        out.setdefault("w1", box["w1"])
    return out


def beats(stats: dict, reference: dict) -> list[str]:
    """The metrics (of :data:`BEAT_KEYS`) on which ``stats`` does *not* beat ``reference``'s means;
    [] when it beats it on all four (an infinite reverse KL in any seed never beats). A metric
    either side lacks is not compared."""
    failed = []
    for key, sign in BEAT_KEYS:
        mine, theirs = stats.get(key), reference.get(key)
        if mine is None or theirs is None:
            continue
        value = math.inf if key == "reverse_kl" and mine[2] else mine[0]
        if not sign * value > sign * theirs[0]:
            failed.append(key)
    return failed


#: A tuned study's row of its replicates' generator EMA (:mod:`lipgan.study.tune_report`).
EMA_SUFFIX = " +EMA"


def ema_start_of(cell: dict) -> int | None:
    """The ``train.ema_start`` a cell binds, None when it binds none."""
    for binding in cell.get("bindings") or ():
        key, _, value = binding.partition("=")
        if key.strip() == "train.ema_start":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def ema_never_averaged(results: list[dict]) -> tuple[int, int] | None:
    """(steps, ema_start) when every run of a ``SPEC +EMA`` row ended before its EMA began to
    average (steps ≤ ema_start: the copy only followed the weights), so the row equals the raw
    row of the same runs by construction; None otherwise."""
    found = set()
    for r in results:
        if not r["cell"]["constraint"].endswith(EMA_SUFFIX):
            return None
        start = ema_start_of(r["cell"])
        if start is None or r["cell"]["steps"] > start:
            return None
        found.add((r["cell"]["steps"], start))
    return max(found) if found else None


def ema_note(never: tuple[int, int]) -> str:
    """Why a ``+EMA`` row equals its raw row, in a table's or a figure's words."""
    steps, start = never
    return (
        f"= raw: the runs ended at {steps:,} iterations, before the EMA starts averaging "
        f"(ema_start {start:,})"
    )


def _steps_text(results: list[dict], spec: dict) -> str:
    """The iterations per run, from the cells (a spec's ``steps`` may be None: each config's)."""
    steps = sorted({r["cell"]["steps"] for r in results})
    if not steps:
        return str(spec.get("steps"))
    return " / ".join(f"{s:,}" for s in steps)
