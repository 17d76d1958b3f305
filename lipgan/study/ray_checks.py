"""What Ray would wait on forever, refused in one line before a study's first cell.

``ray.init`` retries an address where no cluster answers for minutes, deaf to SIGTERM; a task
that asks for a resource no node has waits forever without a word; a ``--storage`` no worker can
write fails every cell, each then recorded as a failed seed. :class:`lipgan.study.executors.
RayExecutor` calls these when it starts (Ray itself is imported there: it is optional).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from lipgan.core.errors import ConfigError

#: Seconds to wait for a Ray cluster's port (``--ray-address``) and for the storage probe.
CONNECT_TIMEOUT = 10.0
STORAGE_TIMEOUT = 60.0


def check_address(address: str | None) -> None:
    """One line for a Ray address (``--ray-address``, else ``RAY_ADDRESS``) that is not
    HOST:PORT or ``ray://HOST:PORT``, or whose port does not accept a connection within
    :data:`CONNECT_TIMEOUT`: ``ray.init`` would retry it for minutes, deaf to SIGTERM."""
    option = "--ray-address" if address else "RAY_ADDRESS"
    address = address or os.environ.get("RAY_ADDRESS")
    if not address or address in ("auto", "local"):  # Ray's own resolution, answered at once
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(
            f"{option} {address!r} is not HOST:PORT (e.g. 10.0.0.1:6379, ray://head:10001, or auto)"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"{option} {address}: no Ray cluster answers there ({reason}, waited at most "
            f"{CONNECT_TIMEOUT:g}s); start one with `ray start --head` or fix the address"
        ) from None


def probe_storage(path: str) -> str | None:
    """On a worker: make ``path`` and write a file in it; what went wrong, or None."""
    try:
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".lipgan-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text: str) -> str:
    """``text`` without terminal colour codes (Ray colours its errors' text)."""
    return _ANSI.sub("", text)


def check_resources(ray, resources: dict[str, float]) -> None:
    """Every resource a cell asks for (``--cell-resources``), compared with the whole
    cluster's (``ray.cluster_resources()``): a cell asking for more than there is would wait
    forever for a node that has it (an autoscaling cluster's future nodes are not seen)."""
    total = ray.cluster_resources()
    names = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
    for key, value in resources.items():
        name = names.get(key, key)
        have = total.get(name, 0.0)
        if value > have:
            has = ", ".join(
                f"{k}={v:g}" for k, v in sorted(total.items()) if not k.startswith("node:")
            )
            raise ConfigError(
                f"--cell-resources {key}={value:g}: the Ray cluster has "
                f"{f'{name}={have:g}' if have else f'no resource {name!r}'} in all (it has "
                f"{has}), so no cell could ever start; ask for less or add nodes that have it"
            )


def check_storage(ray, storage: Path) -> None:
    """``--storage`` made and written once from a Ray worker (``num_cpus=0``), where the cells
    will write: a path no worker can write is one line, not a failed seed per cell."""
    probe = ray.remote(probe_storage).options(num_cpus=0, max_retries=0)
    try:
        problem = ray.get(probe.remote(str(storage)), timeout=STORAGE_TIMEOUT)
    except ray.exceptions.GetTimeoutError:
        problem = f"no Ray worker answered within {STORAGE_TIMEOUT:g}s"
    if problem:
        raise ConfigError(
            f"--storage {storage}: cannot write there from a Ray worker ({problem}); give a "
            "path that every node can write"
        )
