"""``study.png``: the study's figure laid out, per data set, from the study's numbers
(:mod:`lipgan.study.summary`) and the cells' samples; the panels themselves are drawn by
:mod:`lipgan.plots.study`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lipgan.study.summary import (
    BEATS_WHAT,
    COLUMNS,
    _stats,
    _steps_text,
    beats,
    ema_never_averaged,
    ema_note,
    mean_se,
    sd_of,
    summarize,
    uniform_reference,
)

#: The metric that picks a constraint's median seed for the figure: W1 (toys), FD (digits), FID.
MEDIAN_BY = ("w1", "digits_fd", "fid")


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


#: The most reference lines a curve panel's legend lists (real data, three uniform rows, PacGAN4).
LEGEND_REFERENCES = 5
#: Curve panels: (key, title, scale, log y).
CURVE_PANELS = [
    ("modes_covered", "modes captured", 1.0, False),
    ("high_quality_fraction", "high quality %", 100.0, False),
    ("reverse_kl", "reverse KL (finite seeds)", 1.0, True),
    ("sliced_w1", "sliced W1", 1.0, True),
]


def with_sd(stat):
    """A :func:`lipgan.study.summary.mean_se` tuple with its s.e. replaced by the SD over seeds:
    the figure's bars and bands show the seeds' spread, as the tables' ± do."""
    return None if stat is None else (stat[0], sd_of(stat), *stat[2:])


def curve_bands(results: list[dict]) -> dict:
    """{constraint: {'step': [...], 'seconds': [...], key: [(mean, SD, ∞, n), ...]}} over the
    seeds' curves of one data set, at the steps every seed of the row recorded; seconds are the mean
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
            band[key] = [with_sd(mean_se([a[s].get(key) for a in at])) for s in steps]
        out[constraint] = band
    return out


def short_label(constraint: str) -> str:
    """A row's name for a figure: ``bjorck:mlp_critic.activation=maxmin,dcgan_critic.activation=
    maxmin`` becomes ``bjorck [maxmin]`` (a binding's value once, however many configurables it
    sets), ``gradient_penalty:every=4`` becomes ``gradient_penalty [every=4]``. The table keeps
    the full spec, which is what the command line says. A row label's words after the spec (a
    tuned study's ``SPEC +EMA``) are kept after the short name: ``bjorck [maxmin] +EMA``."""
    from lipgan.core.errors import ConfigError
    from lipgan.core.plugin_spec import parse_spec

    spec, space, suffix = constraint.partition(" ")
    if space:
        return f"{short_label(spec)} {suffix}"
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
            max(5.2, 0.19 * (len(bands) + LEGEND_REFERENCES) + 1.0) if bands else 0.0,
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
    never = {
        c: n
        for c in rows
        if (n := ema_never_averaged([r for r in results if r["cell"]["constraint"] == c]))
    }
    title = (
        f"{dataset}: {len(rows)} constraint{'s' if len(rows) != 1 else ''} × {seeds} "
        f"seed{'s' if seeds != 1 else ''}, "
        f"{_steps_text(results, {})} iterations"
    )
    if never:  # why a +EMA row shows the very numbers of its raw row
        title += f"\n+EMA rows {ema_note(max(never.values()))}"
    fig.suptitle(title, fontweight="bold", fontsize=panels.FONT_SIZE + 3)
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
    elif reference and reference.get("own_data"):  # a user data set: its held-out rows
        from lipgan.study.own_data import study_file
        from lipgan.study.own_metrics import real_points

        if (path := study_file(out, dataset)) is not None:
            real = real_points(path)
    samples = [
        _median_samples(out, [r for r in results if r["cell"]["constraint"] == c]) for c in rows
    ]
    names = {c: short_label(c) + (" (= raw)" if c in never else "") for c in rows}
    panels.sample_panels(
        next(parts),
        [
            {"title": names[c], "color": colors[c], "samples": xy, "seed": seed, "note": note}
            for c, (xy, seed, note) in zip(rows, samples, strict=True)
        ],
        real,
    )
    uniform = uniform_reference(
        {n: _stats(r["cells"]) for n, r in ((reference or {}).get("rows") or {}).items()}
    )
    losing = {c for c in rows if uniform and beats(rows[c]["stats"], uniform)}
    if keys:
        panels.bar_panels(
            next(parts),
            [("✗ " if c in losing else "") + names[c] for c in rows],
            [colors[c] for c in rows],
            [
                (key, scale, [with_sd(rows[c]["stats"].get(key)) for c in rows])
                for key, _, scale, _ in keys
            ],
            reference_means(reference, [k for k, *_ in keys]) | pacgan_level(dataset),
            counts,
            note=f"✗: does not beat uniform noise on all of {BEATS_WHAT}" if losing else "",
        )
    if bands:
        panels.curve_panels(
            next(parts),
            {names[c]: (colors[c], band) for c, band in bands.items()},
            CURVE_PANELS,
            reference_means(reference, [k for k, *_ in CURVE_PANELS]) | pacgan_level(dataset),
            counts,
        )


def _median_samples(out: Path, results: list[dict]) -> tuple:
    """(samples.npy of the row's median seed, or None when it has none; that seed; why there
    are none, or ""). A tuned study's rows say whose run dir holds their samples
    (``samples_cell``, :func:`lipgan.study.tune_report.split_ema`): the run's, which are the
    EMA's, for the ``+EMA`` row; none kept for the raw row of a run with an EMA."""
    from lipgan.study.spec import Cell, cell_dir

    median = _median_cell(results)
    if median is None:
        return None, None, ""
    seed = median["cell"]["seed"]
    if median.get("samples_cell", median["cell"]) is None:
        return None, seed, "raw generator's\nsamples not kept\n(the run kept\nthe EMA's)"
    cell = Cell.from_dict(median.get("samples_cell") or median["cell"])
    path = cell_dir(out, cell) / median.get("samples_file", "samples.npy")  # EMA: ema_choice
    return (np.load(path) if path.is_file() else None), seed, ""


#: PacGAN4's row of :data:`lipgan.study.reference_rows.PACGAN`, as a reference line's name.
PACGAN4 = "PacGAN4 (Lin et al. 2018)"


def pacgan_level(dataset: str) -> dict:
    """{:data:`PACGAN4`: {key: mean_se}}: PacGAN4's published means (Lin et al. 2018, Table 1)
    on ``dataset``, a reference line; {} for a data set PacGAN did not report."""
    from lipgan.study.reference_rows import PACGAN

    for method, modes, hq, kl in PACGAN.get(dataset, []):
        if method == "PacGAN4":
            values = [float(text.split("±")[0]) for text in (modes, hq, kl)]
            keys = ("modes_covered", "high_quality_fraction", "reverse_kl")
            scales = (1.0, 0.01, 1.0)  # high quality is published in %, stored as a fraction
            return {
                PACGAN4: {
                    k: (v * s, math.nan, 0, 10)
                    for k, v, s in zip(keys, values, scales, strict=True)
                }
            }
    return {}


def reference_means(reference: dict | None, keys) -> dict:
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
