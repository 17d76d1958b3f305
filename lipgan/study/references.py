"""Reference rows: samplers that learn nothing, scored like the cells, and the W1 floor (the rows'
names and PacGAN's published rows: :mod:`lipgan.study.reference_rows`).

A constraint's row means something only beside what no training at all achieves on the same
metrics, sample count and seeds (a short run can score below uniform noise):

* **real data**: the data set's own sampler (the ceiling; its W1 is a floor);
* **uniform on the bounding box**: of the mode centres for the Gaussian mixtures ([−1, 1]² for
  the ring, [−4, 4]² for the grid), of 100,000 real points otherwise;
* **uniform on the support**, where the support is simple: the circle through the ring's (and
  8gaussians') centres.

Each is evaluated on ``eval_samples`` points for each study seed: PacGAN's mode metrics, the
exact W1 and the curve's sliced W1 against a real sample of the same size. The W1 floor is
computed once per data set from :data:`FLOOR_PAIRS` real-vs-real pairs with its standard error
(:func:`lipgan.metrics.toy.w1_floor_stats`). Everything is deterministic in (data set, n, seeds),
so ``OUT/references.json`` is only a cache: a report rebuilt without it computes the same rows.
A data set the user brings has the same rows against its held-out rows
(:mod:`lipgan.study.own_metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lipgan.study import own_data
from lipgan.study.reference_rows import BOX, BOX_EXPECTED, EXPECTATION_DRAWS, REAL, SUPPORT
from lipgan.study.spec import toy_set

#: Real-vs-real pairs behind a study's W1 floor (each pair is one exact W1 at n = 2,500).
FLOOR_PAIRS = 30
#: ... and behind a smoke test's (``--quick``: its report holds no results, its floor neither).
SMOKE_FLOOR_PAIRS = 3

#: Bump when the rows' definition changes, so that an old cache is not reused.
VERSION = 2
#: Bump when only the image rows' definition changes (it is part of an image entry's definition,
#: so the toy rows' cache stays valid). 2: a metric with a reference of its own floors on real
#: examples outside it (:meth:`lipgan.core.metric.Metric.floor_sample`).
IMAGE_VERSION = 2


def bounding_box(toy: str) -> tuple[np.ndarray, np.ndarray]:
    from lipgan.data.toy import MODE_CENTERS, SAMPLERS

    if toy in MODE_CENTERS:
        points = np.asarray(MODE_CENTERS[toy], np.float64)
    else:
        points = SAMPLERS[toy](100_000, np.random.default_rng(0xB0C5))
    return points.min(axis=0), points.max(axis=0)


def uniform_box(toy: str) -> Callable:
    low, high = bounding_box(toy)
    return lambda n, rng: rng.uniform(low, high, size=(n, len(low)))


def uniform_circle(radius: float) -> Callable:
    def sample(n, rng):
        angle = rng.uniform(0.0, 2 * np.pi, n)
        return radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)

    return sample


def samplers(toy: str) -> dict[str, tuple[Callable, str]]:
    """{row name: (sampler (n, rng) -> points, what it is)} for ``toy``."""
    from lipgan.data.toy import MODE_CENTERS, SAMPLERS

    low, high = bounding_box(toy)
    box = " × ".join(f"[{a:.3g}, {b:.3g}]" for a, b in zip(low, high))
    rows = {
        REAL: (SAMPLERS[toy], "the data set's own sampler"),
        BOX: (uniform_box(toy), box),
    }
    if toy in ("2d_ring", "8gaussians"):  # modes evenly on one circle
        radius = float(np.linalg.norm(MODE_CENTERS[toy], axis=1).mean())
        rows[SUPPORT] = (uniform_circle(radius), f"the circle of radius {radius:.3g}")
    return rows


def evaluate(toy: str, n: int, seeds: int) -> dict:
    """{row: {'what', 'cells': [per-seed metrics]}} for every reference sampler of ``toy``."""
    from lipgan.data.toy import MODE_CENTERS, MODE_STD, SAMPLERS
    from lipgan.metrics.toy import mode_metrics, sliced_wasserstein1, wasserstein1

    out = {}
    for k, (name, (sample, what)) in enumerate(samplers(toy).items()):
        cells = []
        for seed in range(seeds):
            fake = np.asarray(sample(n, np.random.default_rng([seed, k, 0x5EF])), np.float64)
            real = SAMPLERS[toy](n, np.random.default_rng([seed, 0xDA7A]))
            # The sliced W1 against the very real sample a cell's curve uses for this seed.
            curve_real = SAMPLERS[toy](n, np.random.default_rng([seed, 0xC0BE]))
            values = {
                "w1": wasserstein1(fake, real),
                "sliced_w1": sliced_wasserstein1(fake, curve_real),
            }
            if toy in MODE_CENTERS:
                modes = mode_metrics(fake, MODE_CENTERS[toy], MODE_STD[toy])
                values.update({k2: v for k2, v in modes.items() if k2 != "mode_counts"})
            cells.append(values)
        out[name] = {"what": what, "cells": cells}
    if toy in MODE_CENTERS:
        box, what = samplers(toy)[BOX]
        cells = []
        for draw in range(EXPECTATION_DRAWS):
            fake = np.asarray(box(n, np.random.default_rng([draw, 0xE4, 0x5EF])), np.float64)
            modes = mode_metrics(fake, MODE_CENTERS[toy], MODE_STD[toy])
            cells.append({k: v for k, v in modes.items() if k != "mode_counts"})
        out[BOX_EXPECTED] = {"what": f"{what}, mean of {EXPECTATION_DRAWS} draws", "cells": cells}
    return out


def compute(
    dataset: str, n: int, seeds: int, pairs: int = FLOOR_PAIRS, metrics=(), bindings=()
) -> dict | None:
    """``{'floor': {...}, 'rows': {...}}`` for a toy data set; for an image data set its rows
    on the image ``metrics`` the study records (:mod:`lipgan.study.image_references`, its data
    as ``bindings`` make it); None for the others."""
    from lipgan.metrics.toy import w1_floor_stats
    from lipgan.study.spec import image_metrics

    toy = toy_set(dataset)
    if toy is None:
        if not image_metrics(dataset, metrics):
            return None
        from lipgan.study import image_references

        return image_references.in_child(
            dataset, n, seeds, image_metrics(dataset, metrics), bindings
        )
    return {
        "toy_set": toy,
        "floor": w1_floor_stats(toy, n, pairs=pairs),
        "rows": evaluate(toy, n, seeds),
    }


def load_or_compute(
    out: Path,
    datasets,
    n: int,
    seeds: int,
    log=None,
    pairs: int = FLOOR_PAIRS,
    metrics=(),
    bindings=(),
) -> dict:
    """{data set: reference dict or None}, read from ``out/references.json`` when it holds the
    same definition, computed (and cached there) otherwise. ``metrics`` and ``bindings`` (the
    study's ``--metric`` and ``--bind``) define an image data set's rows, so they are part of
    its entry's definition."""
    from lipgan.study.spec import image_metrics

    path = Path(out) / "references.json"
    key = {"version": VERSION, "n": n, "seeds": seeds, "floor_pairs": pairs}
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    entries = cached.get("datasets", {}) if cached.get("key") == key else {}
    changed = False
    for dataset in datasets:
        image = image_metrics(dataset, metrics)
        definition = (
            {"metrics": list(image), "bindings": list(bindings), "version": IMAGE_VERSION}
            if image
            else None
        )
        entry = entries.get(dataset, ...)
        if entry is ... or (image and (entry or {}).get("definition") != definition):
            own = own_data.study_file(out, dataset)
            if log and (toy_set(dataset) or image or own):
                floor = toy_set(dataset) or own
                what = f"W1 floor ({pairs} pairs)" if floor else ", ".join(image)
                log(f"reference rows for {dataset}: {what}...")
            if own:  # a user data set: against its held-out rows (lipgan.study.own_metrics)
                from lipgan.study.own_metrics import references as own_references

                entries[dataset] = own_references(own, seeds, pairs)
            else:
                entries[dataset] = compute(dataset, n, seeds, pairs, metrics, bindings)
            if image:
                entries[dataset]["definition"] = definition
            changed = True
    if changed:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"key": key, "datasets": entries}, indent=1, default=float))
        tmp.replace(path)
    return {d: entries[d] for d in datasets}
