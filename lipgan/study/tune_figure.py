"""``tune.png``: a tuned study's search at a glance (:mod:`lipgan.study.tune_report` writes it).

Per data set, a column: the expected best of k configs (Lucic et al. 2018, Fig. 5) in W1, the
choice's criterion, and in high quality; then every config's W1 and high quality, the chosen
config a star. Reference lines are the reference samplers of :mod:`lipgan.study.references` and
PacGAN4's published level, each in its own style (:func:`lipgan.plots.study.reference_styles`).
"""

from __future__ import annotations

import math

import numpy as np

from lipgan.study.figure import short_label

#: The quantities of the search figure, (key, y label, scale): a best-of-k row and a per-config
#: row each, W1 on a log axis.
SEARCH_PANELS = (
    ("w1", "W1 to the data (data units; lower is better)", 1.0),
    ("high_quality_fraction", "high quality (% of samples)", 100.0),
)
#: What the per-config rows draw, by key: the search summary's list (None: a failed trial).
PER_CONFIG = {"w1": "w1", "high_quality_fraction": "hq"}


def draw(
    spec, search_rows: dict, chosen: dict | None = None, references: dict | None = None,
    star: str = "chosen config",
):  # fmt: skip
    """The figure: rows best-of-k W1, best-of-k high quality, each config's W1, each config's
    high quality; one column per data set (``chosen``: :func:`lipgan.study.tune.choose`'s;
    ``references``: :func:`lipgan.study.references.load_or_compute`'s; ``star``: the legend's
    name for the starred configs, leaders while a halving search runs)."""
    from matplotlib.ticker import MaxNLocator

    from lipgan.plots import pyplot
    from lipgan.plots import study as panels
    from lipgan.study.figure import pacgan_level, reference_means

    plt = pyplot()
    chosen, references = chosen or {}, references or {}
    datasets = [d for d in spec.datasets if d in search_rows]
    columns = max(1, len(datasets))
    fig, axes = plt.subplots(
        4, columns, figsize=(6.5 * columns + 2.5, 16), squeeze=False, layout="constrained"
    )
    colors = panels.colors(spec.constraints)
    for j, dataset in enumerate(datasets):
        rows = search_rows[dataset]
        refs = reference_means(references.get(dataset), [k for k, *_ in SEARCH_PANELS])
        refs |= pacgan_level(dataset)
        styles = panels.reference_styles(refs)
        every_w1 = [w for row in rows.values() for w in row["w1"] if w is not None]
        cap = off_scale_cap(every_w1, [st["w1"][0] for st in refs.values() if "w1" in st])
        for r, (key, ylabel, scale) in enumerate(SEARCH_PANELS):
            best, each = axes[r][j], axes[2 + r][j]
            drawn: dict = {best: [], each: []}
            for constraint in spec.constraints:
                row = rows.get(constraint)
                if not row:
                    continue
                values = row["best_of_k_w1"] if key == "w1" else row["best_of_k"]
                values = [scale * v for v in values]
                best.plot(
                    range(1, len(values) + 1), values, color=colors[constraint],
                    label=short_label(constraint),
                )  # fmt: skip
                drawn[best] += values
                drawn[each] += _config_dots(
                    each, spec, constraint, row, chosen.get((dataset, constraint)),
                    colors[constraint], PER_CONFIG[key], scale, cap if key == "w1" else None,
                    star,
                )  # fmt: skip
            for ax in (best, each):
                for name, st in refs.items():
                    if key in st and math.isfinite(st[key][0]):
                        ax.axhline(st[key][0] * scale, label=name, **styles[name])
                        drawn[ax].append(st[key][0] * scale)
                ax.set_ylabel(ylabel)
                ax.grid(alpha=0.3)
                if key == "w1":
                    shown = [v for v in drawn[ax] if v <= cap]
                    _log_y(ax, shown + ([cap] if len(shown) < len(drawn[ax]) else []))
                else:  # room under 0 and over 100: a dot there is seen, not cut by the frame
                    ax.set_ylim(-3, 103)
            quantity = "W1 (the choice)" if key == "w1" else "high quality"
            best.set_title(f"{dataset}: expected best {quantity} of k configs", fontsize=10)
            best.set_xlabel(f"configs tried (k of {spec.configs})")
            best.xaxis.set_major_locator(MaxNLocator(integer=True))
            best.set_xlim(1, max(2, spec.configs))
            each.set_title(
                f"{dataset}: each config's {quantity} at {spec.search_steps:,} iterations",
                fontsize=10,
            )
            names = [short_label(c) for c in spec.constraints]
            tilt = len(names) > 3
            each.set_xticks(range(len(names)), names, rotation=30 if tilt else 0,
                            ha="right" if tilt else "center", fontsize=8)  # fmt: skip
            each.set_xlim(-0.6, len(names) - 0.4)
            each.grid(False, axis="x")
        failed = sum(row["failed"] for row in rows.values())
        off = [w for w in every_w1 if w > cap]
        notes = [f"{failed} failed trial(s): no W1, not drawn"] if failed else []
        if off:
            notes.append(f"▲ {len(off)} config(s) off the scale, W1 up to {max(off):.3g}")
        if notes:
            axes[2][j].text(
                0.01, 0.98, "\n".join(notes), fontsize=7, va="top",
                transform=axes[2][j].transAxes,
            )  # fmt: skip
    _legend(fig, axes)
    return fig


def off_scale_cap(values: list[float], references: list[float]) -> float:
    """The top of a W1 axis: 30x the farthest reference sampler (uniform noise), or the median
    config's W1 without references. A diverged config's W1 (1e15 on the ring) would otherwise
    stretch the axis over 16 decades and flatten every line that matters; it is drawn at the
    top as a triangle instead, and counted."""
    finite = [v for v in references + values if v is not None and math.isfinite(v) and v > 0]
    if references:
        return 30 * max(references)
    return 30 * float(np.median(finite)) if finite else math.inf


def _config_dots(
    ax, spec, constraint, row, found, color, which, scale, cap=None, star="chosen config"
) -> list[float]:
    """Every finished config's ``row[which]`` at ``constraint``'s column (jittered, drawn past
    the frame where it sits on it; above ``cap``, a triangle at ``cap``), the chosen one a star;
    the values drawn."""
    i = list(spec.constraints).index(constraint)
    values = row[which]
    jitter = (np.random.default_rng(i).random(len(values)) - 0.5) * 0.3
    points = [(i + x, scale * v) for x, v in zip(jitter, values, strict=True) if v is not None]
    cap = math.inf if cap is None else cap
    inside = [(x, y) for x, y in points if y <= cap]
    if inside:
        xs, ys = zip(*inside, strict=True)
        ax.scatter(xs, ys, s=16, color=color, alpha=0.8, clip_on=False, zorder=3)
    above = [x for x, y in points if y > cap]
    if above:
        ax.scatter(above, [cap] * len(above), marker="^", s=30, color=color, clip_on=False)
    trial = (found or {}).get("trial")
    if trial is not None and trial < len(values) and values[trial] is not None:
        ax.scatter(
            [i + jitter[trial]], [scale * values[trial]], marker="*", s=240, color=color,
            edgecolors="black", linewidths=0.8, zorder=4, clip_on=False, label=star,
        )  # fmt: skip
    return [y for _, y in points]


def _legend(fig, axes) -> None:
    """One legend for the figure, right of the panels (inside one it hid lines and dots): each
    constraint, reference line and the chosen config's star once."""
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)


def _log_y(ax, values) -> None:
    """A log y axis 1.5x past the extremes of ``values``, in plain decimal labels."""
    from lipgan.plots.study import plain_log_axis

    values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    ax.set_yscale("log")
    if values:
        lo, hi = min(values), max(values)
        ax.set_ylim(lo / 1.5, hi * 1.5)
        plain_log_axis(ax.yaxis, lo, hi)
