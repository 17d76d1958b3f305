"""The study figure's panels, drawn from plain numbers (:func:`lipgan.study.figure.draw` lays
them out and decides what they show: which rows, which seed, which reference samplers).

What makes the figure readable at a glance is here, in one place: every axis names its quantity
and unit (:data:`AXIS_LABELS`), panels comparing the same quantity share one scale (the sample
scatters one view, a curve against iterations and against seconds one y range), y ranges fit
what is drawn (:func:`fit_y`), fonts are :data:`FONT_SIZE` at the saved size, and each row keeps
one colour (:data:`PALETTE`) in every part.
"""

from __future__ import annotations

import math

import numpy as np

#: Axis labels, with units, by metric key ({of}: the data set's modes or classes).
AXIS_LABELS = {
    "modes_covered": "modes captured (of {of})",
    "high_quality_fraction": "high quality (% of samples)",
    "reverse_kl": "reverse KL (nats)",
    "w1": "W1 (data units)",
    "sliced_w1": "sliced W1 (data units)",
    "critic_gap_ratio": "critic gap / W1 (ratio)",
    "digits_fd": "FD (classifier features)",
    "digits_kid": "KID (classifier features)",
    "classes_covered": "classes covered (of {of})",
    "class_reverse_kl": "class reverse KL (nats)",
    "seconds_per_iteration": "ms per iteration",
}
#: One line style per reference row, by name (:mod:`lipgan.study.references`' rows and PacGAN's
#: published level): each reference is told apart from the others in the legend, and from the
#: constraint rows' solid coloured curves.
REFERENCE_STYLES = {
    "real data": {"color": "0.45", "ls": "--", "lw": 1.4},
    "uniform on the bounding box": {"color": "k", "ls": ":", "lw": 1.2},
    "uniform on the support": {"color": "k", "ls": (0, (6, 2, 1, 2, 1, 2)), "lw": 1.0},
    "uniform on the bounding box, expected": {"color": "k", "ls": "-.", "lw": 1.0},
    "PacGAN4 (Lin et al. 2018)": {"color": "darkviolet", "ls": (0, (8, 3)), "lw": 1.2},
}
#: Styles for a reference row without one of its own, in order (none repeats the above).
SPARE_STYLES = ({"color": "0.3", "ls": (0, (1, 4)), "lw": 1.2}, {"color": "0.3", "ls": (0, (4, 4))})
#: Sample panels per row of the figure, and bar panels per row.
SAMPLE_COLUMNS, BAR_COLUMNS = 5, 3
#: Font size of the figure (points): readable at the saved size, 150 dpi, without zooming.
FONT_SIZE = 9
#: One colour per row, the same in every part of the figure: tab10 without its grey (the real
#: points' colour), then black and more tab20 shades.
PALETTE = (
    [f"C{k}" for k in (0, 1, 2, 3, 4, 5, 6, 8, 9)]
    + ["black"]
    + [f"tab:{c}" for c in ("olive", "cyan", "pink", "brown", "purple")]
)


def colors(names) -> dict[str, str]:
    """{row: colour} in :data:`PALETTE` order."""
    return {name: PALETTE[k % len(PALETTE)] for k, name in enumerate(names)}


def reference_styles(names) -> dict[str, dict]:
    """{reference row: line keyword arguments}, :data:`REFERENCE_STYLES`' style where the row
    has one, else the next unused spare: no two rows share a line."""
    spare = iter(SPARE_STYLES)
    out = {}
    for name in names:
        style = REFERENCE_STYLES.get(name) or next(spare, None)
        out[name] = dict(style or {"color": "0.6", "ls": (0, (2, 1, 2, 4))})
    return out


def plain_log_axis(axis, lo: float, hi: float) -> None:
    """A log ``axis`` (``ax.yaxis``) labelled in plain decimals (0.02, not 2×10⁻²): ticks at 1, 2
    and 5 per decade where the range spans at most about two decades, 1 per decade past that,
    and no labels on the minor ticks (matplotlib labels those of a short log axis in another
    size and in its ×10ⁿ notation)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    subs = (1.0,) if hi / lo > 100 * 1.5**2 else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def axis_label(key: str, counts: dict) -> str:
    """:data:`AXIS_LABELS`'s label of ``key``; ``counts``: ``num_modes`` / ``num_classes``."""
    of = counts.get("num_classes" if key.startswith("class") else "num_modes")
    label = AXIS_LABELS.get(key, key)
    return label.format(of=int(of)) if of is not None else label.replace(" (of {of})", "")


def image_grid(images: np.ndarray, columns: int = 8) -> np.ndarray:
    """``(n, h, w, c)`` images in [-1, 1] as one ``(rows*h, columns*w, c)`` array in [0, 1]."""
    n, h, w, c = images.shape
    rows = -(-n // columns)
    grid = np.ones((rows * h, columns * w, c), np.float32)
    for k, image in enumerate(images):
        r, q = divmod(k, columns)
        grid[r * h : (r + 1) * h, q * w : (q + 1) * w] = (np.clip(image, -1, 1) + 1) / 2
    return grid[..., 0] if c == 1 else grid


def sample_panels(fig, panels: list[dict], real: np.ndarray) -> None:
    """One panel per row: ``{'title', 'color', 'samples' (or None), 'seed', 'note' (why there
    are no samples; optional)}``. 2-D samples are
    drawn in the row's colour over ``real`` in grey, every panel on the real data's extent (the
    share of samples outside it is written in the panel); images as a grid."""
    from lipgan.plots.toy import extent

    ncols = SAMPLE_COLUMNS  # even for fewer rows: a panel keeps its size, not the page's width
    axes = fig.subplots(-(-len(panels) // ncols), ncols, squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    center, half = extent(real, real) if len(real) else ((0.0, 0.0), None)
    fig.suptitle(
        "generated samples of each constraint's median seed"
        + (" (colour) over real data (grey)" if len(real) else ""),
        fontsize=FONT_SIZE + 1,
    )
    for k, (ax, panel) in enumerate(zip(axes.flat, panels, strict=False)):
        ax.set_title(panel["title"], fontsize=FONT_SIZE, color=panel["color"])
        samples = panel["samples"]
        if samples is None or samples.ndim == 4:
            ax.set_xticks([])
            ax.set_yticks([])
            if samples is None:
                text = panel.get("note") or "no samples"
                ax.text(
                    0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes,
                    fontsize=FONT_SIZE - 1,
                )  # fmt: skip
            else:  # images: a grid of the first 64
                ax.imshow(image_grid(samples), cmap="gray", vmin=0, vmax=1)
                ax.set_xlabel(f"seed {panel['seed']}")
            continue
        if len(real):
            ax.scatter(real[:, 0], real[:, 1], s=1, c="0.7", lw=0, label="real data")
        ax.scatter(samples[:, 0], samples[:, 1], s=1.5, c=panel["color"], lw=0, alpha=0.6)
        if half is None:  # no real points: the first row's samples set the view
            center, half = extent(samples, samples)
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
        ax.set_aspect("equal")
        outside = np.mean(np.any(np.abs(samples - np.asarray(center)) > half, axis=1))
        note = f"seed {panel['seed']}" + (f", {outside:.0%} outside" if outside >= 0.005 else "")
        ax.text(0.02, 0.02, note, transform=ax.transAxes, fontsize=FONT_SIZE - 1, va="bottom")
        # The same view in every panel, so its numbers are written once: x under each column's
        # lowest panel, y left of each row (and right of a panel without points).
        if k + ncols < len(panels):
            ax.tick_params(labelbottom=False)
        else:
            ax.set_xlabel("x₁")
        if k % ncols and _has_scatter(axes.flat[k - 1]):
            ax.tick_params(labelleft=False)
        else:
            ax.set_ylabel("x₂")


def _has_scatter(ax) -> bool:
    """Whether a sample panel drew points (its y numbers then serve the panel right of it)."""
    return bool(ax.collections)


def bar_panels(
    fig, labels, row_colors, metrics, references: dict, counts: dict, note: str = ""
) -> None:
    """One horizontal bar chart per metric, rows top to bottom, mean ± SD over seeds.

    ``metrics``: ``[(key, scale, [mean_se per row])]`` with :func:`lipgan.study.summary.mean_se`'s
    ``(mean, spread, infinite count, count)`` (the caller's spread: the SD); seeds with an infinite value are counted beside the
    bar, never drawn as a number. ``references``: ``{name: {key: mean_se}}``, vertical lines,
    one style each (:func:`reference_styles`). ``note``: said after the part's title.
    """
    ncols = min(BAR_COLUMNS, len(metrics))
    axes = fig.subplots(-(-len(metrics) // ncols), ncols, squeeze=False, sharey=True)
    for ax in axes.flat[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(
        "final evaluation, mean ± SD over seeds" + (f"; {note}" if note else ""),
        fontsize=FONT_SIZE + 1,
    )
    styles = reference_styles(references)
    y = np.arange(len(labels))
    for ax, (key, scale, stats) in zip(axes.flat, metrics, strict=False):
        means = np.array([s[0] * scale if s and math.isfinite(s[0]) else 0.0 for s in stats])
        errs = np.array([s[1] * scale if s and not math.isnan(s[1]) else 0.0 for s in stats])
        ax.barh(y, means, xerr=errs, color=row_colors, capsize=2, height=0.7)
        top = float(np.max(means + errs)) if len(means) else 1.0
        for name, st in references.items():
            if key in st and math.isfinite(st[key][0]):
                value = st[key][0] * scale
                ax.axvline(value, label=name, **styles[name])
                top = max(top, value)
        if key == "critic_gap_ratio":
            ax.axvline(1.0, color="firebrick", lw=1, label="1-Lipschitz bound")
            top = max(top, 1.0)
        infinite = [(k, st) for k, st in enumerate(stats) if st and st[2]]
        for k, st in infinite:
            text = f"∞ in {st[2]}/{st[3]}" if math.isfinite(st[0]) else f"∞ (all {st[3]})"
            ax.text(means[k] + errs[k], k, f" {text}", va="center", fontsize=FONT_SIZE - 1)
        full = {"modes_covered": "num_modes", "classes_covered": "num_classes"}.get(key)
        if key == "high_quality_fraction":
            top = 100.0
        elif full and counts.get(full):
            top = float(counts[full])
        ax.set_xlim(0, (top or 1.0) * (1.3 if infinite else 1.08))  # room for the ∞ notes
        ax.set_xlabel(axis_label(key, counts))
        ax.grid(axis="x", lw=0.3)
    axes[0, 0].set_yticks(y, labels)
    axes[0, 0].invert_yaxis()
    handles, names = [], []
    for ax in axes.flat:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            if name not in names:
                handles.append(handle)
                names.append(name)
    if handles:
        fig.legend(
            handles, names, loc="outside lower center", ncols=min(len(handles), 3), frameon=False
        )


def curve_panels(fig, curves: dict, panels, references: dict, counts: dict) -> None:
    """Row 0 against iterations, row 1 against training seconds, on the same y scale.

    ``curves``: ``{label: (colour, band)}`` with :func:`lipgan.study.figure.curve_bands`' bands;
    ``panels``: ``[(key, title, scale, log y)]``; ``references``: ``{name: {key: mean_se}}``,
    horizontal lines. The legend is right of the panels: inside a panel it hid the curves.
    """
    axes = fig.subplots(2, len(panels), squeeze=False)
    fig.suptitle(  # left: the legend's column, right, starts as high as the title
        "quality during training, mean ± SD over seeds; below: against training seconds "
        "(mean over seeds)",
        fontsize=FONT_SIZE + 1,
        x=0.02,
        ha="left",
    )
    styles = reference_styles(references)
    for j, (key, title, scale, log) in enumerate(panels):
        values = []
        for r, xkey in enumerate(("step", "seconds")):
            ax = axes[r, j]
            if r:
                ax.sharey(axes[0, j])
            for label, (color, band) in curves.items():
                pts = [
                    (x, st[0] * scale, 0.0 if math.isnan(st[1]) else st[1] * scale)
                    for x, st in zip(band[xkey], band[key], strict=True)
                    if st is not None and math.isfinite(st[0])
                ]
                if not pts:
                    continue
                x, m, e = (np.array(v) for v in zip(*pts, strict=True))
                low = np.maximum(m - e, m / 10) if log else m - e  # a log axis has no 0
                ax.plot(x, m, color=color, lw=1.2, label=label)
                ax.fill_between(x, low, m + e, color=color, alpha=0.2, lw=0)
                values += list(m)
            for name, st in references.items():
                if key in st and math.isfinite(st[key][0]):
                    value = st[key][0] * scale
                    ax.axhline(value, label=name, **styles[name])
                    values.append(value)
            # Short: a longer label ran into the next panel's.
            ax.set_xlabel("iterations" if xkey == "step" else "training seconds")
            ax.set_ylabel(axis_label(key, counts))
            ax.grid(lw=0.3)
            if r == 0:
                ax.set_title(title)
        fit_y(axes[0, j], key, values, log, counts)
    handles, labels = [], []
    for ax in axes[0]:  # every row and reference drawn in any panel, each once
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    # Right of the panels, in the part's own space: in a panel's place, a long legend (16 rows
    # and 5 references) stretched its row and squashed every panel to a strip.
    fig.legend(handles, labels, loc="outside right upper", frameon=False)


def fit_y(ax, key: str, values: list[float], log: bool, counts: dict) -> None:
    """A y range that fits the plotted means and reference lines (bands may overshoot it): a
    fraction from 0 to 100 %, modes from 0 to all of them, a log axis 1.5x past the extremes
    with plain tick labels (0.02, not 2×10⁻²), anything else its range padded by 5 %."""
    values = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not values:
        return
    lo, hi = min(values), max(values)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(lo / 1.5, hi * 1.5)
        plain_log_axis(ax.yaxis, lo, hi)
    elif key == "high_quality_fraction":
        ax.set_ylim(0, 100 * 1.03)
    elif key == "modes_covered" and counts.get("num_modes"):
        ax.set_ylim(0, counts["num_modes"] * 1.05)
    else:
        pad = 0.05 * (hi - lo or abs(hi) or 1.0)
        ax.set_ylim(min(0.0, lo - pad), hi + pad)
