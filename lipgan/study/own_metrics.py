"""The metrics of a user data set in a study, its W1 floor and its reference rows.

A user data set (:mod:`lipgan.study.own_data`) has no sampler to draw fresh real points from, so
everything is measured against its **held-out rows** (never trained on), on as many points as
there are of them (``n``):

* ``w1``: the exact W1 (:func:`lipgan.metrics.toy.wasserstein1`, flattened examples) of ``n``
  generated samples to the held-out rows;
* the **W1 floor**: the W1 of ``n`` training rows to the held-out rows, what a generator that
  reproduced the data scores at this ``n`` (mean ± s.e. over ``pairs`` draws of training rows);
* ``critic_wasserstein``: the critic's gap mean D(held-out) − mean D(generated), which the report
  divides by W1 (``critic gap / W1``: above 1, the critic is not 1-Lipschitz);
* PacGAN's mode metrics (modes captured, high quality %, reverse KL; :mod:`lipgan.metrics.toy`)
  only where the user gave the mode centres.

Reference rows, as for the named sets (:mod:`lipgan.study.references`): *real data* (training
rows, one draw per seed) and *uniform on the bounding box* of the training rows (per coordinate,
pixels included), plus the box's mode metrics in expectation where there are modes. Everything
but a cell's metrics is deterministic in the data and the seeds, and needs no TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _flat(x) -> np.ndarray:
    return np.asarray(x, np.float64).reshape(len(x), -1)


def sample_metrics(fake, held_out, arrays: dict) -> dict:
    """``w1`` of ``fake`` to ``held_out`` and, where ``arrays`` holds modes, the mode metrics."""
    from lipgan.metrics.toy import mode_metrics, wasserstein1

    n = min(len(fake), len(held_out))
    fake, held_out = _flat(fake[:n]), _flat(held_out[:n])
    out = {"w1": wasserstein1(fake, held_out)}
    if "modes" in arrays:
        modes = mode_metrics(fake, arrays["modes"], float(arrays["mode_std"]))
        out.update({k: v for k, v in modes.items() if k != "mode_counts"})
    return out


def cell_metrics(view, path: Path, sampler) -> dict:
    """A cell's final metrics on its user data set: :func:`sample_metrics` of as many samples
    (the fixed noise of :func:`lipgan.metrics.evaluation.generate`) as there are held-out rows, and the
    critic's gap on the same points."""
    from lipgan.metrics import evaluation
    from lipgan.study.own_data import read_frozen

    _, arrays = read_frozen(path)
    held_out = arrays["held_out"]
    fake = evaluation.generate(sampler, len(held_out), view.seed)
    return {
        **sample_metrics(fake, held_out, arrays),
        "critic_wasserstein": evaluation.critic_wasserstein(view.critic, held_out, fake),
    }


def _training_rows(train: np.ndarray, n: int, rng) -> np.ndarray:
    return train[rng.choice(len(train), size=n, replace=False)]


def floor_stats(arrays: dict, pairs: int) -> dict:
    """The W1 floor: mean ± s.e. over ``pairs`` draws of ``n`` training rows, each to the
    held-out rows (``n`` = their count); the shape of :func:`lipgan.metrics.toy.w1_floor_stats`."""
    from lipgan.metrics.toy import wasserstein1

    held_out, n = arrays["held_out"], len(arrays["held_out"])
    values = np.array(
        [
            wasserstein1(
                _flat(_training_rows(arrays["train"], n, np.random.default_rng([p, 0xF100]))),
                _flat(held_out),
            )
            for p in range(pairs)
        ]
    )
    se = float(values.std(ddof=1) / np.sqrt(pairs)) if pairs > 1 else float("nan")
    return {"mean": float(values.mean()), "se": se, "pairs": pairs, "n": n}


def references(path: Path, seeds: int, pairs: int) -> dict:
    """``{'own_data', 'floor', 'rows'}`` in the shape of :func:`lipgan.study.references.compute`."""
    from lipgan.metrics.toy import mode_metrics
    from lipgan.study.own_data import read_frozen
    from lipgan.study.reference_rows import BOX, BOX_EXPECTED, EXPECTATION_DRAWS, REAL

    meta, arrays = read_frozen(path)
    train, held_out = arrays["train"], arrays["held_out"]
    n = len(held_out)
    low, high = train.min(axis=0), train.max(axis=0)
    box_what = (
        " × ".join(f"[{a:.3g}, {b:.3g}]" for a, b in zip(low, high))
        if meta["kind"] == "vectors"
        else f"per pixel, [{low.min():.3g}, {high.max():.3g}]"
    )

    def box(rng):
        return rng.uniform(low, high, size=(n, *low.shape))

    rows = {
        REAL: (
            "training rows (never the held-out ones)",
            lambda rng: _training_rows(train, n, rng),
        ),
        BOX: (f"the training rows' box, {box_what}", box),
    }
    out = {}
    for k, (name, (what, sample)) in enumerate(rows.items()):
        cells = [
            sample_metrics(sample(np.random.default_rng([seed, k, 0x5EF])), held_out, arrays)
            for seed in range(seeds)
        ]
        out[name] = {"what": what, "cells": cells}
    if "modes" in arrays:
        cells = []
        for draw in range(EXPECTATION_DRAWS):
            fake = _flat(box(np.random.default_rng([draw, 0xE4, 0x5EF])))
            modes = mode_metrics(fake, arrays["modes"], float(arrays["mode_std"]))
            cells.append({k: v for k, v in modes.items() if k != "mode_counts"})
        out[BOX_EXPECTED] = {
            "what": f"{rows[BOX][0]}, mean of {EXPECTATION_DRAWS} draws",
            "cells": cells,
        }
    return {
        "own_data": meta["name"],
        "about": about(meta, n),
        "floor": floor_stats(arrays, pairs),
        "rows": out,
    }


def about(meta: dict, n: int) -> str:
    """The report's line on a user data set: what it is, the config it trains with, and how it
    is measured."""
    from lipgan.study.own_data import CONFIGS

    shape = "×".join(map(str, meta["shape"]))
    model = "the toy MLPs" if meta["kind"] == "vectors" else "DCGAN"
    modes = (
        f"; mode metrics on its {meta['modes']} given modes"
        if meta.get("modes")
        else "; no mode metrics (no modes given)"
    )
    return (
        f"Your data: `{meta['source']}`, {meta['rows']:,} {meta['kind']} of shape {shape}, "
        f"trained with {CONFIGS[meta['kind']]} ({model}); W1 to {n:,} held-out rows (never "
        f"trained on){modes}."
    )


def real_points(path: Path) -> np.ndarray:
    """The held-out rows' first two coordinates, the grey points of a study figure's panels
    (empty for images, which the figure shows as grids)."""
    from lipgan.study.own_data import read_frozen

    meta, arrays = read_frozen(path)
    if meta["kind"] != "vectors":
        return np.zeros((0, 2))
    return np.asarray(arrays["held_out"][:, :2], np.float64)
