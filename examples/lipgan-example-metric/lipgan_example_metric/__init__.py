"""``energy_distance``: the energy distance between generated and real examples, with its floor.

E(P, Q) = 2·E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ (Székely & Rizzo, "Energy statistics", J. Stat.
Plann. Inference 2013, eq. 1), estimated with the V-statistic on the evaluation's samples
(subsampled to at most ``MAX_POINTS`` each, so the O(n²) distances stay cheap). It is zero exactly
when P = Q, and the same statistic between two independent real samples of the same size is its
floor: what a perfect generator scores at this n. Applies to any data (images are flattened); off
by default, chosen with ``lipgan eval RUN --metric energy_distance``. It exists to show what a
third-party metric needs: a :class:`lipgan.core.metric.Metric` subclass and one ``@hookimpl``.
"""

import numpy as np

from lipgan import hookimpl
from lipgan.core.metric import EvalData, Metric

__version__ = "0.1.0"

#: At most this many examples of each sample enter the O(n²) distance matrices.
MAX_POINTS = 2000


def mean_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean Euclidean distance over all pairs of rows of ``a`` and ``b``, in float64."""
    a2, b2 = (a * a).sum(1)[:, None], (b * b).sum(1)[None, :]
    return float(np.sqrt(np.maximum(a2 + b2 - 2.0 * a @ b.T, 0.0)).mean())


def energy_distance(x: np.ndarray, y: np.ndarray) -> float:
    """The V-statistic 2·E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ of two samples (rows)."""
    x = np.asarray(x, np.float64).reshape(len(x), -1)
    y = np.asarray(y, np.float64).reshape(len(y), -1)
    return 2.0 * mean_distance(x, y) - mean_distance(x, x) - mean_distance(y, y)


class EnergyDistance(Metric):
    """Energy distance to the real data, and the real-vs-real floor at the same n."""

    name = "energy_distance"
    description = "Energy distance to the data and its real-vs-real floor (example plugin)."
    default = False
    needs_more_real = True

    def compute(self, data: EvalData) -> dict:
        n = min(len(data.fake), len(data.real), MAX_POINTS)
        return {
            "energy_distance": energy_distance(data.fake[:n], data.real[:n]),
            "energy_distance_floor": energy_distance(data.real_again()[:n], data.real[:n]),
        }


@hookimpl
def lipgan_register_metrics(register):
    register(EnergyDistance)
