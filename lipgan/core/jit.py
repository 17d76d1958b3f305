"""Whether the per-replica training function is XLA-compiled: ``train.jit_compile``.

Keras' own ``jit_compile="auto"`` (keras ``trainers/trainer.py``, ``_resolve_auto_jit_compile``)
turns XLA off on machines without GPU/TPU. On CPU, lipgan's benchmarks find XLA as fast or faster
for dense (MLP) critics but several times *slower* for convolutional ones: XLA's CPU convolutions
do not use the oneDNN kernels TensorFlow's own ops use (benchmarks/RESULTS.md, "XLA on CPU"). So
its ``'auto'`` compiles where lipgan has checked that XLA works and is not slower: not for
convolutional models on CPU.
"""

from __future__ import annotations

import tensorflow as tf

from lipgan.core.errors import ConfigError

JIT_CHOICES = (True, False, "auto")


def _local_device_types(strategy: tf.distribute.Strategy) -> list[str]:
    try:
        devices = strategy.extended.worker_devices
    except (AttributeError, RuntimeError):  # the default strategy: one device, no list
        devices = ()
    return [tf.DeviceSpec.from_string(d).device_type or "CPU" for d in devices]


def _has_convolution(models) -> bool:
    """Whether any layer of ``models`` (wrappers' inner layers included) is a convolution."""
    return any(
        "Conv" in type(layer).__name__
        for model in models
        for layer in model._flatten_layers(include_self=True, recursive=True)
    )


def _runs_on_cpu(types: list[str]) -> bool:
    if types:
        return all(t == "CPU" for t in types)
    # The default strategy places ops on the first GPU/TPU when there is one.
    return not (tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


def resolve_jit_compile(setting, strategy: tf.distribute.Strategy, models=()) -> bool:
    """``True`` when the per-replica function is to be XLA-compiled under ``strategy``.

    ``setting`` is ``train.jit_compile``: ``True``, ``False`` or ``'auto'``; ``models`` are the
    critic and generator (``'auto'`` looks at their layers). The cases:

    * ``False``: never XLA.
    * TPU strategies: always XLA (TPUs only run compiled code, whatever the setting asks for).
    * Several replicas on CPU devices of one process (``mirrored.logical_cpus=N``): XLA fails there
      at the first step ("Trying to access resource ... located in device CPU:1 from device CPU:0":
      XLA's CPU device refuses a resource variable placed on another logical CPU when the whole
      replica function, optimizer updates included, is one cluster). ``'auto'`` uses
      ``tf.function``; ``True`` is a ConfigError. Not yet exploited: a minimal probe (Dense model,
      SGD, 2 logical CPUs, TF 2.x here) ran with XLA on the gradient computation only and
      ``apply_gradients`` outside it; splitting the engine's step that way is future work.
    * One replica in this process (default strategy, OneDevice, mirrored with one device): XLA.
      Tested on CPU with numbers equal to ``tf.function`` (tests/test_distributed.py). Except
      ``'auto'`` with a convolutional model on CPU: ``tf.function``, several times faster there
      (module docstring); ``True`` still compiles.
    * Several local GPUs (mirrored) and multi-worker strategies: ``'auto'`` keeps ``tf.function``
      because lipgan has not benchmarked XLA there;
      ``True`` is allowed (Keras runs XLA per replica under MirroredStrategy on GPUs).
    """
    if setting not in JIT_CHOICES or not isinstance(setting, (bool, str)):
        raise ConfigError(f"train.jit_compile must be True, False or 'auto'; got {setting!r}")
    if setting is False:
        return False
    if isinstance(strategy, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)):
        return True
    types = _local_device_types(strategy)
    multi_worker = bool(getattr(strategy.extended, "_in_multi_worker_mode", lambda: False)())
    if len(types) > 1 and all(t == "CPU" for t in types):
        if setting is True:
            raise ConfigError(
                f"train.jit_compile=True does not work with {len(types)} replicas on CPU devices "
                "of one process (XLA cannot share resources between logical CPUs); use "
                "train.jit_compile='auto' or False, or one replica"
            )
        return False
    if setting is True:
        return True
    if _runs_on_cpu(types) and _has_convolution(models):
        return False
    return len(types) <= 1 and not multi_worker
