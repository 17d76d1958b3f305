"""``tpu``: TPUStrategy on a TPU VM (``address='local'``), a named TPU, or a ``grpc://`` worker.

Connecting to a TPU can hang forever when nothing answers, so every connection attempt runs under
``connect_timeout``. The three ways it fails get three different messages: no TPU configured or
present, an address that does not answer, and a TPU that answered but could not be initialized.
"""

import glob
import os
import socket
from urllib.parse import urlparse

import tensorflow as tf

from lipgan import StrategyPlugin, StrategyUnavailable, hookimpl
from lipgan.core.strategy import call_with_timeout

FALLBACK_HINT = "or run without a TPU using --strategy default (or mirrored)"


def local_tpu_present() -> bool:
    """TPU VMs expose their chips as /dev/accel* (v2-v4) or /dev/vfio/* (v5+)."""
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def _check_reachable(address: str, timeout: float) -> None:
    url = urlparse(address)
    if not url.hostname or not url.port:
        raise StrategyUnavailable(f"tpu.address {address!r} is not of the form grpc://HOST:PORT")
    try:
        socket.create_connection((url.hostname, url.port), timeout=timeout).close()
    except OSError as exc:
        raise StrategyUnavailable(
            f"TPU at {address} is unreachable ({exc.__class__.__name__}: {exc}) within "
            f"{timeout:g}s; check tpu.address / TPU_NAME and the network, {FALLBACK_HINT}"
        ) from None


class TPU(StrategyPlugin):
    """TPUStrategy with a connection timeout and one-line errors.

    Args:
        address: ``'local'`` (a TPU VM's own chips), a TPU name or a ``grpc://`` address; None
            uses ``TPU_NAME``, else the local chips if there are any.
        connect_timeout: seconds to wait for the TPU to connect and initialize.
        zone: the TPU's zone, for a named TPU outside this VM's zone.
        project: the TPU's Cloud project, likewise.
    """

    name = "tpu"
    description = "TPUStrategy on a TPU VM ('local'), a named TPU or grpc:// address (TPU_NAME)."

    def __init__(
        self,
        address: str | None = None,
        connect_timeout: float = 60.0,
        zone: str | None = None,
        project: str | None = None,
    ):
        self.address = address
        self.connect_timeout = float(connect_timeout)
        self.zone = zone
        self.project = project

    def _resolved_address(self) -> str | None:
        address = self.address or os.environ.get("TPU_NAME")
        if not address and local_tpu_present():
            address = "local"
        return address

    def is_available(self) -> bool:
        return bool(self._resolved_address())

    def create(self):
        address = self._resolved_address()
        if not address:
            raise StrategyUnavailable(
                "no TPU found: this machine has no TPU devices and neither tpu.address nor "
                f"TPU_NAME is set; on a TPU VM use tpu.address='local', {FALLBACK_HINT}"
            )
        if address.startswith("grpc://"):
            _check_reachable(address, self.connect_timeout)

        def connect():
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=address, zone=self.zone, project=self.project
            )
            if address != "local":
                tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            return resolver

        try:
            resolver = call_with_timeout(
                connect,
                self.connect_timeout,
                f"the TPU at {address!r} did not finish initializing within "
                f"{self.connect_timeout:g}s (tpu.connect_timeout); check that it is healthy and "
                f"not in use by another process, {FALLBACK_HINT}",
            )
        except StrategyUnavailable:
            raise
        except (ValueError, tf.errors.NotFoundError) as exc:
            raise StrategyUnavailable(
                f"no TPU at {address!r} ({str(exc).splitlines()[0][:160]}); {FALLBACK_HINT}"
            ) from None
        except Exception as exc:  # noqa: BLE001 - anything else is "answered but not usable"
            raise StrategyUnavailable(
                f"the TPU at {address!r} could not be initialized ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160]}); {FALLBACK_HINT}"
            ) from None
        return tf.distribute.TPUStrategy(resolver)


@hookimpl
def lipgan_register_strategies(register):
    register(TPU)
