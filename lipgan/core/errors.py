"""User-facing errors.

Anything a user can cause (a config typo, a missing dataset, no TPU) raises a subclass of
:class:`LipganError`. The CLI prints its message on one line and exits non-zero without a traceback,
so every message must say what went wrong *and* what to do about it.

Notices that are not errors (a hint, a note about seeding) are :class:`LipganWarning` warnings, so a
user filters them the Python way (``warnings.filterwarnings("ignore", category=LipganWarning)``);
the CLI prints each as its one line.
"""

import re


class LipganError(Exception):
    """An error caused by input or environment, reported to the user as one line.

    Args:
        message: what went wrong and what to do about it; runs of whitespace (line breaks
            included) become single spaces, so the message is one line, and a word longer than
            :data:`ECHO_LIMIT` characters (a value the user gave, echoed back: a 100 kB
            ``--bind``) is cut there with an ellipsis.
    """

    #: Raised inside a traced function (a plugin's penalty), it reaches the caller as itself, not
    #: rewrapped by AutoGraph as a multi-line ``StagingError: in user code: ...``.
    ag_pass_through = True

    def __init__(self, message: str):
        super().__init__(" ".join(map(shorten, str(message).split())))


#: Longest word of an error message: what a message echoes (a value, a path) is cut here.
ECHO_LIMIT = 200


def shorten(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (an echoed value in a message)."""
    return text if len(text) <= limit else text[:limit] + "…"


class LipganWarning(UserWarning):
    """A notice to the user (a hint or a note), issued with :func:`warnings.warn`."""


class ConfigError(LipganError):
    """A gin file, binding or name that cannot be resolved."""


class PluginError(LipganError):
    """A plugin that cannot be loaded or registers a conflicting name."""


class DatasetError(LipganError):
    """A dataset that is not available offline."""


class NonFiniteLossError(LipganError):
    """Training produced NaN or Inf."""


class CheckpointError(LipganError):
    """A run directory whose checkpoints cannot be used (unreadable, or from another config)."""


class RunDirError(LipganError):
    """A run directory that cannot be used: a file, not writable, or holding another config's run."""


class Interrupted(LipganError):
    """SIGINT/SIGTERM stopped training after a checkpoint was saved; ``exit_code`` is 128 + signal."""

    prefix = "Stopped"

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The gist of an exception as one line: its first non-empty line, without TensorFlow's
    ``{{function_node ...}}`` and ``[Op:...]`` decorations (optionally cut to ``limit`` characters)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), type(exc).__name__)
    line = re.sub(r"\{\{[^}]*\}\}\s*", "", line)
    line = re.sub(r"\s*\[Op:[^\]]*\]?.*$", "", line)
    return line[:limit] if limit else line


def op_error_cause(exc) -> str:
    """The line of a TensorFlow runtime error that says what failed.

    A compiled call's error reads "Graph execution error:", then the Python stack of the op, then
    the cause, then ``[[{{node ...}}]]``: the cause is the line before the first node marker.
    """
    lines = [ln.strip() for ln in str(exc.message).splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.startswith("[[") and i:
            return lines[i - 1]
    return lines[-1] if lines else type(exc).__name__
