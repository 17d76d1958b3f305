"""The step's settings, defined once: what a compiled step computes (:class:`StepConfig`) and
what the host loop does between compiled calls (:class:`Intervals`), with the precision helpers
they name.

Apart from :mod:`lipgan.engine` so that what only reads settings (the run record, the gin root,
the settings comparison) does not need the step's code; the engine builds the step from them.
"""

from __future__ import annotations

import contextlib
import dataclasses

import keras
import tensorflow as tf

from lipgan.errors import ConfigError
from lipgan.ranges import check_int


@dataclasses.dataclass(frozen=True)
class StepConfig:
    """The static parameters of the step (changing any of them means a new compiled function).

    The one definition of these settings and their defaults: ``lipgan run``'s ``train.n_critic``
    etc. are these fields (:mod:`lipgan.train_root` builds the gin root from them). The defaults are
    Gulrajani et al. 2017's toy setup (batch 256, 5 critic updates per generator update).

    Args:
        global_batch_size: examples per step over all replicas; must be divisible by the replica
            count.
        n_critic: critic updates (each on a fresh real batch) before each generator update.
        seed: seeds the initial weights (for models built by factories), the noise, the
            penalties' interpolation and the shuffling.
        jit_compile: ``'auto'``, True or False: whether the per-replica step is XLA-compiled
            (:func:`lipgan.jit.resolve_jit_compile` says what ``'auto'`` picks).
        mixed_precision: None (or ``'float32'``) or ``'mixed_bfloat16'``: bf16 compute with
            float32 variables, losses and norms.

    Raises:
        ConfigError: a value of the wrong type or out of range.
    """

    global_batch_size: int = 256
    n_critic: int = 5
    seed: int = 0
    jit_compile: bool | str = "auto"  # see lipgan.jit.resolve_jit_compile
    mixed_precision: str | None = None
    #: Generator EMA: after every iteration past ``ema_start``, ``ema = d·ema + (1 − d)·weights``
    #: in a copy of the generator that samples and evaluates in its place (0 = off); up to
    #: ``ema_start`` the copy follows the weights. See :meth:`WGAN.update_ema`. A tuple of
    #: decays, e.g. ``(0.999, 0.99, 0.9999)``, keeps one copy per decay in the same training (so
    #: the decay can be chosen like any other setting, from one run); the **first** samples and
    #: evaluates by default (:attr:`ema_decays`, ``--generator ema:0.99`` picks another).
    ema_decay: float | tuple[float, ...] = 0.0
    ema_start: int = 0

    def __post_init__(self):
        check_int(self.global_batch_size, "global_batch_size", minimum=1)
        check_int(self.n_critic, "n_critic", minimum=1)
        check_int(self.seed, "seed")
        check_int(self.ema_start, "ema_start", minimum=0)
        if isinstance(self.ema_decay, list):  # as a run record's JSON reads back
            object.__setattr__(self, "ema_decay", tuple(self.ema_decay))
        check_ema_decay(self.ema_decay)
        if self.mixed_precision not in PRECISIONS:
            hint = (
                "; mixed_float16 needs loss scaling, which WGAN losses with a gradient penalty do "
                "not get here: use 'mixed_bfloat16'"
                if self.mixed_precision == "mixed_float16"
                else ""
            )
            raise ConfigError(
                f"train.mixed_precision={self.mixed_precision!r} is not supported; choose one of "
                f"None, 'float32', 'mixed_bfloat16'{hint}"
            )

    @property
    def ema_decays(self) -> tuple[float, ...]:
        """The decays of the generator's averaged copies, the sampling one first (() = none)."""
        if isinstance(self.ema_decay, tuple):
            return tuple(float(d) for d in self.ema_decay)
        return (float(self.ema_decay),) if self.ema_decay else ()


def check_ema_decay(value) -> None:
    """``train.ema_decay``: a number in [0, 1), or a non-empty tuple of distinct ones in (0, 1).

    Raises:
        ConfigError: one line naming the value and the range.
    """

    def number(d) -> bool:
        return isinstance(d, int | float) and not isinstance(d, bool) and 0.0 <= d < 1.0

    if isinstance(value, tuple):
        ok = value and all(number(d) and d > 0 for d in value) and len(set(value)) == len(value)
    else:
        ok = number(value)
    if not ok:
        raise ConfigError(
            f"train.ema_decay={value!r} must be a number in [0, 1) (0 = no generator EMA; 0.999 "
            "averages over about the last 1,000 iterations) or a tuple of distinct numbers in "
            "(0, 1), one averaged copy each, the first sampling"
        )


def parse_generator(which: str | None) -> tuple[str, float | None]:
    """``--generator``'s value as ``(kind, decay)``: ``("default" | "raw" | "ema", None)`` or
    ``("ema", 0.99)`` for ``"ema:0.99"``.

    Raises:
        ConfigError: one line for anything else.
    """
    if which in (None, "default", "raw", "ema"):
        return which or "default", None
    kind, _, decay = str(which).partition(":")
    try:
        value = float(decay)
    except ValueError:
        value = None
    if kind != "ema" or value is None or not 0.0 < value < 1.0:
        raise ConfigError(
            f"generator must be 'default', 'raw', 'ema' or 'ema:<decay>' with a decay in (0, 1) "
            f"(e.g. ema:0.999), not {which!r}"
        )
    return "ema", value


@dataclasses.dataclass(frozen=True)
class Intervals:
    """What the host loop does between compiled calls, and how often (in steps; 0 = never).

    The one definition of these settings and their defaults (``lipgan run``'s ``train.log_every``
    etc. are these fields, :mod:`lipgan.train_root`). None of these change what a step computes, so they may change when a run is resumed.
    ``steps_per_execution`` is how many iterations one compiled call runs (the host loop that keeps
    TPUs busy); each call still ends on the next interval boundary.

    Args:
        log_every: iterations between two rows of ``metrics.jsonl`` (>= 1).
        checkpoint_every: iterations between two checkpoints (0 = only at the end).
        max_checkpoints: checkpoints kept in the run dir (>= 1).
        diagnostics_every: iterations between two Lipschitz diagnostics (0 = off).
        eval_every: iterations between two evaluations, with a sample image (0 = off).
        eval_samples: generated samples per evaluation (>= 2).
        histogram_every: iterations between two TensorBoard weight histograms (0 = off).
        plot_samples: samples in the final ``samples.png`` (0 = none).
        steps_per_execution: iterations per compiled call (>= 1).

    Raises:
        ConfigError: a value of the wrong type or out of range.
    """

    log_every: int = 100
    checkpoint_every: int = 1000
    max_checkpoints: int = 3
    diagnostics_every: int = 0
    eval_every: int = 0
    eval_samples: int = 2048
    histogram_every: int = 0
    plot_samples: int = 1024
    steps_per_execution: int = 1

    def __post_init__(self):
        for name in ("log_every", "max_checkpoints", "steps_per_execution"):
            check_int(getattr(self, name), name, minimum=1)
        for name in ("checkpoint_every", "diagnostics_every", "eval_every", "histogram_every"):
            check_int(getattr(self, name), name, minimum=0, note=" (0 = off)")
        check_int(self.eval_samples, "eval_samples", minimum=2)
        check_int(self.plot_samples, "plot_samples", minimum=0, note=" (0 = off)")


PRECISIONS = (None, "float32", "mixed_bfloat16")


def check_bfloat16_support() -> None:
    """bf16 matmuls need a TPU, a CPU (emulated or AMX) or an NVIDIA GPU of compute capability 8+."""
    for gpu in tf.config.list_physical_devices("GPU"):
        capability = tf.config.experimental.get_device_details(gpu).get("compute_capability")
        if capability and tuple(capability) < (8, 0):
            raise ConfigError(
                f"train.mixed_precision='mixed_bfloat16' needs a GPU of compute capability 8.0 or "
                f"newer (Ampere+), but {gpu.name} has {capability[0]}.{capability[1]}; "
                "use train.mixed_precision=None"
            )


@contextlib.contextmanager
def dtype_policy(name: str | None):
    """Build layers under a Keras dtype policy without leaking it to the rest of the process."""
    if name in (None, "float32"):
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
