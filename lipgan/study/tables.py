"""``study.md``: the study's tables in Markdown, one per data set, with the reference rows, the
stated thresholds, each row against PacGAN4's means with its interval (:mod:`lipgan.study.
pacgan4`) and PacGAN's published numbers beside lipgan's rows (the numbers come from
:mod:`lipgan.study.summary`; here they are only formatted and explained).

One convention (:mod:`lipgan.study.intervals`): a ± is a spread, the standard deviation over
the row's seeds, whose number is in the *seeds* column; an interval in brackets is a 95 %
percentile-bootstrap confidence interval of the mean over seeds.
"""

from __future__ import annotations

import math

from lipgan.study import pacgan4
from lipgan.study.reference_rows import PACGAN, PACGAN_BUDGET, PACGAN_SETUP
from lipgan.study.summary import (
    BEAT_NAMES,
    BEATS_WHAT,
    COLLAPSE_KL,
    COLUMNS,
    THRESHOLDS,
    _stats,
    _steps_text,
    beats,
    ema_never_averaged,
    ema_note,
    extra_columns,
    sd_of,
    summarize,
    threshold_text,
    uniform_reference,
)


def trend(stat, interval: tuple[float, float] | None) -> str:
    """The seeds' mean late change with its 95 % bootstrap interval: *rising* / *falling* when
    the interval lies above / below 0, else *flat*; with one seed (no interval) only the number
    is shown."""
    if stat is None:
        return "–"
    text = f"{stat[0] * 100:+.1f}"
    if interval is None:
        return text
    low, high = interval
    word = "rising" if low > 0 else "falling" if high < 0 else "flat"
    return f"{text} [{low * 100:+.1f}, {high * 100:+.1f}] {word}"


def _fmt(stat, scale: float, digits: int) -> str:
    """``mean ± SD`` over the finite seeds (one seed: the mean alone)."""
    if stat is None:
        return "–"
    mean, _, infinite, count = stat
    if infinite == count:
        return f"∞ [all {count}]"
    sd = sd_of(stat)
    sd_text = "" if math.isnan(sd) else f" ± {sd * scale:.{digits}f}"
    inf_text = f" [∞ in {infinite}/{count}]" if infinite else ""
    return f"{mean * scale:.{digits}f}{sd_text}{inf_text}"


def _fmt_timed(row: dict, key: str, scale: float, digits: int) -> str:
    """A row's column; a timing that fewer seeds measured than the row holds (a finished cell
    run again whose timing was not kept: ``timing_lost``) says over how many it is averaged."""
    stat = row["stats"].get(key)
    text = _fmt(stat, scale, digits)
    if key == "seconds_per_iteration" and _timed(row) < row["seeds"]:
        text += f" [timed {_timed(row)}/{row['seeds']}]"
    return text


def _timed(row: dict) -> int:
    stat = row["stats"].get("seconds_per_iteration")
    return stat[3] if stat else 0


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


def beats_text(failed: list[str]) -> str:
    """A *beats uniform* cell: yes, or **no** with the metrics it fails (:data:`BEAT_NAMES`)."""
    return "yes" if not failed else "**no** (" + ", ".join(BEAT_NAMES[f] for f in failed) + ")"


def markdown(
    spec: dict,
    results: list[dict],
    command: str = "",
    references: dict | None = None,
    total: int | None = None,
) -> str:
    from lipgan.study.reference_rows import BOX
    from lipgan.study.spec import toy_set

    references = references or {}
    extra = extra_columns(references)
    summary = summarize(results, extra=extra)
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
        "deviation (SD) over the seeds that finished (their number: *seeds*); intervals in "
        "brackets are 95 % percentile-bootstrap intervals of the mean over seeds; `[∞ in k/n]`: "
        "k of the n seeds had an infinite value (no high-quality sample), left out of the mean "
        "and SD. A seed is *collapsed* when fewer than half the modes are captured or the "
        f"reverse KL of the mode histogram exceeds {COLLAPSE_KL}."
    )
    lines += [budget, ""]
    if spec.get("eval_every") and any(toy_set(r["cell"]["dataset"]) for r in results):
        lines += [
            f"Quality curve: every {spec['eval_every']} iterations (modes, high quality, reverse KL "
            "on the same samples as the final evaluation; a sliced W1); *iterations to* a "
            "threshold: the median over seeds of the first curve point meeting the threshold "
            "stated in the column header (a seed that never got there counts as never; `(k/n)` "
            "seeds got there); seconds are training seconds (tracing included, evaluations "
            "excluded).",
            "",
        ]
    for dataset, rows in summary.items():
        ref = references.get(dataset)
        ref_stats = (
            {name: _stats(r["cells"], extra) for name, r in ref["rows"].items()} if ref else {}
        )
        all_stats = [r["stats"] for r in rows.values()] + list(ref_stats.values())
        keys = [
            c
            for c in [*COLUMNS, *extra]
            if any(c[0] in st for st in all_stats) and c[0] != "w1_floor"
        ]
        targets = dataset in THRESHOLDS and any("to_target" in r for r in rows.values())
        late = any(r["late_change"] for r in rows.values())
        head = ["constraint", *[title for _, title, *_ in keys]]
        if targets:
            stated = threshold_text(dataset)
            head += [f"iterations to {stated}", f"seconds to {stated}"]
        if late:
            head.append("HQ change, last quarter (pp)")
        if BOX in ref_stats:
            head.append(f"beats uniform noise ({BEATS_WHAT.replace(' and ', ', ')})")
        head += ["seeds", "failed", "collapsed"]
        lines += [f"## {dataset}", ""]
        if ref and ref.get("about"):  # a user data set (lipgan.study.own_metrics)
            lines += [ref["about"], ""]
        if ref and ref.get("image"):
            lines += [
                f"Image scores: {', '.join(f'`{m}`' for m in ref['metrics'])} (docs/metrics.md), "
                f"on {spec['eval_samples']:,} samples against as many real ones.",
                "",
            ]
        if ref and ref.get("floor"):
            floor = ref["floor"]
            sd = floor["se"] * math.sqrt(floor["pairs"])
            lines += [
                f"W1 floor (real vs real, n = {floor['n']}): **{floor['mean']:.4f}** ± "
                f"{sd:.4f} (SD over {floor['pairs']} pairs).",
                "",
            ]
        if targets:
            lines += [
                f"Threshold of *iterations to* (per seed, first curve point): "
                f"{threshold_text(dataset)}; relaxed from PacGAN4's means, which are checked "
                "below the table at the final evaluation.",
                "",
            ]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        mine = [r for r in results if r["cell"]["dataset"] == dataset]
        for constraint, row in rows.items():
            cols = [_fmt_timed(row, k, scale, d) for k, _, scale, d in keys]
            if targets:
                cols += [_fmt_target(row, "iterations"), _fmt_target(row, "seconds")]
            if late:
                cols.append(trend(row["late_change"], row.get("late_interval")))
            if BOX in ref_stats:
                cols.append(beats_text(beats(row["stats"], uniform_reference(ref_stats))))
            never = ema_never_averaged([r for r in mine if r["cell"]["constraint"] == constraint])
            name = f"{constraint} ({ema_note(never)})" if never else constraint
            lines.append(
                f"| {name} | "
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
        if ref and ref.get("image"):
            lines += [
                "",
                "Italic rows learn nothing, scored on the same metrics and seeds: *real data* "
                "is a second real sample disjoint from the first, the real-vs-real floor (what "
                "a perfect generator scores; FID and KID are biased upward at small n, so it is "
                "not 0; a data set with fewer than 2n examples gives it at n = half its size, "
                "as the row says; a metric scored against a reference of its own, such as the "
                "digits FD's all training digits, scores real examples outside it instead, as the "
                "row says), and *uniform noise* is every pixel uniform on [−1, 1] "
                "against the cells' real sample (what no training scores).",
            ]
        elif ref:
            lines += [
                "",
                "Italic rows learn nothing: samplers scored on the same metrics, sample count and "
                "seeds. A constraint row that does not beat uniform noise on the bounding box on "
                "every one of modes, high quality, reverse KL (what the noise scores in "
                "expectation, means over many draws) and W1 (its mean over the seeds above) says "
                "**no** in *beats uniform noise*, with the metrics it fails.",
            ]
        if late:
            lines += [
                "",
                "*HQ change, last quarter*: per seed, the mean high-quality % of the curve points "
                "in the budget's last quarter minus that of the third quarter, in percentage "
                "points, mean [95 % bootstrap interval] over seeds; *rising* or *falling* when the "
                "interval lies above or below 0, else *flat*. A row short of its target and *rising* "
                "ran out of budget; one that is *flat* has stopped improving at this config. Where "
                "the learning rate decays to 0 at the budget's end (the ring and grid configs), "
                "part of a late rise is that decay, so *rising* does not promise that a longer "
                "budget at the same schedule gets there.",
            ]
        if any(k == "seconds_per_iteration" for k, *_ in keys) and any(
            _timed(r) < r["seeds"] for r in rows.values()
        ):
            lines += [
                "",
                "*[timed k/n]*: the ms / iteration of k of the row's n seeds; the others were "
                "finished cells run again whose training time was not kept (see their "
                "`result.json`, `timing_lost`).",
            ]
        if any("critic_gap_ratio" in r["stats"] for r in rows.values()):
            lines += [
                "",
                "*critic gap / W1*: the critic's mean D(real) − mean D(fake) on the evaluation "
                "samples over the exact W1; a 1-Lipschitz critic gives ≤ 1, so a ratio above 1 "
                "means the critic is not 1-Lipschitz and its gap is not a W1 estimate.",
            ]
        at_means = {c: r["pacgan4"] for c, r in rows.items() if r.get("pacgan4")}
        if at_means:
            lines += ["", *pacgan4.table_lines(dataset, at_means)]
        if dataset in PACGAN:
            lines += [
                "",
                "PacGAN (Lin et al. 2018, Table 1, mean ± standard error over 10 trials as "
                f"published; their own training: {PACGAN_SETUP}; "
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
