"""*At PacGAN4's means*: a row's seeds against PacGAN4's published means on all three metrics.

PacGAN4 (Lin et al., NeurIPS 2018, Table 1, 2D-ring and 2D-grid: mean over 10 trials of 2,500
samples each) scores ring 7.8 modes / 95.9 % high quality / reverse KL 0.07 and grid 24.8 /
93.6 % / 0.04 (:data:`MEANS`; the same numbers as :data:`lipgan.study.tables.PACGAN`).

Each seed of a row is measured at its final evaluation (:data:`LAST_K` = 1; with k > 1, the mean
of the cell's last k curve points, whose last point is the final evaluation on these three
metrics, :mod:`lipgan.study.curve`). Per row, over its seeds (:func:`check`):

* per metric: the mean, its spread (SD) and its 95 % bootstrap interval (:mod:`intervals`);
* *seeds at the means*: how many seeds reach all three means by themselves (modes and high
  quality at or above, reverse KL at or below);
* *at PacGAN4's means*: yes when, on every metric, the interval's lower end (upper end for the
  reverse KL, lower is better) is at or beyond PacGAN4's mean; otherwise the metrics that miss.
  A one-seed row has no interval and gets no verdict.

This is the strict reading of "PacGAN4's level". The relaxed per-seed first crossing of a curve
(:data:`lipgan.study.summary.THRESHOLDS`) is reported apart, as iterations to a stated threshold.
"""

from __future__ import annotations

import math

from lipgan.study.intervals import (
    RESAMPLES,
    bootstrap_interval,
    fmt_interval,
    mean_of,
    spread,
)

#: Lin et al. 2018, Table 1, PacGAN4's means (high quality as a fraction, as lipgan stores it).
MEANS = {
    "ring": {"modes_covered": 7.8, "high_quality_fraction": 0.959, "reverse_kl": 0.07},
    "grid": {"modes_covered": 24.8, "high_quality_fraction": 0.936, "reverse_kl": 0.04},
}

#: (key, title, +1 higher is better / -1 lower is better, display scale, digits).
METRICS = (
    ("modes_covered", "modes", 1, 1.0, 1),
    ("high_quality_fraction", "high quality %", 1, 100.0, 1),
    ("reverse_kl", "reverse KL", -1, 1.0, 3),
)

#: Evaluations averaged per seed: 1, the final one.
LAST_K = 1


def seed_values(result: dict, last_k: int = LAST_K) -> dict | None:
    """The three metrics of one finished cell: its final evaluation (``last_k`` 1), or the mean
    of its curve's last ``last_k`` points; None for a failed cell or one that lacks them."""
    if result.get("status") != "ok":
        return None
    keys = [key for key, *_ in METRICS]
    if last_k == 1:
        metrics = result.get("metrics") or {}
        found = {k: metrics.get(k) for k in keys}
    else:
        points = [p for p in result.get("curve") or () if "mark" not in p][-last_k:]
        if len(points) < last_k:
            return None
        found = {k: mean_of([p.get(k, math.nan) for p in points]) for k in keys}
    if any(v is None or math.isnan(float(v)) for v in found.values()):
        return None
    return {k: float(v) for k, v in found.items()}


def reaches(values: dict, means: dict) -> bool:
    """Whether one seed's ``values`` reach every one of ``means``."""
    return all(sign * values[key] >= sign * means[key] for key, _, sign, *_ in METRICS)


def check(seeds: list[dict], means: dict) -> dict:
    """A row's seeds (:func:`seed_values`) against ``means``: ``{'seeds', 'reached',
    'metrics': {key: {'mean', 'sd', 'interval'}}, 'at_means' (True/False, None for one seed),
    'missed': [keys whose interval end misses]}``."""
    metrics, missed = {}, []
    for key, _, sign, *_ in METRICS:
        values = [s[key] for s in seeds]
        interval = bootstrap_interval(values)
        metrics[key] = {"mean": mean_of(values), "sd": spread(values), "interval": interval}
        if interval is not None:
            end = interval[0] if sign > 0 else interval[1]
            if not sign * end >= sign * means[key]:
                missed.append(key)
    one_seed = len(seeds) < 2
    return {
        "seeds": len(seeds),
        "reached": sum(reaches(s, means) for s in seeds),
        "metrics": metrics,
        "at_means": None if one_seed else not missed,
        "missed": missed,
    }


def means_text(dataset: str) -> str:
    """PacGAN4's means on ``dataset`` in words, after their source."""
    m = MEANS[dataset]
    return (
        f"Lin et al. 2018, Table 1, {dataset}: {m['modes_covered']} modes, "
        f"{m['high_quality_fraction'] * 100:.1f} % high quality, reverse KL {m['reverse_kl']}"
    )


def protocol(dataset: str, last_k: int = LAST_K) -> str:
    """The rule, stated once above a table of :func:`table_lines`."""
    at = (
        "at its final evaluation (k = 1)"
        if last_k == 1
        else f"as the mean of its last {last_k} curve points (k = {last_k})"
    )
    return (
        f"**At PacGAN4's means** ({means_text(dataset)}). Each seed is measured {at}. Per row: "
        f"mean and 95 % percentile-bootstrap interval of the mean over the row's seeds "
        f"({RESAMPLES:,} resamples, fixed RNG seed); *seeds at the means*: seeds whose own three "
        "values all reach PacGAN4's means; *at PacGAN4's means*: **yes** when the interval's "
        "lower end (upper end for the reverse KL) reaches PacGAN4's mean on all three, else the "
        "metrics that miss. With 5 seeds a percentile interval never leaves the seeds' own range "
        "and covers the true mean less often than 95 %: a **yes** is the least to ask, not proof."
    )


def verdict_text(found: dict) -> str:
    if found["at_means"] is None:
        return "one seed: no interval, no verdict"
    if found["at_means"]:
        return "**yes**"
    titles = {key: title for key, title, *_ in METRICS}
    return "no (" + ", ".join(titles[k] for k in found["missed"]) + ")"


def cell_text(stat: dict, scale: float, digits: int) -> str:
    """``mean [low, high]``; the mean alone for one seed (the verdict column says why)."""
    mean = "∞" if math.isinf(stat["mean"]) else f"{stat['mean'] * scale:.{digits}f}"
    if stat["interval"] is None:
        return mean
    return f"{mean} {fmt_interval(stat['interval'], scale, digits)}"


def table_lines(dataset: str, rows: dict, last_k: int = LAST_K) -> list[str]:
    """Markdown: the rule and one line per row of ``rows`` (``{label: check(...)}``); [] for a
    data set without PacGAN4 means or without rows."""
    if dataset not in MEANS or not rows:
        return []
    head = [
        "row",
        *[f"{title}: mean [95 % interval]" for _, title, *_ in METRICS],
        "seeds at the means",
        "at PacGAN4's means (interval end)",
    ]
    lines = [protocol(dataset, last_k), "", "| " + " | ".join(head) + " |"]
    lines.append("|" + "---|" * len(head))
    for label, found in rows.items():
        cols = [cell_text(found["metrics"][k], s, d) for k, _, _, s, d in METRICS]
        cols += [f"{found['reached']}/{found['seeds']}", verdict_text(found)]
        lines.append(f"| {label} | " + " | ".join(cols) + " |")
    return lines
