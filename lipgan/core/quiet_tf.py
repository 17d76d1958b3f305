"""TensorFlow imported without its start-up chatter: the CLI's process and the workers it spawns.

Why a module: TensorFlow 2.21's native libraries write their start-up lines ("oneDNN custom
operations are on", "Could not find cuda drivers", twice, before absl's logging is initialized)
whatever ``TF_CPP_MIN_LOG_LEVEL`` says, so setting the variable for a worker process is not
enough: each process that imports TensorFlow must hide them itself, at the file-descriptor level,
for the duration of the import. Its Python loggers (tf.function's retracing heuristic, TFDS's
absl warnings) are set to errors only. ``lipgan --verbose`` shows everything, in workers too.
"""

from __future__ import annotations

import logging
import os
import sys


def import_tensorflow(verbose: bool = False) -> None:
    """Import TensorFlow, hiding its C++ start-up lines and Python warnings unless ``verbose``.

    A process that imported TensorFlow already (a test calling the CLI in-process) is left as it
    is: its lines were printed then, and its loggers are its own.
    """
    if verbose or "tensorflow" in sys.modules:
        import tensorflow  # noqa: F401

        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    _import_hiding_stderr()
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)
    # TensorFlow's Python warnings (e.g. "unrestored values" after a refused checkpoint, or the
    # retracing heuristic) would follow lipgan's own lines; --verbose shows them.
    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _import_hiding_stderr() -> None:
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # captured stderr (tests): nothing to hide
        fd = None
    saved = os.dup(fd) if fd is not None else None
    if saved is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    try:
        import tensorflow  # noqa: F401
    finally:
        if saved is not None:
            os.dup2(saved, fd)
            os.close(saved)
