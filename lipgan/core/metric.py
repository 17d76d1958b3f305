"""The Metric base class and :class:`EvalData`, what every metric is computed from.

``lipgan eval``, a run's periodic evaluation, and the study and tune reports all measure a
generator the same way: :func:`lipgan.metrics.evaluation.evaluate` draws the samples once, builds
one
:class:`EvalData`, and asks every registered metric (``lipgan_register_metrics``) that
:meth:`Metric.applies` to it, or the ones named (``lipgan eval --metric NAME``), for its values.
The built-ins (``plugins/metrics.py``) register through the same hook as a third party's.

Kept free of TensorFlow imports: a metric imports what it needs inside :meth:`Metric.compute`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from lipgan.core.named import Named


@dataclasses.dataclass
class EvalData:
    """The samples and facts of one evaluation.

    Attributes:
        fake: ``num_samples`` generated examples (float32, the data's shape per row).
        real: as many real examples, drawn with the evaluation's seed.
        critic: the critic (a Keras model), for metrics of the critic itself.
        data_shape: one example's shape, e.g. ``(2,)`` or ``(28, 28, 1)``.
        toy: the toy set's name (``8gaussians``, ``ring``, ...) or None.
        digits: whether the data is lipgan's digits set (its classifier's features apply).
        data_dir: the TFDS data dir of the data, if any (where cached models live).
        inception_weights: a local weights file for Inception scores, or None.
        w1_floor: False when the caller computes real-vs-real floors once itself (a study).
        seed: the evaluation's seed (metrics that subsample use it).
    """

    fake: np.ndarray
    real: np.ndarray
    critic: Any = None
    data_shape: tuple = ()
    toy: str | None = None
    digits: bool = False
    data_dir: str | None = None
    inception_weights: str | None = None
    w1_floor: bool = True
    seed: int = 0
    #: Draws ``len(real)`` more real examples, independent of ``real`` (for real-vs-real floors).
    more_real: Callable[[], np.ndarray] | None = None
    _more: np.ndarray | None = dataclasses.field(default=None, repr=False)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def is_image(self) -> bool:
        return len(self.data_shape) == 3

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per evaluation, shared by the metrics that need the same thing (FID,
        KID and PRDC all read the Inception features of the same samples)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def real_again(self) -> np.ndarray:
        """A second real sample of the same size, drawn once and shared by every metric."""
        if self._more is None:
            if self.more_real is None:
                raise ValueError("this evaluation has no second real sample")
            self._more = self.more_real()
        return self._more


class Metric(Named):
    """Base class of every metric plugin (``lipgan_register_metrics``).

    Subclasses set ``name`` (snake_case, what ``lipgan eval --metric NAME`` selects) and
    ``description``, and override :meth:`applies` and :meth:`compute`. A metric is constructed
    with no arguments.
    """

    #: Computed in every evaluation it applies to; False: only when selected by name (an
    #: expensive score, or one that needs a download).
    default: ClassVar[bool] = True
    #: Needs :meth:`EvalData.real_again` (a second real sample, drawn with the first).
    needs_more_real: ClassVar[bool] = False
    #: The key of :meth:`compute`'s values that ranks generators, lower is better (FID's
    #: ``fid``): what ``lipgan tune`` chooses a config by when this metric is the first
    #: ``--metric`` (:func:`lipgan.study.search.score`). None: it cannot rank a search (a
    #: higher-is-better score, or several values of equal standing).
    score_key: ClassVar[str | None] = None

    def applies(self, data: EvalData) -> bool:
        """Whether this metric can be computed on ``data`` (e.g. only on images)."""
        return True

    def check_ready(self) -> None:
        """Raise a one-line :class:`lipgan.core.errors.LipganError` when this metric cannot be
        computed on this machine (a weights file that is neither here nor downloadable). A study
        calls it for the metrics it records before any cell trains, so that hours of training do
        not end in an evaluation that fails; the default has nothing to check."""

    def floor_sample(self, data: EvalData) -> tuple[np.ndarray, str] | None:
        """Real examples outside this metric's own reference set, and a phrase saying which, for
        its real-vs-real floor; None (the default) for a metric that scores ``data.fake`` against
        ``data.real``.

        A study's *real data* row (:mod:`lipgan.study.image_references`) scores a second real
        sample as if it were generated. That is a floor only if the sample is disjoint from what
        the metric compares it with. A metric that ignores ``data.real`` for a fixed reference of
        its own (the digits classifier's FD: every training digit) must name examples outside that
        reference here; scoring a part of the reference against the whole reads far too low (FD
        about a quarter of the disjoint value, KID below 0)."""
        return None

    def compute(self, data: EvalData) -> dict[str, float]:
        """The metric's values, ``{key: float}``; keys become ``eval/<key>`` in the results.

        Raise :class:`lipgan.core.errors.ConfigError` with one line for what the user must fix (a
        missing weights file, data the metric cannot measure).
        """
        raise NotImplementedError
