"""A cell's quality curve: cheap evaluations every N iterations, with iteration and training seconds.

The study's question is not only where a constraint ends but how fast it gets there ("iterations
to target", "seconds to target" in the report). So a cell evaluates its generator between compiled
calls every ``eval_every`` iterations (and at step 0 and the last step) on the PacGAN protocol's
samples:

* modes captured, high-quality fraction and reverse KL: exactly the final evaluation's numbers
  (:func:`lipgan.metrics.toy.mode_metrics` on the same fixed-noise samples,
  :func:`lipgan.metrics.evaluation.generate` with the run's seed), so the curve's last point *is*
  the final result on these three;
* ``sliced_w1``: :func:`lipgan.metrics.toy.sliced_wasserstein1` against one fixed real sample from
  the set's own sampler (numpy, no TF pipeline): far cheaper than the exact W1 at n = 2,500,
  which is computed once, at the end.

Nothing here touches the training: the samples come from a stateless noise and the generator's
``training=False`` call, the real sample from a private numpy generator, so a cell trains the same
with or without a curve (``tests/test_study_curve.py``).

Each point is appended to ``curve.jsonl`` in the run dir as it is taken, with ``step`` and
``seconds``: the training clock, i.e. wall time in the training loop since it started, tracing and
compilation of the step included, curve evaluations excluded, summed over the sessions of a
resumed run. A stopped cell appends a ``{"mark": "stop"}`` line with its clock; on resume the
points after the restored step are dropped (they are re-taken) and the clock continues from the
last kept line, so a resumed cell's curve continues and never restarts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

CURVE_FILE = "curve.jsonl"

#: The keys of a curve point besides step and seconds.
CURVE_KEYS = ("modes_covered", "high_quality_fraction", "reverse_kl", "sliced_w1")

#: With a generator EMA (``train.ema_decay``) a point's keys measure the EMA, and this key holds
#: the same keys for the raw generator of the same run (a cell's result too: ``metrics`` and
#: ``metrics[NO_EMA]``), so one training gives both rows of a with/without-EMA comparison.
NO_EMA = "no_ema"

#: With several decays (``train.ema_decay = (0.999, 0.99, ...)``) this key holds every decay's
#: metrics by the decay (``{"0.99": {...}, "0.999": {...}}``; the first, sampling decay's are the
#: point's own keys, copied, not measured twice); in a cell's result too. One training measures
#: every decay, so the decay is chosen like any other setting (:mod:`lipgan.study.ema_choice`).
EMA_BY_DECAY = "ema_by_decay"


def decay_key(decay: float) -> str:
    """The key of ``decay`` in :data:`EMA_BY_DECAY` (``"0.99"``)."""
    return repr(float(decay))


def samples_file(decay: float | str) -> str:
    """The run dir's final samples of the EMA at ``decay`` when it is not the sampling one
    (``samples_ema_0.99.npy``; the sampling generator's are ``samples.npy``)."""
    return f"samples_ema_{decay_key(decay)}.npy"


def by_decay(emas: dict, measure, sampled: dict) -> dict:
    """``{EMA_BY_DECAY: {decay: metrics}}`` for a run keeping several EMAs ({} otherwise):
    ``measure(sampler)`` for each decay's :class:`lipgan.core.callbacks.Sampler` (``emas``) but the
    first, whose metrics are ``sampled``."""
    if len(emas) < 2:
        return {}
    first = next(iter(emas))
    return {
        EMA_BY_DECAY: {
            decay_key(d): dict(sampled) if d == first else measure(m) for d, m in emas.items()
        }
    }


def read(run_dir: Path) -> list[dict]:
    """Every line of the run dir's curve (points and marks); [] when there is none."""
    path = Path(run_dir) / CURVE_FILE
    if not path.is_file():
        return []
    lines = []
    for text in path.read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except ValueError:  # a line cut short by a kill
            continue
    return lines


def points(lines: list[dict]) -> list[dict]:
    """The evaluation points of a curve (marks left out), by step."""
    return [line for line in lines if "mark" not in line]


class Curve:
    """Evaluates the run's sampler every ``every`` iterations on toy set ``toy_set`` (and its raw
    generator beside it when the sampler is an EMA: ``raw``, a :class:`lipgan.core.callbacks.Sampler`)."""

    def __init__(
        self,
        sampler,
        toy_set: str,
        *,
        seed: int,
        num_samples: int,
        every: int,
        run_dir,
        raw=None,
        emas=None,
    ):
        from lipgan.data.toy import MODE_CENTERS, MODE_STD, SAMPLERS

        self.sampler, self.raw, self.toy_set, self.seed = sampler, raw, toy_set, seed
        self.emas = emas or {}  # {decay: Sampler} of a run keeping several EMAs
        self.num_samples, self.every = num_samples, every
        self.path = Path(run_dir) / CURVE_FILE
        self.centers, self.std = MODE_CENTERS.get(toy_set), MODE_STD.get(toy_set)
        rng = np.random.default_rng([seed, 0xC0BE])  # private: no global RNG is touched
        self.real = SAMPLERS[toy_set](num_samples, rng)
        self.lines: list[dict] = []
        self.offset = 0.0
        self.next_due = 0
        self.eval_seconds = 0.0

    def resume(self, start: int) -> bool:
        """Keep the lines up to the restored step ``start`` (the clock continues from the last
        kept one); whether a point is due at ``start`` itself (step 0, or a resume on the grid)."""
        kept = [line for line in read(self.path.parent) if line["step"] <= start]
        self.lines = kept
        self.offset = kept[-1]["seconds"] if kept else 0.0
        self.next_due = (start // self.every + 1) * self.every
        self.path.write_text("".join(json.dumps(line) + "\n" for line in kept))
        return start % self.every == 0 and not self._has(start)

    def due(self, step: int, total: int) -> bool:
        """Whether a point is due after a compiled call that ended at ``step``: the first call
        at or past each multiple of ``every`` (exactly on it when ``every`` is a multiple of the
        config's ``steps_per_execution``), and the last step."""
        return step >= self.next_due or (step == total and not self._has(step))

    def _has(self, step: int) -> bool:
        return any(line["step"] == step and "mark" not in line for line in self.lines)

    def evaluate(self) -> dict:
        """The curve's metrics of the generator as it is now."""
        from lipgan.metrics.evaluation import generate
        from lipgan.metrics.toy import mode_metrics, sliced_wasserstein1

        def measure(sampler) -> dict:
            fake = generate(sampler, self.num_samples, self.seed)
            out = {"sliced_w1": sliced_wasserstein1(fake, self.real)}
            if self.centers is not None:
                modes = mode_metrics(fake, self.centers, self.std)
                out.update({k: v for k, v in modes.items() if k in CURVE_KEYS})
            return out

        out = measure(self.sampler)
        if self.raw is not None:  # the same run without its EMA, for comparison
            out[NO_EMA] = measure(self.raw)
            out.update(by_decay(self.emas, measure, {k: v for k, v in out.items() if k != NO_EMA}))
        return out

    def record(self, step: int, seconds: float) -> None:
        """Evaluate now and append the point at ``step`` (``seconds`` on this session's clock)."""
        started = time.perf_counter()
        point = {"step": int(step), "seconds": self.offset + seconds, **self.evaluate()}
        self._append(point)
        self.next_due = (step // self.every + 1) * self.every
        self.eval_seconds += time.perf_counter() - started

    def mark_stop(self, step: int, seconds: float) -> None:
        """A stopped session's clock, so that the resumed one continues from it."""
        self._append({"step": int(step), "seconds": self.offset + seconds, "mark": "stop"})

    def _append(self, line: dict) -> None:
        self.lines.append(line)
        with self.path.open("a") as f:
            f.write(json.dumps(line, default=float) + "\n")
