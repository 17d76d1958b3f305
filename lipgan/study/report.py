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

COLLAPSE_KL = 1.0


def cell_values(result: dict) -> dict:
    """The cell's numbers under the keys of :data:`COLUMNS` (metrics plus timing)."""
    values = dict(result.get("metrics") or {})
    if result.get("seconds_per_iteration") is not None:
        values["seconds_per_iteration"] = result["seconds_per_iteration"]
    return values


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


def mean_se(xs) -> tuple[float, float] | None:
    xs = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    if not xs:
        return None
    se = float(np.std(xs, ddof=1) / math.sqrt(len(xs))) if len(xs) > 1 else float("nan")
    return float(np.mean(xs)), se


def summarize(results: list[dict]) -> dict:
    """{data set: {constraint: {column key: (mean, se), 'seeds', 'failed', 'collapsed'}}}."""
    out: dict = {}
    for r in results:
        cell = r["cell"]
        row = out.setdefault(cell["dataset"], {}).setdefault(
            cell["constraint"], {"cells": [], "failed": 0, "collapsed": 0}
        )
        if r["status"] != "ok":
            row["failed"] += 1
            continue
        values = cell_values(r)
        row["cells"].append(values)
        row["collapsed"] += bool(is_collapsed(values))
    for rows in out.values():
        for row in rows.values():
            cells = row.pop("cells")
            row["seeds"] = len(cells)
            row["stats"] = {
                key: stat
                for key, *_ in COLUMNS
                if (stat := mean_se([c.get(key) for c in cells])) is not None
            }
    return out


def _fmt(stat, scale: float, digits: int) -> str:
    if stat is None:
        return "–"
    mean, se = stat
    se_text = "" if math.isnan(se) else f" ± {se * scale:.{digits}f}"
    return f"{mean * scale:.{digits}f}{se_text}"


def markdown(spec: dict, results: list[dict], command: str = "") -> str:
    summary = summarize(results)
    lines = ["# lipgan constraint study", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    budget = (
        f"lipgan's budget: {spec['steps']} generator iterations per run, {spec['seeds']} seeds, "
        f"{spec['eval_samples']} samples per evaluation. Mean ± standard error over the seeds "
        "that finished; a seed is *collapsed* when fewer than half the modes are captured or the "
        f"reverse KL of the mode histogram exceeds {COLLAPSE_KL}."
    )
    lines += [budget, ""]
    for dataset, rows in summary.items():
        keys = [c for c in COLUMNS if any(c[0] in r["stats"] for r in rows.values())]
        head = ["constraint", *[title for _, title, *_ in keys], "seeds", "failed", "collapsed"]
        lines += [f"## {dataset}", "", "| " + " | ".join(head) + " |"]
        lines.append("|" + "---|" * len(head))
        for constraint, row in rows.items():
            cols = [_fmt(row["stats"].get(k), scale, d) for k, _, scale, d in keys]
            lines.append(
                f"| {constraint} | "
                + " | ".join(cols)
                + f" | {row['seeds']} | {row['failed']} | {row['collapsed']} |"
            )
        if dataset in PACGAN:
            lines += [
                "",
                f"PacGAN (Lin et al. 2018, Table 1; their own training, {PACGAN_BUDGET}: not "
                f"the same training as above, whose budget is {spec['steps']} iterations):",
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
    """``(n, h, w, c)`` images in [-1, 1] as one ``(rows*h, columns*w, c)`` array in [0, 1]."""
    n, h, w, c = images.shape
    rows = -(-n // columns)
    grid = np.ones((rows * h, columns * w, c), np.float32)
    for k, image in enumerate(images):
        r, q = divmod(k, columns)
        grid[r * h : (r + 1) * h, q * w : (q + 1) * w] = (np.clip(image, -1, 1) + 1) / 2
    return grid[..., 0] if c == 1 else grid


def figure(path: Path, out: Path, results: list[dict]) -> None:
    """Per data set: one scatter (toys) or image grid (digits) per constraint, median seed by W1 or
    FD, then a bar chart per metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lipgan.study.runner import cell_dir
    from lipgan.study.spec import Cell

    summary = summarize(results)
    datasets = list(summary)
    width = max(
        max(len(rows) for rows in summary.values()),
        max(
            sum(any(k in r["stats"] for r in rows.values()) for k, *_ in COLUMNS)
            for rows in summary.values()
        ),
    )
    fig, axes = plt.subplots(
        2 * len(datasets), width, figsize=(2.6 * width, 5.2 * len(datasets)), squeeze=False
    )
    for ax in axes.flat:
        ax.set_visible(False)
    for i, dataset in enumerate(datasets):
        rows = summary[dataset]
        for j, constraint in enumerate(rows):
            ax = axes[2 * i, j]
            ax.set_visible(True)
            cells = [
                r
                for r in results
                if r["cell"]["dataset"] == dataset and r["cell"]["constraint"] == constraint
            ]
            median = _median_cell(cells)
            ax.set_title(f"{dataset}\n{constraint}", fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
            if median is None:
                ax.text(0.5, 0.5, "no samples", ha="center", transform=ax.transAxes)
                continue
            cell = Cell(**{**median["cell"], "bindings": tuple(median["cell"]["bindings"])})
            samples = cell_dir(out, cell) / "samples.npy"
            if samples.is_file():
                xy = np.load(samples)
                if xy.ndim == 4:  # images: a grid of the first 64
                    ax.imshow(_image_grid(xy), cmap="gray", vmin=0, vmax=1)
                else:
                    ax.scatter(xy[:, 0], xy[:, 1], s=1, alpha=0.4)
                    ax.set_aspect("equal")
                ax.set_xlabel(f"seed {cell.seed}", fontsize=6)
        keys = [c for c in COLUMNS if any(c[0] in r["stats"] for r in rows.values())]
        for j, (key, title, scale, _) in enumerate(keys):
            ax = axes[2 * i + 1, j]
            ax.set_visible(True)
            names = list(rows)
            stats = [rows[n]["stats"].get(key) for n in names]
            means = [s[0] * scale if s else 0.0 for s in stats]
            errs = [s[1] * scale if s and not math.isnan(s[1]) else 0.0 for s in stats]
            ax.bar(range(len(names)), means, yerr=errs, capsize=2)
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names, rotation=70, fontsize=5)
            ax.set_title(title, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(out: Path, spec: dict, results: list[dict], command: str = "") -> dict[str, Path]:
    out = Path(out)
    paths = {"json": out / "study.json", "markdown": out / "study.md", "figure": out / "study.png"}
    cells = []
    for r in results:
        values = cell_values(r) if r["status"] == "ok" else {}
        cells.append({**r, "collapsed": is_collapsed(values) if values else None})
    payload = {
        "spec": spec,
        "command": command,
        "collapse_rule": f"modes captured < half, or reverse KL > {COLLAPSE_KL}",
        "summary": summarize(results),
        "cells": cells,
    }
    paths["json"].write_text(dumps(payload))
    paths["markdown"].write_text(markdown(spec, results, command))
    figure(paths["figure"], out, results)
    return paths
