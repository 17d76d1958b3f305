"""Graceful stops: SIGINT (Ctrl-C) and SIGTERM (schedulers, preemption) become a request to stop.

The compiled loop cannot be interrupted safely in the middle of a step, so the first signal only
sets a flag; the host loop checks it between compiled calls, saves a checkpoint and exits. A second
signal restores the default behaviour and stops at once (no checkpoint), for when the user really
means it: it raises :class:`~lipgan.core.errors.Interrupted` with the same exit status as the first
(130 for SIGINT, 143 for SIGTERM), so schedulers see a signal stop, not a generic failure.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from lipgan.core.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Set to the pid of a process that starts this one and may die under it (a Ray worker running a
#: study cell, :mod:`lipgan.study.executors`): see :func:`stop_when_orphaned`.
ORPHAN_ENV = "LIPGAN_STOP_WITHOUT_PARENT"


def stop_when_orphaned(parent: int, poll_seconds: float = 0.5) -> threading.Thread:
    """Send this process one SIGTERM (a graceful stop: checkpoint, exit 143) once ``parent`` is
    no longer its parent process, i.e. the process that started it has died (killed, OOM).

    A daemon thread polls ``os.getppid()``. Linux's ``PR_SET_PDEATHSIG`` would be immediate, but
    it signals again each time the orphan is handed to another thread of the dying parent, and a
    second SIGTERM means "abort without a checkpoint" here (:class:`StopRequests`); polling sends
    exactly one, on every POSIX system.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="lipgan-orphan-watch", daemon=True)
    thread.start()
    return thread


class StopRequests:
    """Context manager that records SIGINT/SIGTERM instead of dying on them.

    Handlers are installed only in the main thread (Python allows nothing else) and the previous
    ones are put back on exit, so library callers keep their own handling outside ``train``.
    """

    def __init__(self, notify: Callable[[str], None] = lambda message: None):
        self.notify = notify
        self.signum: int | None = None
        self._previous: dict = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    def _handle(self, signum, frame):
        if self.signum is not None:  # second signal: give up on a clean stop
            self._restore()
            name = signal.Signals(signum).name
            raise Interrupted(
                f"second {name}: aborted at once, without saving a checkpoint (the last saved "
                "one is kept)",
                128 + signum,
            )
        self.signum = signum
        self.notify(
            f"{signal.Signals(signum).name} received: stopping after the current compiled call "
            "(send it again to abort without a checkpoint)"
        )

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def __exit__(self, *exc) -> None:
        self._restore()
