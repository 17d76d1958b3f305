"""A tuned study's report: ``tune.md`` (tables), ``tune.json`` (every number), ``tune.png``
(the search), and the replicates' study report under ``final/`` (:mod:`lipgan.study.report`).

The replicates train once with a generator EMA and are measured twice (the EMA and the raw
generator of the same run, :data:`lipgan.study.curve.NO_EMA`); :func:`split_ema` turns each into
two study results, rows ``SPEC`` and ``SPEC +EMA``, so every table and figure of the study report
applies unchanged.

*Best of k* is Lucic et al. 2018's view of a search (Fig. 5, "expected best score for a budget of
k configs"): the expected maximum of k configs drawn without replacement from the K tried,
computed exactly from the K sorted scores, E[max] = Σᵢ C(i−1, k−1)/C(K, k)·s₍ᵢ₎.

Seconds to target are iterations to target times the row's seconds per iteration from a quiet
side-by-side bench of the chosen rows (``bench.json``, :mod:`lipgan.study.row_bench`), not the
cells' own clocks, which ran under whatever else the machine was doing.
"""

from __future__ import annotations

import copy
import math
from math import comb
from pathlib import Path

import numpy as np

from lipgan.study import ema_choice, halving, pacgan4, report, search, sessions, tune_images
from lipgan.study.curve import NO_EMA, decay_key, samples_file
from lipgan.study.ema_choice import at_decay
from lipgan.study.figure import short_label
from lipgan.study.reference_rows import PACGAN
from lipgan.study.spec import EVAL_SAMPLES, dumps
from lipgan.study.summary import (
    BEATS_WHAT,
    EMA_SUFFIX,
    THRESHOLDS,
    _stats,
    beats,
    ema_note,
    extra_columns,
    summarize,
    threshold_text,
    uniform_reference,
)
from lipgan.study.tables import _fmt, _fmt_target, beats_text
from lipgan.study.tune_images import SHARED


def split_ema(result: dict, decay: str | None = None, sampled: bool = True) -> list[dict]:
    """``[raw, ema]`` study results of a replicate measured with and without its EMA (``[result]``
    for one without); the EMA row's constraint is ``SPEC +EMA``, at decay key ``decay`` when the
    run kept several (:func:`lipgan.study.ema_choice.at_decay`; None: the sampling one). The
    run's ``samples.npy`` holds the sampling EMA's samples, another decay's (``sampled`` False)
    are in ``samples_file``: ``samples_cell`` says whose run dir a row's samples are in (None for
    the raw row, whose samples are not kept), for the figure (:mod:`lipgan.study.figure`)."""
    metrics = result.get("metrics") or {}
    if result.get("status") != "ok" or NO_EMA not in metrics:
        return [result]
    ema = copy.deepcopy(result)
    ema["samples_cell"] = copy.deepcopy(result["cell"])
    if not sampled:
        ema["samples_file"] = samples_file(decay)
    ema["cell"]["constraint"] += EMA_SUFFIX
    ema["metrics"] = at_decay(metrics, decay)
    ema["curve"] = [at_decay(p, decay) for p in result.get("curve", [])]
    raw = copy.deepcopy(result)
    raw["metrics"] = dict(metrics[NO_EMA])
    raw["samples_cell"] = None
    raw["curve"] = [
        {"step": p["step"], "seconds": p["seconds"], **p.get(NO_EMA, {})}
        for p in result.get("curve", [])
    ]
    return [raw, ema]


def expected_best(scores: list[float]) -> list[float]:
    """Expected best of k configs drawn without replacement from ``scores``, for k = 1..K."""
    s = sorted(scores)
    n = len(s)
    return [
        sum(comb(i - 1, k - 1) * s[i - 1] for i in range(k, n + 1)) / comb(n, k)
        for k in range(1, n + 1)
    ]


def _hq(result: dict | None) -> float:
    value = ((result or {}).get("metrics") or {}).get("high_quality_fraction")
    ok = (result or {}).get("status") == "ok" and value is not None
    return float(value) if ok and math.isfinite(value) else 0.0


def _w1(result: dict | None) -> float | None:
    value = ((result or {}).get("metrics") or {}).get("w1")
    ok = (result or {}).get("status") == "ok" and value is not None
    return float(value) if ok and math.isfinite(value) else None


def search_summary(spec, searched: dict) -> dict:
    """{data set: {constraint: {'hq', 'w1': [per config], 'failed', 'best_of_k',
    'best_of_k_w1'}}}. HQ as fractions, a failed trial scoring 0 as it would for a user; W1 (the
    choice's criterion, lower is better) is None for a failed trial, whose distance is unknown,
    and its best of k is taken over the finished trials. An image data set's rows hold its ranked
    value instead (:func:`lipgan.study.tune_images.search_row`)."""
    out: dict = {}
    for cell, result in searched.items():
        row = out.setdefault(cell.dataset, {}).setdefault(
            cell.constraint, {"trials": {}, "failed": 0}
        )
        key = spec.score_key(cell.dataset)
        trial = tune_images.trial_value(result, key) if key else (_hq(result), _w1(result))
        row["trials"][cell.trial] = trial
        row["failed"] += result.get("status") != "ok"
    for dataset, rows in out.items():
        for row in rows.values():
            trials = row.pop("trials")
            if key := spec.score_key(dataset):
                values = [trials[k] for k in sorted(trials)]
                row.update(tune_images.search_row(key, values, expected_best))
                continue
            row["hq"] = [trials[k][0] for k in sorted(trials)]
            row["w1"] = [trials[k][1] for k in sorted(trials)]
            row["best_of_k"] = expected_best(row["hq"])
            finished = [-w for w in row["w1"] if w is not None]
            row["best_of_k_w1"] = [-b for b in expected_best(finished)]
    return out


def bench_seconds(bench: dict | None, dataset: str, constraint: str) -> float | None:
    for row in (bench or {}).get("rows", []):
        if row["dataset"] == dataset and row["constraint"] == constraint:
            return row["seconds_per_iteration"]
    return None


def shared_rows(study_dirs) -> dict:
    """{data set: {constraint: row}} of the shared-config studies in ``study_dirs`` (their
    ``study.json`` summaries), to print beside the tuned rows."""
    import json

    out: dict = {}
    for directory in study_dirs or ():
        path = Path(directory) / "study.json"
        try:
            summary = json.loads(path.read_text())["summary"]
        except (OSError, ValueError, KeyError):
            from lipgan.core.errors import ConfigError

            raise ConfigError(
                f"--shared {directory}: no study report there (study.json); give the dir of a "
                "finished `lipgan study`"
            ) from None
        for dataset, rows in summary.items():
            out.setdefault(dataset, {}).update(rows)
    return out


def markdown(
    spec, search_rows, chosen, final_summary, references, command, bench, total, shared=None,
    decays=None, progress=None,
) -> str:  # fmt: skip
    """tune.md's text. ``progress``: how far an unfinished halving search is
    (:class:`lipgan.study.halving.SearchState`); its rows then show each search's leader."""
    from lipgan.study.reference_rows import BOX, BOX_EXPECTED, REAL

    lines = ["# lipgan tuned study: each constraint at its own best", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    done_final = sum(r["seeds"] + r["failed"] for d in final_summary.values() for r in d.values())
    if progress is not None:
        lines += [
            f"**PARTIAL: {halving.partial_line(progress, spec.halving.rungs)}; {done_final} of "
            f"{total['final']} replicate runs (× 2 rows: raw and EMA) finished.**",
            "",
        ]
    elif total["search_done"] < total["search"] or done_final < total["final"]:
        lines += [
            f"**PARTIAL: {total['search_done']} of {total['search']} search trials and "
            f"{done_final} of {total['final']} replicate runs (× 2 rows: raw and EMA) finished.**",
            "",
        ]
    lines += [
        f"Protocol (Lucic et al. 2018): per data set and constraint, {spec.configs} configs drawn "
        f"from the constraint's ranges (below), {halving.protocol(spec)} (Lucic et al. choose "
        f"by FID{tune_images.choice_words(spec)}) is re-run at the full "
        f"budget over {spec.seeds} fresh seeds, with a generator EMA ({_decays_text(spec)}, "
        f"from iteration {spec.ema_start:,}) measured beside the raw generator of the same run. "
        f"Rows: mean ± standard deviation over the {spec.seeds} seeds (a spread; intervals in "
        "brackets are 95 % percentile-bootstrap intervals of the mean over seeds), each seed "
        f"evaluated on {spec.eval_samples:,} samples"
        + (" (PacGAN's protocol). " if spec.eval_samples == EVAL_SAMPLES else ". ")
        + "*Shared config* rows (`--shared`): the same constraint in a `lipgan study` at the data "
        "set config's own settings, shared by every constraint.",
        "",
    ]
    if any(not spec.score_key(d) for d in spec.datasets):  # a point set's columns
        lines += [
            f"*Beats uniform ({BEATS_WHAT})*: the row beats uniform noise on the data's bounding "
            "box on every one of modes, high quality and reverse KL (what the noise scores in "
            "expectation) and W1 (its mean over the seeds' draws, the *uniform* row's W1); **no** "
            "names the metrics it fails. *Iterations to* the threshold "
            "in the column header: the median over seeds of the first curve point meeting it "
            "(`(k/n)` seeds got there; *never* when the median seed did not); the threshold is "
            "relaxed from PacGAN4's means, which each row is checked against, with intervals, below "
            "its table. *Seconds to* it: those iterations × the row's seconds per iteration in a "
            "quiet side-by-side bench (bench.json).",
            "",
        ]
    lines += [sessions.wall_line(total.get("wall")), ""]
    if bench:
        lines += [f"Bench: {bench.get('machine', '?')}; `{bench.get('command', '')}`.", ""]
    for dataset in spec.datasets:
        if spec.score_key(dataset):  # an image data set: its own table (lipgan.study.tune_images)
            lines += tune_images.section(
                spec, dataset, search_rows, chosen, final_summary, references, decays, shared,
                ema_never_averaged(spec, dataset), halving.chosen_column(progress),
            )  # fmt: skip
            continue
        ref = references.get(dataset) or {}
        ref_stats = {n: _stats(r["cells"]) for n, r in (ref.get("rows") or {}).items()}
        uniform = uniform_reference(ref_stats)
        stated = threshold_text(dataset) if dataset in THRESHOLDS else "threshold"
        lines += [f"## {dataset}", ""]
        if ref.get("about"):  # a user data set (lipgan.study.own_metrics)
            lines += [ref["about"], ""]
        at_means = {}
        head = [
            "constraint",
            halving.chosen_column(progress),
            f"search of {spec.configs}: W1 {_who(progress)} / median; HQ % {_who(progress)} / "
            "best" + _halving_clause(spec, progress),
            "modes",
            "high quality %",
            "reverse KL",
            "W1",
            f"beats uniform ({BEATS_WHAT.replace(' and ', ', ')})",
            f"iterations to {stated}",
            f"seconds to {stated}",
        ]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for constraint in spec.constraints:
            s = search_rows.get(dataset, {}).get(constraint)
            hq = s["hq"] if s else []
            found = chosen.get((dataset, constraint))
            config = search.describe(found["config"]) if found and hq else "–"
            if hq and len(hq) < spec.configs:
                config += f" (best of {len(hq)} so far)"
            searched = (
                _searched(s, found) + (f" ({s['failed']} failed)" if s["failed"] else "")
                if hq and found
                else "–"
            )
            labels = [constraint, constraint + EMA_SUFFIX]
            if constraint in (shared or {}).get(dataset, {}):
                labels.append(SHARED)
            for label in labels:
                row = (
                    shared[dataset][constraint]
                    if label == SHARED
                    else final_summary.get(dataset, {}).get(label)
                )
                if row is None:
                    cols = ["–"] * 7
                else:
                    if row.get("pacgan4"):
                        at_means[
                            short_label(label)
                            if label != SHARED
                            else f"{short_label(constraint)}, shared config"
                        ] = row["pacgan4"]
                    st = row["stats"]
                    seconds = None if label == SHARED else bench_seconds(bench, dataset, constraint)
                    cols = [
                        _fmt(st.get("modes_covered"), 1.0, 1),
                        _fmt(st.get("high_quality_fraction"), 100.0, 1),
                        _fmt(st.get("reverse_kl"), 1.0, 3),
                        _fmt(st.get("w1"), 1.0, 3),
                        beats_text(beats(st, uniform)) if uniform else "?",
                        _fmt_target(row, "iterations"),
                        _seconds_to_target(row, seconds),
                    ]
                shown = {constraint: config, SHARED: "the shared config"}.get(
                    label, "same runs, EMA" + ema_choice.label(decays or {}, dataset, constraint)
                )
                if label == constraint + EMA_SUFFIX and (
                    never := ema_never_averaged(spec, dataset)
                ):
                    shown += f" ({ema_note(never)})"
                name = (
                    f"{short_label(constraint)}, shared config"
                    if label == SHARED
                    else short_label(label)
                )
                lines.append(
                    f"| {name} | {shown} | "
                    + (searched if label == constraint else "")
                    + " | "
                    + " | ".join(cols)
                    + " |"
                )
        for name in (REAL, BOX_EXPECTED if BOX_EXPECTED in ref_stats else BOX):
            st = uniform if name != REAL else ref_stats.get(name)
            if st:
                cols = [
                    _fmt(st.get("modes_covered"), 1.0, 1),
                    _fmt(st.get("high_quality_fraction"), 100.0, 1),
                    _fmt(st.get("reverse_kl"), 1.0, 3),
                    _fmt(st.get("w1"), 1.0, 3),
                ]
                lines.append(f"| *{name}* | – | – | " + " | ".join(cols) + " | – | – | – |")
        for method, modes, hq, kl in PACGAN.get(dataset, []):
            if method == "PacGAN4":
                lines.append(
                    f"| *PacGAN4 (Lin et al. 2018; ± s.e. over 10 trials, as published)* | – | – "
                    f"| {modes} | {hq} | {kl} | – | – | – "
                    "| – |"
                )
        if at_means:
            lines += ["", *pacgan4.table_lines(dataset, at_means)]
        lines.append("")
    lines += ["## Search ranges", ""]
    for constraint in spec.constraints:
        name = constraint.split(":")[0]
        ranges = ", ".join(f"{k}: {r.describe()}" for k, r in search.space(name).items())
        fixed = "; ".join(search.fixed(name))
        lines.append(f"- **{name}**: {ranges}" + (f"; fixed: {fixed}" if fixed else ""))
    lines += [
        "",
        "The replicates' full report (curves, scatter plots, every column) is `final/study.md`.",
        "",
    ]
    return "\n".join(lines)


def _decays_text(spec) -> str:
    if len(spec.ema_decays) == 1:
        return f"decay {spec.ema_decay}"
    return f"decays {', '.join(map(str, spec.ema_decays))}, one chosen per row (below)"


def ema_never_averaged(spec, dataset: str) -> tuple[int, int] | None:
    """(steps, ema_start) when the replicates of ``dataset`` end before their EMA starts to
    average (:func:`lipgan.study.summary.ema_never_averaged`), so each ``+EMA`` row equals the
    raw row of the same runs; None otherwise."""
    steps = spec.full_steps(dataset)
    return (steps, spec.ema_start) if steps <= spec.ema_start else None


def _who(progress) -> str:
    return "chosen" if progress is None else "leader"


def _halving_clause(spec, progress) -> str:
    """Which rung the search column's numbers come from, for a halving search."""
    if spec.search != "halving":
        return ""
    if progress is not None:
        return f" (leading: rung {progress['rung']}; median, best: first rung)"
    return " (chosen: full budget; median, best: first rung)"


def _searched(row: dict, found: dict) -> str:
    """The chosen config's W1 and high quality in its search beside the search's median W1 and
    best high quality (a failed trial's W1 is unknown: the median is over the finished ones)."""
    chosen_w1, chosen_hq = -found["score"][0], found["score"][1]
    finished = [w for w in row["w1"] if w is not None]
    median = f"{float(np.median(finished)):.3f}" if finished else "–"
    return f"{chosen_w1:.3f} / {median}; {100 * chosen_hq:.1f} / {100 * max(row['hq']):.1f}"


def _seconds_to_target(row: dict, seconds_per_iteration: float | None) -> str:
    hit = row.get("to_target")
    if not hit or seconds_per_iteration is None:
        return "–"
    iterations = hit["iterations"]
    if math.isinf(iterations):
        return f"never ({hit['reached']}/{hit['of']})"
    return f"{iterations * seconds_per_iteration:.0f} ({hit['reached']}/{hit['of']})"


def figure(
    path: Path, spec, search_rows: dict, chosen: dict | None = None, references: dict | None = None,
    progress: dict | None = None,
) -> None:  # fmt: skip
    """``tune.png`` (:func:`lipgan.study.tune_figure.draw`; ``progress`` as :func:`write`'s)."""
    from lipgan.plots import pyplot
    from lipgan.study.tune_figure import draw

    fig = draw(spec, search_rows, chosen, references, halving.chosen_column(progress))
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def write(
    out: Path, spec, searched, chosen, final, command="", log=None, bench=None, shared_dirs=(),
    progress=None,
) -> dict:  # fmt: skip
    """tune.md/json/png, and the replicates' study report under ``out/final``. ``progress``: an
    unfinished halving search's (:class:`lipgan.study.halving.SearchState`), None otherwise."""
    from lipgan.study import references as refs

    out = Path(out)
    shared = shared_rows(shared_dirs)
    search_rows = search_summary(spec, searched)
    decays = ema_choice.choose(spec, final)
    first = decay_key(spec.ema_decays[0])
    split = []
    for cell, result in final.items():
        picked = decays.get((cell.dataset, cell.constraint), {}).get("decay")
        split += split_ema(result, picked, picked in (None, first))
    references = refs.load_or_compute(
        out, list(spec.datasets), spec.eval_samples, spec.seeds, log,
        metrics=spec.metrics, bindings=spec.bindings,
    )  # fmt: skip
    paths = {"markdown": out / "tune.md", "json": out / "tune.json", "figure": out / "tune.png"}
    final_summary = summarize(split, extra=extra_columns(references)) if split else {}
    total = {
        "search": len(spec.datasets) * len(spec.constraints) * spec.configs,
        "search_done": len(searched),
        "final": len(spec.datasets) * len(spec.constraints) * spec.seeds,
        "wall": sessions.wall_time(out / "search", out / "final"),
    }
    if split:
        final_spec = {
            "constraints": [c + s for c in spec.constraints for s in ("", EMA_SUFFIX)],
            "datasets": list(spec.datasets),
            "seeds": spec.seeds,
            "steps": spec.steps,
            "eval_samples": spec.eval_samples,
            "eval_every": spec.eval_every,
            "bindings": [],
            "smoke_test": False,
        }
        if any(spec.score_key(d) for d in spec.datasets):  # the image reference rows' definition
            final_spec.update(metrics=list(spec.metrics), bindings=list(spec.bindings))
        (out / "final").mkdir(parents=True, exist_ok=True)
        cache = out / "final" / "references.json"
        if not cache.is_file() and (out / "references.json").is_file():  # the same rows
            cache.write_bytes((out / "references.json").read_bytes())
        expected_final = 2 * len(spec.datasets) * len(spec.constraints) * spec.seeds
        final_paths = report.write(out / "final", final_spec, split, command, log, expected_final)
        paths.update({f"final_{k}": v for k, v in final_paths.items()})
    payload = {
        "spec": spec.as_dict(),
        "command": command,
        "search": search_rows,
        "chosen": [
            {"dataset": d, "constraint": c, "trial": v["trial"], "config": v["config"]}
            for (d, c), v in chosen.items()
        ],
        "final": final_summary,
        "bench": bench,
        "shared": {"dirs": [str(d) for d in shared_dirs], "rows": shared},
        "totals": total,
        "search_progress": progress,
    }
    if decays:
        payload["ema_decays"] = ema_choice.as_json(decays)
    paths["json"].write_text(dumps(payload))
    text = markdown(
        spec, search_rows, chosen, final_summary, references, command, bench, total, shared,
        decays, progress,
    )  # fmt: skip
    text += ema_choice.section(spec, decays)
    if spec.search == "halving":
        text += halving.section(out, spec)
    paths["markdown"].write_text(text)
    points = {d: rows for d, rows in search_rows.items() if not spec.score_key(d)}
    if points:  # the figure's W1 and high quality are a point set's (tune_figure)
        figure(paths["figure"], spec, points, chosen, references, progress)
    else:
        paths.pop("figure")
    return paths
