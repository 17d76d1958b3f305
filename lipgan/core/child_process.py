"""Run a lipgan module as a child Python process (``python -m module args...``).

Why children: TensorFlow fixes its devices (the logical CPUs of a replica count), thread pools and
memory when it starts, and never gives them back, so a check or a measurement that needs another
set-up, or isolation from a failure, needs a fresh runtime. The conformance kit's replica probes
(:mod:`lipgan.testing`), the benchmark's strategies (:mod:`lipgan.bench.harness`) and the study's
cells (:mod:`lipgan.study.runner`) each start one. This module is how, in one place:

* the child is the parent's interpreter (``sys.executable``), so it sees the same installation;
* it imports what the parent imports: the parent's import path, made absolute, is its
  ``PYTHONPATH``, and ``python -m`` does not put the working directory first on ``sys.path``
  (``-P``, Python 3.11+; before, the child runs in a neutral folder unless given ``cwd``), where
  a checkout's folders would be imported ahead of the parent's (a study run from a checkout with
  ``LIPGAN_TREE`` pointing at a snapshot once ran its cells on the checkout's changing code);
* ``TF_CPP_MIN_LOG_LEVEL`` defaults to 3 (TensorFlow's C++ start-up noise would bury the child's
  own error in the parent's report), any other variable is the parent's unless overridden;
* its output is captured as text, and a child past its timeout is killed, never left behind;
* a child in a session of its own keeps the parent's niceness in effect: Linux schedules each
  session as a group of its own (the kernel's autogroup), and a process's nice value only ranks
  it inside its group, so ``nice -n 15 lipgan study`` once ran its cells (each in its own
  session) at the same share of the CPUs as any foreground work; the child's group gets the
  parent's nice value (:func:`keep_niceness`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping


def command(module: str, *args) -> list[str]:
    """``[python, '-P', '-m', module, *args]`` with the parent's interpreter (no ``-P`` before
    Python 3.11, which lacks it)."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe_path, "-m", module, *map(str, args)]


def environment(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment, its import path as ``PYTHONPATH``, quiet TensorFlow, ``overrides``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p or ".") for p in sys.path)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.update(overrides or {})
    return env


def start(module: str, *args, env: Mapping[str, str] | None = None, **popen) -> subprocess.Popen:
    """Start ``python -m module args`` (see the module docstring); stdout and stderr are pipes
    unless ``popen`` names others (a file the child writes itself, e.g. a study cell's log).

    ``env`` overrides variables of :func:`environment`; ``popen`` goes to ``subprocess.Popen``
    (e.g. ``start_new_session=True`` for a child that must not get the terminal's Ctrl-C).
    """
    proc = subprocess.Popen(
        command(module, *args),
        stdout=popen.pop("stdout", subprocess.PIPE),
        stderr=popen.pop("stderr", subprocess.PIPE),
        text=True,
        env=environment(env),
        cwd=popen.pop("cwd", tempfile.gettempdir()),
        **popen,
    )
    if popen.get("start_new_session"):
        keep_niceness(proc.pid)
    return proc


def keep_niceness(pid: int) -> bool:
    """Give ``pid``'s scheduling group (Linux's autogroup: one per session) this process's nice
    value when it is positive, so that a niced parent's child in a new session stays niced against
    other sessions' work; True when it was set. Nowhere to set it (not Linux, autogroup off) or a
    child already gone leaves the child as it is."""
    niceness = os.nice(0)
    if niceness <= 0:
        return False
    try:
        with open(f"/proc/{pid}/autogroup", "w") as group:
            group.write(str(niceness))
    except OSError:
        return False
    return True


def finish(proc: subprocess.Popen, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Wait for ``proc`` (killed after ``timeout`` seconds) and return its status and output."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run(
    module: str, *args, env: Mapping[str, str] | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """:func:`start` then :func:`finish`: one child, run to its end."""
    return finish(start(module, *args, env=env), timeout)
