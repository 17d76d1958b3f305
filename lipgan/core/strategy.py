"""The StrategyPlugin base class: how lipgan obtains a ``tf.distribute.Strategy``.

The engine runs one step function on whatever strategy a plugin creates; a strategy plugin only knows
how to *connect* (split CPUs, find a TPU, read ``TF_CONFIG``) and how to say, in one line, why it cannot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import tensorflow as tf

from lipgan.core.errors import LipganError
from lipgan.core.named import Named


class StrategyUnavailable(LipganError):
    """The requested strategy cannot be created here; the message says what to do instead.

    Args:
        message: one line: why the strategy cannot work here and what to use instead.
    """


T = TypeVar("T")


def call_with_timeout(fn: Callable[[], T], timeout: float, on_timeout: str) -> T:
    """Run ``fn`` in a daemon thread; raise StrategyUnavailable(on_timeout) if it is still running.

    Connecting to a TPU or to peer workers can block forever when nothing answers. The abandoned
    thread is left behind, which is acceptable because the caller reports the error and exits.
    """
    result: dict = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="lipgan-connect")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise StrategyUnavailable(on_timeout)
    if "error" in result:
        raise result["error"]
    return result["value"]


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


class StrategyPlugin(Named):
    """Base class of every strategy plugin. Constructor keyword arguments are gin parameters."""

    def is_available(self) -> bool:
        """Cheap check (never connects, never hangs) whether :meth:`create` can succeed here.

        Returns:
            True when :meth:`create` can be expected to work on this machine.
        """
        return True

    def create(self) -> tf.distribute.Strategy:
        """Create the strategy, or raise :class:`StrategyUnavailable` with an actionable message.

        Returns:
            The ``tf.distribute.Strategy`` the engine runs its step under.

        Raises:
            StrategyUnavailable: the strategy cannot work here; the one-line message says what
                to do instead.
        """
        raise NotImplementedError

    def is_chief(self, strategy: tf.distribute.Strategy) -> bool:
        """Whether this process writes checkpoints, summaries and configs (overridden by multi-worker).

        Args:
            strategy: the strategy :meth:`create` returned.

        Returns:
            True in the one process that writes the run dir (the default: every single-process
            strategy).
        """
        return True
