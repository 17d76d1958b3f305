"""``multi_worker``: MultiWorkerMirroredStrategy across hosts, configured by ``TF_CONFIG``.

Every worker runs the same ``lipgan run`` command with its own ``TF_CONFIG``; the chief (task
``chief``, or ``worker`` 0 when there is no chief) writes checkpoints, summaries and configs.
"""

import json
import os

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


def is_chief_task(config: dict) -> bool:
    task = config["task"]
    if "chief" in config["cluster"]:
        return task["type"] == "chief"
    return task["type"] == "worker" and int(task["index"]) == 0


class MultiWorker(StrategyPlugin):
    """MultiWorkerMirroredStrategy over the cluster in TF_CONFIG (collectives: ring, nccl, auto)."""

    name = "multi_worker"
    description = "Synchronous replicas across hosts (MultiWorkerMirroredStrategy, TF_CONFIG)."

    def __init__(self, communication: str = "auto", timeout_seconds: float | None = None):
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

    def is_available(self) -> bool:
        return bool(os.environ.get("TF_CONFIG"))

    def create(self):
        read_tf_config()  # a one-line error for a missing or malformed TF_CONFIG
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=self._implementation, timeout_seconds=self.timeout_seconds
        )
        # Known limitation: creating the strategy waits (in native code that holds the GIL and
        # ignores SIGTERM) until every task in TF_CONFIG has joined; a missing peer is not bounded
        # by a timeout here. timeout_seconds bounds each collective once the cluster is up.
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)

    def is_chief(self, strategy) -> bool:
        return is_chief_task(read_tf_config())


@hookimpl
def lipgan_register_strategies(register):
    register(MultiWorker)
