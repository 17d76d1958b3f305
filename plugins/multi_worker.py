"""``multi_worker``: MultiWorkerMirroredStrategy across hosts, configured by ``TF_CONFIG``.

Every worker runs the same ``lipgan run`` command with its own ``TF_CONFIG``; the chief (task
``chief``, or ``worker`` 0 when there is no chief) writes checkpoints, summaries and configs.
"""

import json
import os
import socket
import time

import tensorflow as tf

from lipgan import StrategyPlugin, StrategyUnavailable, hookimpl


def read_tf_config(environ=None) -> dict:
    """Parse and validate ``TF_CONFIG``; raise StrategyUnavailable saying what is wrong."""
    raw = (environ if environ is not None else os.environ).get("TF_CONFIG")
    example = '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}'
    if not raw:
        raise StrategyUnavailable(f"multi_worker needs TF_CONFIG, e.g. {example}")
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        members = cluster[task["type"]]
        members[int(task["index"])]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise StrategyUnavailable(
            f"TF_CONFIG is malformed ({type(exc).__name__}: {exc}); expected e.g. {example}"
        ) from None
    return config


def _hostport(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def rendezvous(config: dict, timeout: float, poll: float = 0.2) -> None:
    """Wait until every other task in TF_CONFIG is reachable, or raise within ``timeout`` seconds.

    TensorFlow's own wait for peers happens in native code that holds the GIL and ignores SIGTERM,
    so it cannot be bounded from Python. Before creating the strategy, each worker therefore listens
    on its own TF_CONFIG port and connects to every peer's port; once all answered, it closes the
    listener and lets TensorFlow bind the port. A peer that already moved on is answered by its
    TensorFlow server instead, so the retry loop still succeeds.
    """
    task = config["task"]
    me = config["cluster"][task["type"]][int(task["index"])]
    peers = [a for members in config["cluster"].values() for a in members if a != me]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("", _hostport(me)[1]))
        listener.listen()
    except OSError:
        listener.close()
        listener = None  # the port is taken (e.g. a restarted worker): just probe the peers
    deadline = time.monotonic() + timeout
    pending = set(peers)
    try:
        while pending:
            for address in list(pending):
                try:
                    socket.create_connection(_hostport(address), timeout=poll).close()
                    pending.discard(address)
                except OSError:
                    pass
            if pending and time.monotonic() > deadline:
                raise StrategyUnavailable(
                    f"multi_worker: {', '.join(sorted(pending))} did not answer within {timeout:g}s "
                    "(multi_worker.connect_timeout); start the same command on every worker in "
                    "TF_CONFIG with its own task index, and check the addresses and firewall"
                )
            if pending:
                time.sleep(poll)
    finally:
        if listener is not None:
            listener.close()


def is_chief_task(config: dict) -> bool:
    task = config["task"]
    if "chief" in config["cluster"]:
        return task["type"] == "chief"
    return task["type"] == "worker" and int(task["index"]) == 0


class MultiWorker(StrategyPlugin):
    """MultiWorkerMirroredStrategy over the cluster in TF_CONFIG (collectives: ring, nccl, auto)."""

    name = "multi_worker"
    description = "Synchronous replicas across hosts (MultiWorkerMirroredStrategy, TF_CONFIG)."

    def __init__(
        self,
        communication: str = "auto",
        timeout_seconds: float | None = None,
        connect_timeout: float = 120.0,
    ):
        choices = {
            "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
            "ring": tf.distribute.experimental.CommunicationImplementation.RING,
            "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        }
        if communication not in choices:
            raise ValueError(f"multi_worker.communication must be one of {sorted(choices)}")
        self._implementation = choices[communication]
        self.communication = communication
        self.timeout_seconds = timeout_seconds
        self.connect_timeout = float(connect_timeout)

    def is_available(self) -> bool:
        return bool(os.environ.get("TF_CONFIG"))

    def create(self):
        config = read_tf_config()  # a one-line error for a missing or malformed TF_CONFIG
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=self._implementation, timeout_seconds=self.timeout_seconds
        )
        rendezvous(config, self.connect_timeout)
        # timeout_seconds bounds each collective once the cluster is up.
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)

    def is_chief(self, strategy) -> bool:
        return is_chief_task(read_tf_config())


@hookimpl
def lipgan_register_strategies(register):
    register(MultiWorker)
