"""Reference rows of an image data set: what a second real sample and uniform noise score.

An image score means something only beside its floor and its ceiling on the same sample count:
FID, KID and the digits classifier's FD are biased upward at small n (Bińkowski et al. 2018), so
the floor of a 2,500-sample study is not 0, and a short run can score near noise. For each study
seed, on the very real sample that seed's cells are scored against (the same data stream,
:func:`lipgan.evaluation.real_samples` with the run's seed), the study's image metrics
(:func:`lipgan.study.spec.image_metrics`) score:

* **real data**: a second real sample, disjoint from the first: the real-vs-real floor. The
  stream's first epoch holds each example once, so the next ``n`` examples are a disjoint
  sample when the data set has at least 2n; a smaller one (digits' 1,497, CIFAR-10's 50,000 at
  the papers' n = 50,000) cannot give two disjoint samples of n, and its floor is that of its
  two disjoint halves, at n = half the data set (said in the row: FID's bias at a smaller n
  raises it); a second sample that repeated the first would score 0. (The digits classifier's
  FD compares every sample with the whole training set, the cells' as this row's.)
* **uniform noise**: every pixel uniform on [−1, 1], the generators' range: what no training
  scores.

The data comes from the data set's shipped config with the study's ``--bind`` (so a binding that
replaces the data replaces it here too), built as ``lipgan run`` builds it; the metrics are the
registered ones (``lipgan_register_metrics``), so a plugin's metric gets its floor the same way.
"""

from __future__ import annotations

import numpy as np

REAL = "real data"
NOISE = "uniform noise"

WHAT = {
    REAL: "a second real sample of the same size from the cells' real stream (the floor)",
    NOISE: "every pixel uniform on [−1, 1]",
}


def data_of(dataset: str, seed: int, bindings=()) -> dict:
    """The training data of ``dataset``'s cells with ``seed``: ``{'factory', 'batch_size',
    'inception_weights'}``, from its shipped config and ``bindings``, built as ``lipgan run``
    builds it."""
    from lipgan import config
    from lipgan.plugins import default_registry
    from lipgan.study.spec import Cell

    gin_files, cell_bindings = Cell(dataset, "none", seed, 1, 2, tuple(bindings)).gin()
    trainer = config.trainer_of(gin_files, cell_bindings, default_registry())
    return {
        "factory": trainer.data_factory,
        "batch_size": trainer.global_batch_size,
        "inception_weights": trainer.inception_weights,
    }


def score(dataset: str, fake, real, seed: int, data: dict, metrics) -> dict:
    """``metrics`` (names) of ``fake`` against ``real`` as a cell's evaluation computes them."""
    from lipgan.evaluation import _is_digits, select_metrics
    from lipgan.metric import EvalData

    factory = data["factory"]
    evaluation = EvalData(
        fake=np.asarray(fake, np.float32),
        real=real,
        data_shape=tuple(real.shape[1:]),
        digits=_is_digits(factory),
        data_dir=getattr(factory, "data_dir", None),
        inception_weights=data["inception_weights"],
        w1_floor=False,
        seed=seed,
    )
    values = {}
    for metric in select_metrics(evaluation, list(metrics)):
        values.update(metric.compute(evaluation))
    return values


def compute(dataset: str, n: int, seeds: int, metrics, bindings=()) -> dict:
    """``{'image': True, 'metrics', 'floor': None, 'rows': {row: {'what', 'cells'}}}``: the
    reference rows of ``dataset`` over ``seeds`` seeds of ``n`` samples (module docstring)."""
    from lipgan.data.pipeline import num_examples
    from lipgan.evaluation import real_samples

    rows = {name: {"what": what, "cells": []} for name, what in WHAT.items()}
    for seed in range(seeds):
        data = data_of(dataset, seed, bindings)
        size = num_examples(data["factory"])
        half = n if size is None or 2 * n <= size else size // 2
        if half < n:
            rows[REAL]["what"] = (
                f"two disjoint halves of the data set's {size:,} examples, n = {half:,} each "
                "(the floor; fewer than the cells' n, since the set holds fewer than 2n)"
            )
        drawn = real_samples(data["factory"], 2 * n, data["batch_size"], seed)
        real = drawn[:n]
        noise = np.random.default_rng([seed, 0x1A6E]).uniform(-1.0, 1.0, real.shape)
        cases = ((REAL, drawn[half : 2 * half], drawn[:half]), (NOISE, noise, real))
        for name, fake, against in cases:
            values = score(dataset, fake, against, seed, data, metrics)
            rows[name]["cells"].append({**values, "n": len(fake)})
    return {"image": True, "metrics": list(metrics), "floor": None, "rows": rows}
