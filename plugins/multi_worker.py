"""``multi_worker``: MultiWorkerMirroredStrategy across hosts, configured by ``TF_CONFIG``.

Every worker runs the same ``lipgan run`` command with its own ``TF_CONFIG``; the chief (task
``chief``, or ``worker`` 0 when there is no chief) writes checkpoints, summaries and configs.
"""

import hashlib
import json
import os
import socket
import threading
import time

import tensorflow as tf

from lipgan import StrategyPlugin, StrategyUnavailable, hookimpl
from lipgan.core.strategy import call_with_timeout


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


HELLO = "lipgan-hello"
WELCOME = "lipgan-welcome"


def run_token(config: dict) -> str:
    """What every worker of one job shares: a digest of the cluster in ``TF_CONFIG``.

    Workers of another job (or a stale worker of an earlier cluster layout) on the same ports
    answer with another token and are refused instead of joined.
    """
    cluster = json.dumps(config["cluster"], sort_keys=True)
    return hashlib.sha256(cluster.encode()).hexdigest()[:16]


def _members(config: dict) -> dict[str, str]:
    """``{"worker/0": "host:port", ...}`` for every task of the cluster."""
    return {
        f"{kind}/{index}": address
        for kind, addresses in config["cluster"].items()
        for index, address in enumerate(addresses)
    }


def _read_line(conn: socket.socket, limit: int = 256) -> str:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(limit - len(data))
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


class _Handshake:
    """One worker's side of the rendezvous: answers hellos, and greets every peer.

    A worker may stop listening only once every peer has greeted it (so each has had its
    answer) and answered its own greeting; no worker then misses one of the others, and none
    hands its port to TensorFlow while a peer still expects a lipgan answer there.
    """

    def __init__(self, config: dict, io_timeout: float):
        task = config["task"]
        self.me = f"{task['type']}/{int(task['index'])}"
        members = _members(config)
        self.address = members.pop(self.me)
        self.peers = members
        self.token = run_token(config)
        self.io_timeout = io_timeout
        self.greeted: set[str] = set()  # peers whose hello we answered
        self.answered: set[str] = set()  # peers who answered our hello
        self.why: dict[str, str] = {name: "no answer yet" for name in self.peers}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("", _hostport(self.address)[1]))
        except OSError as exc:
            self.listener.close()
            raise StrategyUnavailable(
                f"multi_worker: cannot listen on {self.address} ({exc.strerror or exc}), this "
                f"task's ({self.me}) TF_CONFIG port; is this task already running elsewhere?"
            ) from None
        self.listener.listen(16)
        self.listener.settimeout(0.2)

    @property
    def done(self) -> bool:
        with self.lock:
            return self.greeted >= set(self.peers) and self.answered >= set(self.peers)

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:  # timeout, or the listener closed
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(self.io_timeout)
                words = _read_line(conn).split()
                if len(words) != 3 or words[0] != HELLO:
                    return  # not a lipgan worker: say nothing
                conn.sendall(f"{WELCOME} {self.token} {self.me}\n".encode())
            except OSError:
                return
            if words[1] == self.token and words[2] in self.peers:
                with self.lock:
                    self.greeted.add(words[2])

    def greet(self, name: str, timeout: float) -> None:
        """Say hello to one peer; record whether it answered as the expected lipgan worker."""
        try:
            with socket.create_connection(_hostport(self.peers[name]), timeout=timeout) as conn:
                conn.settimeout(timeout)
                conn.sendall(f"{HELLO} {self.token} {self.me}\n".encode())
                words = _read_line(conn).split()
        except TimeoutError:
            self.why[name] = "accepts connections but did not answer the lipgan hello"
            return
        except OSError as exc:
            self.why[name] = f"not reachable ({exc.strerror or exc})"
            return
        if len(words) != 3 or words[0] != WELCOME:
            self.why[name] = "accepts connections but is not a lipgan worker"
        elif words[1] != self.token:
            self.why[name] = "is a lipgan worker of another cluster (its TF_CONFIG differs)"
        elif words[2] != name:
            self.why[name] = f"answered as {words[2]}, not {name} (task index mix-up)"
        else:
            with self.lock:
                self.answered.add(name)

    def pending(self) -> list[str]:
        with self.lock:
            return [n for n in self.peers if n not in self.answered or n not in self.greeted]

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def rendezvous(config: dict, timeout: float, poll: float = 0.2) -> None:
    """Wait until every other task in TF_CONFIG has shaken hands, or raise within ``timeout`` s.

    TensorFlow's own wait for peers happens in native code that cannot be bounded from Python,
    and a port that merely accepts connections (another service, a stale process) would make it
    wait forever. So before creating the strategy each worker listens on its own TF_CONFIG port
    and exchanges a one-line hello with every peer: ``lipgan-hello <run token> <task>``, answered
    by ``lipgan-welcome <run token> <task>`` (:func:`run_token`). Only when every pair has
    greeted each other does it close the listener and let TensorFlow bind the port. The main
    thread only ever blocks for ``poll``-sized socket timeouts, so SIGTERM and Ctrl-C act at once.
    """
    deadline = time.monotonic() + timeout
    handshake = _Handshake(config, io_timeout=max(poll, min(2.0, timeout)))
    server = threading.Thread(target=handshake.serve, daemon=True, name="lipgan-rendezvous")
    server.start()
    try:
        while not handshake.done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                waiting = handshake.pending()
                details = "; ".join(
                    f"{handshake.peers[n]} ({n}) {handshake.why[n]}"
                    if n not in handshake.answered
                    else f"{handshake.peers[n]} ({n}) answered but never greeted this worker"
                    for n in waiting
                )
                raise StrategyUnavailable(
                    f"multi_worker: the cluster did not start within {timeout:g}s "
                    f"(multi_worker.connect_timeout): {details}; start the same command on every "
                    "worker in TF_CONFIG with its own task index, and check the addresses"
                )
            for name in handshake.pending():
                if name not in handshake.answered:
                    handshake.greet(name, max(0.05, min(2.0, remaining)))
            if not handshake.done:
                time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
    finally:
        handshake.close()
        server.join(timeout=1.0)


def is_chief_task(config: dict) -> bool:
    task = config["task"]
    if "chief" in config["cluster"]:
        return task["type"] == "chief"
    return task["type"] == "worker" and int(task["index"]) == 0


class MultiWorker(StrategyPlugin):
    """MultiWorkerMirroredStrategy over the cluster in TF_CONFIG (collectives: ring, nccl, auto).

    Args:
        communication: the collectives' implementation: ``'auto'``, ``'ring'`` or ``'nccl'``.
        timeout_seconds: a bound on each collective once the cluster is up; None: no bound.
        connect_timeout: seconds to wait for every worker of TF_CONFIG to answer lipgan's
            handshake; what is left of it also bounds TensorFlow's own cluster start.

    Raises:
        ValueError: an unknown ``communication``.
    """

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
        start = time.monotonic()
        rendezvous(config, self.connect_timeout)
        # The handshake proved every peer is a lipgan worker of this cluster; TensorFlow's own
        # start-up still waits in native code, so the rest of connect_timeout bounds it too.
        remaining = max(5.0, self.connect_timeout - (time.monotonic() - start))
        strategy = call_with_timeout(
            lambda: tf.distribute.MultiWorkerMirroredStrategy(communication_options=options),
            remaining,
            f"multi_worker: TensorFlow's cluster start did not finish within "
            f"{self.connect_timeout:g}s (multi_worker.connect_timeout) although every worker "
            "answered the lipgan hello; a worker may have died since, restart all of them",
        )
        # timeout_seconds bounds each collective once the cluster is up.
        return strategy

    def is_chief(self, strategy) -> bool:
        return is_chief_task(read_tf_config())


@hookimpl
def lipgan_register_strategies(register):
    register(MultiWorker)
