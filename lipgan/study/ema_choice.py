"""The replicates' EMA decay, chosen like any other setting from the same runs.

A tuned study with several decays (``lipgan tune --ema-decays 0.99,0.999,0.9999``) trains each
replicate once with one averaged copy of the generator per decay
(``train.ema_decay = (0.99, 0.999, 0.9999)``, :meth:`lipgan.core.engine.WGAN.update_ema`); its final
evaluation and every curve point measure each decay (:data:`lipgan.study.curve.EMA_BY_DECAY`).
Per (data set, constraint) the report then takes the decay with the best seeds' mean of the
search's score (:func:`lipgan.study.halving.mean_score` of :func:`lipgan.study.search.score`:
exact W1, then high quality, then reverse KL; on an image data set its first image metric's
ranked value, e.g. FID) at the final evaluation, so the ``+EMA`` row is
chosen by the same rule as the config it trains, and states every decay's numbers beside it.

The choice uses the replicates' own seeds, which the row then reports: unlike the config, the
decay is not chosen on separate seeds. With three decays that is a mild optimism of the best of
three on the same seeds, stated in the report's section.
"""

from __future__ import annotations

import math

from lipgan.study.curve import EMA_BY_DECAY, NO_EMA, decay_key
from lipgan.study.halving import mean_score

#: The metrics a decay's line of the report shows, with their scale and digits.
SHOWN = (("w1", 1.0, 3, "W1"), ("high_quality_fraction", 100.0, 1, "HQ %"),
         ("reverse_kl", 1.0, 3, "reverse KL"))  # fmt: skip


def at_decay(metrics: dict, decay: str | None) -> dict:
    """The EMA's metrics of a result's (or curve point's) ``metrics`` at decay key ``decay``
    (None: the sampling decay's, the point's own keys), without the raw generator's."""
    own = {k: v for k, v in metrics.items() if k not in (NO_EMA, EMA_BY_DECAY)}
    if decay is not None and decay in (metrics.get(EMA_BY_DECAY) or {}):
        own.update(metrics[EMA_BY_DECAY][decay])
    return own


def _as_decay(result: dict, decay: str) -> dict:
    """``result`` as if its EMA at ``decay`` were the one measured (for the score)."""
    return {**result, "metrics": at_decay(result.get("metrics") or {}, decay)}


def choose(spec, final: dict) -> dict[tuple[str, str], dict]:
    """``{(data set, constraint): {'decay': key, 'scores': {key: score}, 'means': {key: {metric:
    mean}}}}`` over the finished replicates of each row; {} when the spec has one decay. A row
    where every decay scores −inf (a failed seed) keeps the first, sampling decay."""
    decays = [decay_key(d) for d in spec.ema_decays]
    if len(decays) < 2:
        return {}
    rows: dict[tuple[str, str], list[dict]] = {}
    for cell, result in final.items():
        rows.setdefault((cell.dataset, cell.constraint), []).append(result)
    out = {}
    for key, results in rows.items():
        ranked = spec.score_key(key[0])
        scores = {d: mean_score([_as_decay(r, d) for r in results], ranked) for d in decays}
        means = {d: _means([_as_decay(r, d) for r in results], ranked) for d in decays}
        best = max(decays, key=lambda d: scores[d])  # the first of equals: max keeps the first
        out[key] = {"decay": best, "scores": scores, "means": means}
    return out


def shown(ranked: str | None) -> tuple:
    """The metrics a decay's line shows: :data:`SHOWN` on a point set, else the ranked value."""
    return SHOWN if ranked is None else ((ranked, 1.0, 3, ranked),)


def _means(results: list[dict], ranked: str | None = None) -> dict:
    out = {}
    for name, *_ in shown(ranked):
        values = [(r.get("metrics") or {}).get(name) for r in results if r.get("status") == "ok"]
        values = [float(v) for v in values if v is not None and math.isfinite(v)]
        out[name] = sum(values) / len(values) if values else None
    return out


def label(choice: dict, dataset: str, constraint: str) -> str:
    """The ``+EMA`` row's config column: which decay it shows ("" with one decay)."""
    found = choice.get((dataset, constraint))
    return f" at decay {found['decay']} (chosen)" if found else ""


def section(spec, choice: dict) -> str:
    """The report's account of the decays: every decay's seeds' means per row, the chosen one
    in bold (empty with one decay)."""
    if not choice:
        return ""
    decays = [decay_key(d) for d in spec.ema_decays]
    lines = [
        "",
        "## EMA decay",
        "",
        f"Every replicate kept one averaged generator per decay ({', '.join(decays)}; the first "
        f"samples), all from iteration {spec.ema_start:,} of the same run. Per row the +EMA row "
        "shows the decay with the best seeds' mean of the search's score (exact W1, then high "
        "quality, then reverse KL) at the final evaluation, chosen on the replicates' own seeds "
        "(a best of "
        f"{len(decays)} on the seeds it reports). Cells: mean W1 / high quality % / reverse KL "
        "over the seeds; the chosen decay in bold.",
        *_image_words(spec),
        "",
        "| data set | constraint | " + " | ".join(f"decay {d}" for d in decays) + " |",
        "|---|---|" + "---|" * len(decays),
    ]
    for dataset in spec.datasets:
        for constraint in spec.constraints:
            found = choice.get((dataset, constraint))
            if found is None:
                continue
            cells = []
            for d in decays:
                text = " / ".join(
                    "–" if found["means"][d][name] is None
                    else f"{scale * found['means'][d][name]:.{digits}f}"
                    for name, scale, digits, _ in shown(spec.score_key(dataset))
                )  # fmt: skip
                cells.append(f"**{text}**" if d == found["decay"] else text)
            lines.append(f"| {dataset} | {constraint} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _image_words(spec) -> list[str]:
    """The section's words for image data sets, whose cells show their ranked value ([] when
    there are none, so a point-set study's section is as before)."""
    keys = {d: spec.score_key(d) for d in spec.datasets if spec.score_key(d)}
    if not keys:
        return []
    return [
        "On an image data set the score is the mean of its first image metric's ranked value, "
        "lower is better, and its cells show that mean ("
        + ", ".join(f"{d}: `{k}`" for d, k in keys.items())
        + ")."
    ]


def as_json(choice: dict) -> list[dict]:
    """The choice for ``tune.json``."""
    return [
        {"dataset": d, "constraint": c, "decay": v["decay"],
         "scores": {k: list(s) for k, s in v["scores"].items()}, "means": v["means"]}
        for (d, c), v in choice.items()
    ]  # fmt: skip
