"""``mirrored``: synchronous data parallelism over the GPUs (or logical CPUs) of one host.

``logical_cpus=N`` splits the host CPU into N logical devices, which is how the replica-invariance
tests run 1, 2 and 4 replicas on a laptop. TensorFlow only allows the split before it initializes its
devices, so it must be the first thing a process does with TF; otherwise the error says so.
"""

import tensorflow as tf

from lipgan import StrategyPlugin, StrategyUnavailable, hookimpl


def split_host_cpu(n: int) -> list[str]:
    """Make the host CPU appear as ``n`` logical devices; returns their names."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError:
        pass  # already initialized: acceptable only if the split is already what we need
    logical = tf.config.list_logical_devices("CPU")
    if len(logical) != n:
        raise StrategyUnavailable(
            f"cannot split the CPU into {n} logical devices: TensorFlow already initialized "
            f"{len(logical)}; set mirrored.logical_cpus in a fresh process before any TF work"
        )
    return [d.name for d in logical]


class Mirrored(StrategyPlugin):
    """MirroredStrategy over all local GPUs, explicit ``devices``, or ``logical_cpus`` CPU splits."""

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
