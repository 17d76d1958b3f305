"""A tuned study's report on an image data set (digits, CIFAR-10): its search and rows.

A point set's table (:func:`lipgan.study.tune_report.markdown`) shows PacGAN's mode metrics and
the exact W1 the search ranks by; an image data set has neither. Its table shows instead the
image scores the study records (``--metric``, or :data:`lipgan.study.spec.IMAGE_METRICS`) per
row, as mean ± SD over the seeds from the same numbers and formatting as ``lipgan study``'s image
rows (:func:`lipgan.study.summary.summarize`, :func:`lipgan.study.tables._fmt`), beside the same
reference rows, scored on the same metrics and seeds (:mod:`lipgan.study.image_references`: a
second real sample, the real-vs-real floor, and uniform noise). The search column gives the
value the search ranked by (:meth:`lipgan.study.tune.TuneSpec.score_key`, lower is better) for
the chosen config beside the search's median.
"""

from __future__ import annotations

import math

import numpy as np

from lipgan.study import search
from lipgan.study.figure import short_label
from lipgan.study.summary import COLUMNS, EMA_SUFFIX, _stats, ema_note, extra_columns
from lipgan.study.tables import _fmt


def choice_words(spec) -> str:
    """The report's protocol line on an image data set's choice ("" with none, so that a
    point-set study's report reads as before)."""
    if not any(spec.score_key(d) for d in spec.datasets):
        return ""
    return "; on an image data set the lowest value of its first image metric, named in its table"


def trial_value(result: dict | None, key: str) -> float | None:
    """A search trial's ranked value as :func:`lipgan.study.search.score` reads it; None for a
    trial that scores nothing (failed, or its value missing or NaN)."""
    (negated,) = search.score(result, key)
    return -negated if math.isfinite(negated) else None


def search_row(key: str, values: list[float | None], expected_best) -> dict:
    """A search's summary on an image data set: ``{'key', 'values' (per config, None when it
    failed), 'best_of_k'}``, ``expected_best`` (:func:`lipgan.study.tune_report.expected_best`)
    of k over the finished configs, lower is better."""
    finished = [-v for v in values if v is not None]
    return {"key": key, "values": values, "best_of_k": [-b for b in expected_best(finished)]}


def columns(rows: list[dict], ref_stats: dict, references: dict) -> list[tuple]:
    """The report's columns of an image data set: those of :data:`lipgan.study.summary.COLUMNS`
    (and a plugin metric's, :func:`~lipgan.study.summary.extra_columns`) that a row holds."""
    every = [r["stats"] for r in rows] + list(ref_stats.values())
    return [
        c
        for c in [*COLUMNS, *extra_columns(references)]
        if any(c[0] in st for st in every) and c[0] != "w1_floor"
    ]


#: A ``--shared`` study's row (:func:`lipgan.study.tune_report.shared_rows`).
SHARED = "shared config"


def section(
    spec, dataset, search_rows, chosen, final_summary, references, decays=None, shared=None,
    never=None, chosen_title="chosen config",
) -> list[str]:  # fmt: skip
    """The lines of ``dataset``'s part of ``tune.md``: a note on its scores, and one table.
    ``never``: :func:`lipgan.study.tune_report.ema_never_averaged` of ``dataset``;
    ``chosen_title``: the config column's name (a search under way has leaders, not choices)."""
    from lipgan.study import ema_choice

    key = spec.score_key(dataset)
    ref = references.get(dataset) or {}
    ref_stats = {
        n: _stats(r["cells"], extra_columns(references)) for n, r in (ref.get("rows") or {}).items()
    }
    finals = final_summary.get(dataset, {})
    shared = (shared or {}).get(dataset, {})
    keys = columns([*finals.values(), *shared.values()], ref_stats, references)
    metrics = ref.get("metrics") or []
    lines = [
        f"## {dataset}",
        "",
        f"Image scores: {', '.join(f'`{m}`' for m in metrics)} (docs/metrics.md), on "
        f"{spec.eval_samples:,} samples against as many real ones. The search ranks by `{key}` "
        "(lower is better; a failed or NaN trial is never chosen); mean ± SD over the seeds.",
        "",
    ]
    head = [
        "constraint",
        chosen_title,
        f"search of {spec.configs}: {key} chosen / median",
        *[title for _, title, *_ in keys],
        "seeds",
        "failed",
    ]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for constraint in spec.constraints:
        s = search_rows.get(dataset, {}).get(constraint)
        found = chosen.get((dataset, constraint))
        config, searched = _search_cells(spec, s, found)
        labels = [constraint, constraint + EMA_SUFFIX] + ([SHARED] if constraint in shared else [])
        for label in labels:
            row = shared[constraint] if label == SHARED else finals.get(label)
            cols = [_fmt(row["stats"].get(k), scale, d) for k, _, scale, d in keys] if row else []
            cols = cols or ["–"] * len(keys)
            counts = [str(row["seeds"]), str(row["failed"])] if row else ["–", "–"]
            if label == constraint:
                shown = config
            elif label == SHARED:
                shown = "the shared config"
            else:
                shown = "same runs, EMA" + ema_choice.label(decays or {}, dataset, constraint)
                if never:
                    shown += f" ({ema_note(never)})"
            name = (
                f"{short_label(constraint)}, shared config"
                if label == SHARED
                else short_label(label)
            )
            search_cell = searched if label == constraint else ""
            lines.append(
                f"| {name} | {shown} | {search_cell} | " + " | ".join(cols + counts) + " |"
            )
    for name, st in ref_stats.items():
        cols = [_fmt(st.get(k), scale, d) for k, _, scale, d in keys]
        what = ref["rows"][name]["what"]
        seeds = len(ref["rows"][name]["cells"])
        lines.append(f"| *{name}: {what}* | – | – | " + " | ".join(cols) + f" | {seeds} | – |")
    if ref_stats:
        lines += [
            "",
            "Italic rows learn nothing, scored on the same metrics and seeds: *real data* is a "
            "second real sample disjoint from the first, the real-vs-real floor (FID and KID are "
            "biased upward at small n, so it is not 0; a metric scored against a reference of "
            "its own, such as the digits FD's all training digits, scores real examples outside "
            "it instead, as the row says), and *uniform noise* is every pixel "
            "uniform on [−1, 1] against the cells' real sample (what no training scores).",
        ]
    lines.append("")
    return lines


def _search_cells(spec, row: dict | None, found: dict | None) -> tuple[str, str]:
    """(the chosen config's words, its ranked value / the search's median) for a row."""
    values = (row or {}).get("values") or []
    if not values or not found:
        return "–", "–"
    config = search.describe(found["config"])
    if len(values) < spec.configs:
        config += f" (best of {len(values)} so far)"
    finished = [v for v in values if v is not None]
    median = f"{float(np.median(finished)):.3f}" if finished else "–"
    value = -found["score"][0]
    text = f"{value:.3f} / {median}" if math.isfinite(value) else f"– / {median}"
    failed = len(values) - len(finished)
    return config, text + (f" ({failed} failed)" if failed else "")
