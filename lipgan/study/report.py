"""The study's report: ``study.json`` (every cell), ``study.md`` (tables), ``study.png`` (figure).

Metrics are read generically from the dict that :func:`lipgan.evaluation.evaluate` returns
(``eval/`` prefix removed); :data:`COLUMNS` is the one table mapping its keys to report columns. A
key a run does not report shows as "–".

A cell is **collapsed** when fewer than half of the modes are captured, or when the reverse KL of
its mode histogram exceeds 1.0 (a sampler on one of 8 modes scores log 8 ≈ 2.08; one covering 4 of
8 evenly scores log 2 ≈ 0.69). For digits the same rule applies to the classes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lipgan.study.spec import dumps

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
    ("seconds_per_iteration", "ms / iteration", 1000.0, 2),
]

#: PacGAN (Lin et al., NeurIPS 2018) Table 1: modes / high-quality % / reverse KL, mean ± s.e.
#: over 10 trials, 2,500 samples. Printed beside lipgan's rows, never as the same training.
PACGAN = {
    "ring": [
        ("GAN", "6.3±0.5", "98.2±0.2", "0.45±0.09"),
        ("PacGAN2", "7.9±0.1", "95.6±2.0", "0.07±0.03"),
        ("PacGAN4", "7.8±0.1", "95.9±1.4", "0.07±0.02"),
    ],
    "grid": [
        ("GAN", "17.3±0.8", "94.8±0.7", "0.70±0.07"),
        ("PacGAN2", "23.8±0.7", "91.3±0.8", "0.13±0.04"),
        ("PacGAN4", "24.8±0.2", "93.6±0.6", "0.04±0.01"),
    ],
}
#: PacGAN's training for those rows (fjxmlzn/PacGAN, synthetic_data_experiments/2DRing_GAN&PacGAN
#: and 2DGrid_GAN&PacGAN config.py: num_epoch 400 over num_sample 100,000 at batch_size 100).
PACGAN_BUDGET = "400 epochs of 100,000 samples at batch 100, i.e. 400,000 generator updates"
#: And their setup (Lin et al. 2018, Appendix; the same config.py files), not a WGAN's.
PACGAN_SETUP = (
    "a standard (non-Wasserstein) GAN, generator 4×400 ReLU + BatchNorm, discriminator 3×200 "
    "maxout, Adam 1e-4 (β₁ 0.8), batch 100, 100,000 training points"
)

#: PacGAN4's level (Table 1) as per-seed targets: the first curve point of a seed meeting all
#: three is its "iterations / seconds to target". Modes are whole numbers per seed, so 7.8 and
#: 24.8 mean every mode.
TARGETS = {
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


def trend(stat) -> str:
    """*rising* / *falling* when the seeds' mean late change is more than two standard errors
    from 0, else *flat*; with one seed (no error) only the number is shown."""
    if stat is None:
        return "–"
    mean, se, _, count = stat
    text = f"{mean * 100:+.1f}" + ("" if math.isnan(se) else f" ± {se * 100:.1f}")
    if count < 2 or math.isnan(se):
        return text
    word = "rising" if mean - 2 * se > 0 else "falling" if mean + 2 * se < 0 else "flat"
    return f"{text} {word}"


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


def summarize(results: list[dict]) -> dict:
    """{data set: {constraint: {'stats': {column key: mean_se}, 'seeds', 'failed', 'collapsed',
    and where the data set has a target: 'to_target'}}}."""
    out: dict = {}
    for r in results:
        cell = r["cell"]
        row = out.setdefault(cell["dataset"], {}).setdefault(
            cell["constraint"],
            {"cells": [], "failed": 0, "collapsed": 0, "reached": [], "late": []},
        )
        if r["status"] != "ok":
            row["failed"] += 1
            continue
        values = cell_values(r)
        row["cells"].append(values)
        row["collapsed"] += bool(is_collapsed(values))
        target = TARGETS.get(cell["dataset"])
        if target and r.get("curve"):
            row["curved"] = row.get("curved", 0) + 1
            if (hit := to_target(r, target)) is not None:
                row["reached"].append(hit)
        if (change := late_change(r)) is not None:
            row["late"].append(change)
    for rows in out.values():
        for row in rows.values():
            cells, reached, curved = row.pop("cells"), row.pop("reached"), row.pop("curved", 0)
            row["seeds"] = len(cells)
            row["stats"] = _stats(cells)
            row["late_change"] = mean_se(row.pop("late"))
            if curved:
                row["to_target"] = {
                    "iterations": censored_median([h[0] for h in reached], curved),
                    "seconds": censored_median([h[1] for h in reached], curved),
                    "reached": len(reached),
                    "of": curved,
                }
    return out


def _stats(cells: list[dict]) -> dict:
    return {
        key: stat
        for key, *_ in COLUMNS
        if (stat := mean_se([c.get(key) for c in cells])) is not None
    }


def _fmt(stat, scale: float, digits: int) -> str:
    if stat is None:
        return "–"
    mean, se, infinite, count = stat
    if infinite == count:
        return f"∞ [all {count}]"
    se_text = "" if math.isnan(se) else f" ± {se * scale:.{digits}f}"
    inf_text = f" [∞ in {infinite}/{count}]" if infinite else ""
    return f"{mean * scale:.{digits}f}{se_text}{inf_text}"


def _fmt_target(row: dict, key: str) -> str:
    hit = row.get("to_target")
    if not hit:
        return "–"
    value = hit[key]
    shown = (
        "never"
        if math.isinf(value)
        else (f"{value:,.0f}" if key == "iterations" else f"{value:.0f}")
    )
    return f"{shown} ({hit['reached']}/{hit['of']})"


#: The metrics on which a row must beat uniform noise on the bounding box (higher, higher, lower).
BEAT_KEYS = (("modes_covered", 1), ("high_quality_fraction", 1), ("reverse_kl", -1))


def beats(stats: dict, reference: dict) -> list[str]:
    """The metrics (of :data:`BEAT_KEYS`) on which ``stats`` does *not* beat ``reference``'s means;
    [] when it beats it on all three (an infinite reverse KL in any seed never beats)."""
    failed = []
    for key, sign in BEAT_KEYS:
        mine, theirs = stats.get(key), reference.get(key)
        if mine is None or theirs is None:
            continue
        value = math.inf if key == "reverse_kl" and mine[2] else mine[0]
        if not sign * value > sign * theirs[0]:
            failed.append(key)
    return failed


_SHORT = {"modes_covered": "modes", "high_quality_fraction": "HQ", "reverse_kl": "rKL"}


def markdown(
    spec: dict,
    results: list[dict],
    command: str = "",
    references: dict | None = None,
    total: int | None = None,
) -> str:
    from lipgan.study.references import BOX, BOX_EXPECTED

    summary = summarize(results)
    references = references or {}
    lines = ["# lipgan constraint study", ""]
    if total is not None and len(results) < total:
        lines += [
            f"**PARTIAL: {len(results)} of {total} cells finished** (`--report-only`); rows "
            "average the seeds that finished, and the rest of the study is still to run.",
            "",
        ]
    if spec.get("smoke_test"):
        lines += [
            "**SMOKE TEST (`--quick`): a check that the machinery runs, not results.** Its "
            "generators have trained too briefly to compare constraints.",
            "",
        ]
    if command:
        lines += [f"Command: `{command}`", ""]
    budget = (
        f"lipgan's budget: {_steps_text(results, spec)} generator iterations per run, "
        f"{spec['seeds']} seeds, {spec['eval_samples']} samples per evaluation. Mean ± standard "
        "error over the seeds that finished; `[∞ in k/n]`: k of the n seeds had an infinite value "
        "(no high-quality sample), left out of the mean. A seed is *collapsed* when fewer than "
        f"half the modes are captured or the reverse KL of the mode histogram exceeds {COLLAPSE_KL}."
    )
    lines += [budget, ""]
    if spec.get("eval_every"):
        lines += [
            f"Quality curve: every {spec['eval_every']} iterations (modes, high quality, reverse KL "
            "on the same samples as the final evaluation; a sliced W1); *to target*: the median "
            "over seeds of the first curve point meeting PacGAN4's level (a seed that never got "
            "there counts as never; `(k/n)` seeds got there); seconds are training seconds "
            "(tracing included, evaluations excluded).",
            "",
        ]
    for dataset, rows in summary.items():
        ref = references.get(dataset)
        ref_stats = {name: _stats(r["cells"]) for name, r in ref["rows"].items()} if ref else {}
        all_stats = [r["stats"] for r in rows.values()] + list(ref_stats.values())
        keys = [c for c in COLUMNS if any(c[0] in st for st in all_stats) and c[0] != "w1_floor"]
        targets = dataset in TARGETS and any("to_target" in r for r in rows.values())
        late = any(r["late_change"] for r in rows.values())
        head = ["constraint", *[title for _, title, *_ in keys]]
        if targets:
            head += ["iterations to target", "seconds to target"]
        if late:
            head.append("HQ change, last quarter (pp)")
        if BOX in ref_stats:
            head.append("beats uniform noise")
        head += ["seeds", "failed", "collapsed"]
        lines += [f"## {dataset}", ""]
        if ref:
            floor = ref["floor"]
            lines += [
                f"W1 floor (real vs real, n = {floor['n']}, {floor['pairs']} pairs): "
                f"**{floor['mean']:.4f} ± {floor['se']:.4f}**.",
                "",
            ]
        if targets:
            t = TARGETS[dataset]
            lines += [
                f"Target (PacGAN4, per seed): ≥ {t['modes_covered']} modes, ≥ "
                f"{t['high_quality_fraction']:.0%} high quality, reverse KL ≤ {t['reverse_kl']}.",
                "",
            ]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for constraint, row in rows.items():
            cols = [_fmt(row["stats"].get(k), scale, d) for k, _, scale, d in keys]
            if targets:
                cols += [_fmt_target(row, "iterations"), _fmt_target(row, "seconds")]
            if late:
                cols.append(trend(row["late_change"]))
            if BOX in ref_stats:
                failed = beats(row["stats"], ref_stats.get(BOX_EXPECTED, ref_stats[BOX]))
                cols.append(
                    "yes" if not failed else "**no** (" + ", ".join(_SHORT[f] for f in failed) + ")"
                )
            lines.append(
                f"| {constraint} | "
                + " | ".join(cols)
                + f" | {row['seeds']} | {row['failed']} | {row['collapsed']} |"
            )
        for name, st in ref_stats.items():
            cols = [_fmt(st.get(k), scale, d) for k, _, scale, d in keys]
            cols += ["–", "–"] if targets else []
            cols += ["–"] if late else []
            cols += ["–"] if BOX in ref_stats else []
            seeds = len(ref["rows"][name]["cells"])
            lines.append(
                f"| *{name}: {ref['rows'][name]['what']}* | "
                + " | ".join(cols)
                + f" | {seeds} | – | – |"
            )
        if ref:
            lines += [
                "",
                "Italic rows learn nothing: samplers scored on the same metrics, sample count and "
                "seeds. A constraint row that does not beat what uniform noise on the bounding "
                "box scores in expectation (means over many draws) on modes, high quality and "
                "reverse KL says **no** in *beats uniform noise*.",
            ]
        if late:
            lines += [
                "",
                "*HQ change, last quarter*: per seed, the mean high-quality % of the curve points "
                "in the budget's last quarter minus that of the third quarter, in percentage "
                "points, mean ± s.e. over seeds; *rising* or *falling* when the mean is more than "
                "two standard errors from 0, else *flat*. A row short of its target and *rising* "
                "ran out of budget; one that is *flat* has stopped improving at this config. Where "
                "the learning rate decays to 0 at the budget's end (the ring and grid configs), "
                "part of a late rise is that decay, so *rising* does not promise that a longer "
                "budget at the same schedule gets there.",
            ]
        if any("critic_gap_ratio" in r["stats"] for r in rows.values()):
            lines += [
                "",
                "*critic gap / W1*: the critic's mean D(real) − mean D(fake) on the evaluation "
                "samples over the exact W1; a 1-Lipschitz critic gives ≤ 1, so a ratio above 1 "
                "means the critic is not 1-Lipschitz and its gap is not a W1 estimate.",
            ]
        if dataset in PACGAN:
            lines += [
                "",
                f"PacGAN (Lin et al. 2018, Table 1; their own training: {PACGAN_SETUP}; "
                f"{PACGAN_BUDGET}; not the same training as above, whose budget is "
                f"{_steps_text([r for r in results if r['cell']['dataset'] == dataset], spec)} "
                "iterations):",
                "",
                "| method | modes captured | high quality % | reverse KL |",
                "|---|---|---|---|",
            ]
            lines += [f"| {m} | {a} | {b} | {c} |" for m, a, b, c in PACGAN[dataset]]
        failures = [r for r in results if r["cell"]["dataset"] == dataset and r["status"] != "ok"]
        if failures:
            lines += ["", "Failed cells:", ""]
            lines += [
                f"- {r['cell']['constraint']} seed {r['cell']['seed']}: {r.get('error')}"
                for r in failures
            ]
        lines.append("")
    return "\n".join(lines)


def _steps_text(results: list[dict], spec: dict) -> str:
    """The iterations per run, from the cells (a spec's ``steps`` may be None: each config's)."""
    steps = sorted({r["cell"]["steps"] for r in results})
    if not steps:
        return str(spec.get("steps"))
    return " / ".join(f"{s:,}" for s in steps)


#: The metric that picks a constraint's median seed for the figure: W1 (toys), FD (digits).
MEDIAN_BY = ("w1", "digits_fd")


def _median_cell(results: list[dict]) -> dict | None:
    """The seed with the median W1, or FD for images (the lower middle one for an even count)."""
    for key in MEDIAN_BY:
        ok = [r for r in results if r["status"] == "ok" and key in (r.get("metrics") or {})]
        if ok:
            ok.sort(key=lambda r: r["metrics"][key])
            return ok[(len(ok) - 1) // 2]
    return None


def _image_grid(images: np.ndarray, columns: int = 8) -> np.ndarray:
    """:func:`lipgan.plots.study.image_grid` (kept here: the figure's images were drawn here)."""
    from lipgan.plots.study import image_grid

    return image_grid(images, columns)


#: Curve panels: (key, title, scale, log y).
CURVE_PANELS = [
    ("modes_covered", "modes captured", 1.0, False),
    ("high_quality_fraction", "high quality %", 100.0, False),
    ("reverse_kl", "reverse KL (finite seeds)", 1.0, True),
    ("sliced_w1", "sliced W1", 1.0, True),
]


def curve_bands(results: list[dict]) -> dict:
    """{constraint: {'step': [...], 'seconds': [...], key: [(mean, se), ...]}} over the seeds'
    curves of one data set, at the steps every seed of the row recorded; seconds are the mean
    over seeds at each step. Infinite values (reverse KL with no high-quality sample) are left
    out of a step's mean."""
    by_row: dict[str, list[list[dict]]] = {}
    for r in results:
        if r["status"] == "ok" and r.get("curve"):
            by_row.setdefault(r["cell"]["constraint"], []).append(r["curve"])
    out = {}
    for constraint, curves in by_row.items():
        steps = sorted(set.intersection(*({p["step"] for p in c} for c in curves)))
        at = [{p["step"]: p for p in c} for c in curves]
        band = {
            "step": steps,
            "seconds": [float(np.mean([a[s]["seconds"] for a in at])) for s in steps],
        }
        for key, *_ in CURVE_PANELS:
            band[key] = [mean_se([a[s].get(key) for a in at]) for s in steps]
        out[constraint] = band
    return out


def short_label(constraint: str) -> str:
    """A row's name for a figure: ``bjorck:mlp_critic.activation=maxmin,dcgan_critic.activation=
    maxmin`` becomes ``bjorck [maxmin]`` (a binding's value once, however many configurables it
    sets), ``gradient_penalty:every=4`` becomes ``gradient_penalty [every=4]``. The table keeps
    the full spec, which is what the command line says."""
    from lipgan.bench.harness import parse_spec
    from lipgan.errors import ConfigError

    try:
        name, kwargs = parse_spec(constraint)
    except ConfigError:  # a spec this study could not parse keeps its own spelling
        return constraint
    shown: list[str] = []
    for key, value in kwargs.items():
        text = str(value) if "." in key else f"{key}={value}"
        if text not in shown:
            shown.append(text)
    return f"{name} [{', '.join(shown)}]" if shown else name


def smoke_test_label(results: list[dict]) -> str:
    """The banner of a ``--quick`` study's figure: what it is, in words a glance catches."""
    return f"SMOKE TEST (--quick): {_steps_text(results, {})} iterations, not results"


def figure(
    path: Path,
    out: Path,
    results: list[dict],
    references: dict | None = None,
    *,
    smoke_test: bool = False,
    total: int | None = None,
) -> None:
    """Write ``study.png`` (:func:`draw`); ``smoke_test``: a ``--quick`` study, said in a banner;
    ``total``: the study's cell count when ``results`` holds only the finished ones."""
    from lipgan.plots import pyplot

    fig = draw(out, results, references, smoke_test=smoke_test, total=total)
    fig.savefig(path, dpi=150)
    pyplot().close(fig)


def draw(
    out: Path,
    results: list[dict],
    references: dict | None = None,
    *,
    smoke_test: bool = False,
    total: int | None = None,
):
    """The study figure as a matplotlib Figure, per data set one block of three parts
    (drawn by :mod:`lipgan.plots.study`):

    * the generated samples of each constraint's median seed (by W1, or FD for images), over the
      data set's real points in grey, every panel on the same axes;
    * one horizontal bar chart per metric, mean ± s.e. over seeds, the reference samplers as
      vertical lines;
    * where cells recorded curves, mean ± s.e. bands against iterations and, below on the same
      y scale, against training seconds.

    A ``--quick`` study (``smoke_test``) and a partial report (fewer ``results`` than ``total``)
    say so in the title.
    """
    from lipgan.plots import pyplot
    from lipgan.plots import study as panels

    plt = pyplot()
    references = references or {}
    blocks = []
    for dataset, rows in summarize(results).items():
        mine = [r for r in results if r["cell"]["dataset"] == dataset]
        bands = curve_bands(mine)
        keys = [
            c
            for c in COLUMNS
            if c[0] != "w1_floor" and any(c[0] in r["stats"] for r in rows.values())
        ]
        heights = [
            2.3 * -(-len(rows) // panels.SAMPLE_COLUMNS),
            (0.22 * len(rows) + 1.2) * -(-len(keys) // panels.BAR_COLUMNS) if keys else 0.0,
            5.2 if bands else 0.0,
        ]
        blocks.append((dataset, rows, mine, bands, keys, heights))
    notes = [smoke_test_label(results)] if smoke_test else []
    if total is not None and len(results) < total:
        notes.append(f"PARTIAL: {len(results)} of {total} cells finished")
    height = 0.5 * bool(notes) + sum(0.5 + sum(b[-1]) for b in blocks) or 2.0
    with plt.rc_context({"font.size": panels.FONT_SIZE, "axes.titlesize": panels.FONT_SIZE + 1}):
        fig = plt.figure(figsize=(12, height), layout="constrained")
        if notes:
            fig.suptitle(
                "; ".join(notes),
                color="firebrick",
                fontweight="bold",
                fontsize=panels.FONT_SIZE + 5,
            )
        parts = fig.subfigures(len(blocks), 1, height_ratios=[sum(b[-1]) + 0.5 for b in blocks])
        for part, block in zip(np.atleast_1d(parts), blocks, strict=True):
            _draw_block(part, out, *block, references.get(block[0]))
    return fig


def _draw_block(fig, out, dataset, rows, results, bands, keys, heights, reference) -> None:
    """One data set's samples, bars and curves, in sub-figures ``heights`` inches high."""
    from lipgan.plots import study as panels

    seeds = max((r["seeds"] for r in rows.values()), default=0)
    fig.suptitle(
        f"{dataset}: {len(rows)} constraints × {seeds} seed{'s' if seeds != 1 else ''}, "
        f"{_steps_text(results, {})} iterations",
        fontweight="bold",
        fontsize=panels.FONT_SIZE + 3,
    )
    parts = iter(
        np.atleast_1d(
            fig.subfigures(sum(map(bool, heights)), 1, height_ratios=[h for h in heights if h])
        )
    )
    colors = panels.colors(rows)
    counts = {
        key: next((m[key] for m in (r.get("metrics") or {} for r in results) if key in m), None)
        for key in ("num_modes", "num_classes")
    }
    real = np.zeros((0, 2))
    if reference and reference.get("toy_set"):
        from lipgan.data.toy import SAMPLERS

        real = SAMPLERS[reference["toy_set"]](2500, np.random.default_rng(0))
    samples = [
        _median_samples(out, [r for r in results if r["cell"]["constraint"] == c]) for c in rows
    ]
    panels.sample_panels(
        next(parts),
        [
            {"title": short_label(c), "color": colors[c], "samples": xy, "seed": seed}
            for c, (xy, seed) in zip(rows, samples, strict=True)
        ],
        real,
    )
    if keys:
        panels.bar_panels(
            next(parts),
            [short_label(c) for c in rows],
            [colors[c] for c in rows],
            [(key, scale, [rows[c]["stats"].get(key) for c in rows]) for key, _, scale, _ in keys],
            _reference_means(reference, [k for k, *_ in keys]),
            counts,
        )
    if bands:
        panels.curve_panels(
            next(parts),
            {short_label(c): (colors[c], band) for c, band in bands.items()},
            CURVE_PANELS,
            _reference_means(reference, [k for k, *_ in CURVE_PANELS]),
            counts,
        )


def _median_samples(out: Path, results: list[dict]) -> tuple[np.ndarray | None, int | None]:
    """(samples.npy of the row's median seed, or None when it has none; that seed)."""
    from lipgan.study.runner import cell_dir
    from lipgan.study.spec import Cell

    median = _median_cell(results)
    if median is None:
        return None, None
    cell = Cell.from_dict(median["cell"])
    path = cell_dir(out, cell) / "samples.npy"
    return (np.load(path) if path.is_file() else None), cell.seed


def _reference_means(reference: dict | None, keys) -> dict:
    """{reference row: {key: mean_se}} of a data set's reference samplers."""
    if not reference:
        return {}
    return {
        name: {
            key: st
            for key in keys
            if (st := mean_se([c.get(key) for c in row["cells"]])) is not None
        }
        for name, row in reference["rows"].items()
    }


def write(
    out: Path, spec: dict, results: list[dict], command: str = "", log=None, total=None
) -> dict[str, Path]:
    """study.json/md/png from ``results``; ``total``: the study's cell count when ``results``
    holds only the finished ones (a report of a study still under way says so)."""
    from lipgan.study import references as refs

    out = Path(out)
    paths = {"json": out / "study.json", "markdown": out / "study.md", "figure": out / "study.png"}
    references = refs.load_or_compute(
        out,
        list(dict.fromkeys(r["cell"]["dataset"] for r in results)),
        spec["eval_samples"],
        spec["seeds"],
        log,
        refs.SMOKE_FLOOR_PAIRS if spec.get("smoke_test") else refs.FLOOR_PAIRS,
    )
    cells = []
    for r in results:
        values = cell_values(r) if r["status"] == "ok" else {}
        cells.append({**r, "collapsed": is_collapsed(values) if values else None})
    payload = {
        "spec": spec,
        "command": command,
        "collapse_rule": f"modes captured < half, or reverse KL > {COLLAPSE_KL}",
        "targets": TARGETS,
        "summary": summarize(results),
        "references": references,
        "cells": cells,
        "cells_total": total if total is not None else len(results),
    }
    paths["json"].write_text(dumps(payload))
    paths["markdown"].write_text(markdown(spec, results, command, references, total))
    figure(
        paths["figure"],
        out,
        results,
        references,
        smoke_test=bool(spec.get("smoke_test")),
        total=total,
    )
    return paths
