"""``mirrored``: synchronous data parallelism over the GPUs (or logical CPUs) of one host.

``logical_cpus=N`` splits the host CPU into N logical devices, which is how the replica-invariance
tests run 1, 2 and 4 replicas on a laptop. TensorFlow only allows the split before it initializes its
devices, so it must be the first thing a process does with TF; otherwise the error says so.
"""

import tensorflow as tf

from lipgan import StrategyPlugin, hookimpl
from lipgan.core.strategy import split_host_cpu


class Mirrored(StrategyPlugin):
    """MirroredStrategy over all local GPUs, explicit ``devices``, or ``logical_cpus`` CPU splits.

    Args:
        logical_cpus: split the host CPU into this many logical devices, one replica each (must
            happen before the process's first TensorFlow work); None uses the GPUs.
        devices: the devices to replicate on (``['/gpu:0', '/gpu:1']``); None: all local GPUs.

    Raises:
        ValueError: ``logical_cpus < 1``.
    """

    name = "mirrored"
    description = "Synchronous replicas on one host: all GPUs, or the CPU split into logical_cpus."

    def __init__(self, logical_cpus: int | None = None, devices: list[str] | None = None):
        if logical_cpus is not None and logical_cpus < 1:
            raise ValueError(f"mirrored.logical_cpus must be >= 1, got {logical_cpus}")
        self.logical_cpus = logical_cpus
        self.devices = list(devices) if devices else None

    def create(self):
        devices = self.devices
        if self.logical_cpus:
            devices = split_host_cpu(self.logical_cpus)
        elif devices is None and not tf.config.list_physical_devices("GPU"):
            devices = ["/cpu:0"]
        return tf.distribute.MirroredStrategy(devices=devices)


@hookimpl
def lipgan_register_strategies(register):
    register(Mirrored)
