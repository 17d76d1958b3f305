"""Reference rows of an image data set: what a second real sample and uniform noise score.

An image score means something only beside its floor and its ceiling on the same sample count:
FID, KID and the digits classifier's FD are biased upward at small n (Bińkowski et al. 2018), so
the floor of a 2,500-sample study is not 0, and a short run can score near noise. For each study
seed, on the very real sample that seed's cells are scored against (the same data stream,
:func:`lipgan.metrics.evaluation.real_samples` with the run's seed), the study's image metrics
(:func:`lipgan.study.spec.image_metrics`) score:

* **real data**: a second real sample, disjoint from the first: the real-vs-real floor. The
  stream's first epoch holds each example once, so the next ``n`` examples are a disjoint
  sample when the data set has at least 2n; a smaller one (digits' 1,497, CIFAR-10's 50,000 at
  the papers' n = 50,000) cannot give two disjoint samples of n, and its floor is that of its
  two disjoint halves, at n = half the data set (said in the row: FID's bias at a smaller n
  raises it); a second sample that repeated the first would score 0. A metric that scores
  against a reference of its own instead of the cells' real sample (the digits classifier's FD
  compares every sample with all the training digits) scores real examples outside that
  reference (:meth:`lipgan.core.metric.Metric.floor_sample`: the held-out test digits), since
  a half of the reference scored against the whole reads far too low; the row names both.
* **uniform noise**: every pixel uniform on [−1, 1], the generators' range: what no training
  scores.

The data comes from the data set's shipped config with the study's ``--bind`` (so a binding that
replaces the data replaces it here too), built as ``lipgan run`` builds it; the metrics are the
registered ones (``lipgan_register_metrics``), so a plugin's metric gets its floor the same way.

The study reads no gin, so the rows are computed where the gin is read: in a child process of the
gin edge, ``python -m lipgan.config.cells --references`` (:func:`in_child`), as a cell is, which
hands :func:`compute` the data (``data_of``, :func:`lipgan.config.cells.data_of`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lipgan.core import child_process
from lipgan.core.errors import LipganError

REAL = "real data"
NOISE = "uniform noise"

WHAT = {
    REAL: "a second real sample of the same size from the cells' real stream (the floor)",
    NOISE: "every pixel uniform on [−1, 1]",
}


def _evaluation(fake, real, seed: int, data: dict):
    """The :class:`lipgan.core.metric.EvalData` of ``fake`` against ``real``, as a cell's."""
    from lipgan.core.metric import EvalData
    from lipgan.metrics.evaluation import _is_digits

    factory = data["factory"]
    return EvalData(
        fake=np.asarray(fake, np.float32),
        real=real,
        data_shape=tuple(real.shape[1:]),
        digits=_is_digits(factory),
        data_dir=getattr(factory, "data_dir", None),
        inception_weights=data["inception_weights"],
        w1_floor=False,
        seed=seed,
    )


def score(fake, real, seed: int, data: dict, metrics) -> dict:
    """``metrics`` (names) of ``fake`` against ``real`` as a cell's evaluation computes them."""
    from lipgan.metrics.evaluation import select_metrics

    evaluation = _evaluation(fake, real, seed, data)
    values = {}
    for metric in select_metrics(evaluation, list(metrics)):
        values.update(metric.compute(evaluation))
    return values


def score_real(fake, real, seed: int, data: dict, metrics) -> tuple[dict, dict, list]:
    """The *real data* row's values: ``metrics`` of the second real sample ``fake`` against
    ``real``, except that a metric with a reference of its own scores its
    :meth:`~lipgan.core.metric.Metric.floor_sample` instead. Also ``{metric: (n, what)}`` for
    those, and the names of the metrics that scored ``fake``."""
    from lipgan.metrics.evaluation import select_metrics

    evaluation = _evaluation(fake, real, seed, data)
    values, own, shared = {}, {}, []
    for metric in select_metrics(evaluation, list(metrics)):
        found = metric.floor_sample(evaluation)
        if found is None:
            values.update(metric.compute(evaluation))
            shared.append(metric.name)
            continue
        sample, what = found
        values.update(metric.compute(_evaluation(sample, real, seed, data)))
        own[metric.name] = (len(sample), what)
    return values, own, shared


#: The gin edge's module that runs :func:`compute` (by name: the study imports no gin).
GIN_EDGE = "lipgan.config.cells"
#: Its first argument for this job (a cell's is the cell's JSON file).
CHILD_FLAG = "--references"


def in_child(dataset: str, n: int, seeds: int, metrics, bindings=()) -> dict:
    """:func:`compute` in a child process of the gin edge (``python -m lipgan.config.cells
    --references ARGS_JSON OUT_JSON``), which builds each seed's data from the data set's gin;
    a failure there is raised here as a :class:`LipganError` with the child's last line."""
    args = {"dataset": dataset, "n": n, "seeds": seeds, "metrics": list(metrics),
            "bindings": list(bindings)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lipgan-references-") as tmp:
        args_file, out_file = Path(tmp) / "args.json", Path(tmp) / "rows.json"
        args_file.write_text(json.dumps(args))
        # the study's working directory, where relative paths in its bindings point (as a cell's)
        child = child_process.start(GIN_EDGE, CHILD_FLAG, args_file, out_file, cwd=os.getcwd())
        proc = child_process.finish(child)
        if proc.returncode != 0 or not out_file.exists():
            lines = [x for x in (proc.stderr or proc.stdout or "").splitlines() if x.strip()]
            last = lines[-1].removeprefix("Error: ") if lines else f"exit status {proc.returncode}"
            raise LipganError(f"the reference rows of {dataset} could not be computed: {last}")
        return json.loads(out_file.read_text())


def child_main(argv: list[str], data_of: Callable[[str, int, tuple], dict]) -> int:
    """The child's side of :func:`in_child`: ``argv = [ARGS_JSON, OUT_JSON]``; ``data_of`` is the
    gin edge's (:func:`lipgan.config.cells.data_of`). The exit status."""
    import sys

    args = json.loads(Path(argv[0]).read_text())
    try:
        rows = compute(**args, data_of=data_of)
    except Exception as exc:  # one line for the parent (in_child); the traceback is the child's
        print(f"Error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)  # fmt: skip
        return 1
    tmp = Path(argv[1]).with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, default=float))
    tmp.replace(argv[1])
    return 0


def compute(dataset: str, n: int, seeds: int, metrics, bindings=(), *, data_of: Callable) -> dict:
    """``{'image': True, 'metrics', 'floor': None, 'rows': {row: {'what', 'cells'}}}``: the
    reference rows of ``dataset`` over ``seeds`` seeds of ``n`` samples (module docstring).
    ``data_of(dataset, seed, bindings)``: the training data of ``dataset``'s cells with ``seed``,
    ``{'factory', 'batch_size', 'inception_weights'}``, built as ``lipgan run`` builds it."""
    from lipgan.data.pipeline import num_examples
    from lipgan.metrics.evaluation import real_samples

    rows = {name: {"what": what, "cells": []} for name, what in WHAT.items()}
    for seed in range(seeds):
        data = data_of(dataset, seed, tuple(bindings))
        size = num_examples(data["factory"])
        half = n if size is None or 2 * n <= size else size // 2
        second = WHAT[REAL]
        if half < n:
            second = (
                f"two disjoint halves of the data set's {size:,} examples, n = {half:,} each "
                "(the floor; fewer than the cells' n, since the set holds fewer than 2n)"
            )
        drawn = real_samples(data["factory"], 2 * n, data["batch_size"], seed)
        real = drawn[:n]
        noise = np.random.default_rng([seed, 0x1A6E]).uniform(-1.0, 1.0, real.shape)
        values, own, shared = score_real(drawn[half : 2 * half], drawn[:half], seed, data, metrics)
        # the second sample's n, or the floor samples' where no metric scored the second sample
        cell = {**values, "n": half if shared or not own else max(k for k, _ in own.values())}
        if own:
            cell["n_by_metric"] = {name: k for name, (k, _) in own.items()}
        rows[REAL]["what"] = own_floor_what(second, own, shared) if own else second
        rows[REAL]["cells"].append(cell)
        values = score(noise, real, seed, data, metrics)
        rows[NOISE]["cells"].append({**values, "n": len(noise)})
    return {"image": True, "metrics": list(metrics), "floor": None, "rows": rows}


def own_floor_what(second: str, own: dict, shared: list) -> str:
    """The *real data* row's words when some metrics scored their own floor samples (``own``:
    ``{metric: (n, what)}``): theirs, then ``second``'s (the second real sample's) for the metrics
    that scored it (``shared``), if any."""
    parts = [f"{name}: {words} (n = {n:,})" for name, (n, words) in own.items()]
    if shared:
        parts.append(f"{', '.join(shared)}: {second}")
    return "; ".join(parts)
