"""What a number was measured on: CPU model, its widest matmul instructions, cores, accelerators and
the versions of the numerical stack. The bench, the tuned study's row timings and every study cell's
``result.json`` record it.

Why cells record it: two sets of spectral-norm cells trained by the same code on 2026-12-05 and
2026-12-06 part by iteration 250 (docs/study.md), while gradient-penalty cells re-ran bit for bit;
the code was ruled out by running the older commits, and what else differed could no longer be
told, because nothing recorded it. The model name alone does not say it either: machines sold under
one CPU model name come with and without AVX-512, with very different float32 matmul peaks
(benchmarks/RESULTS.md), and oneDNN picks its kernels by these instructions.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

#: CPU flags from the widest to the narrowest matmul path; :func:`describe` reports the first present.
SIMD_LEVELS = ("amx_bf16", "avx512_bf16", "avx512f", "avx2", "avx", "asimd")


def cpu() -> tuple[str, set]:
    """(model name, flags) from /proc/cpuinfo; ``platform.processor()`` and no flags elsewhere."""
    model, flags = platform.processor() or "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
            if flags and model != "unknown":
                break
    except OSError:
        pass
    return model, flags


def cores() -> int:
    """The cores this process may run on (its affinity, which a container or taskset narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def describe() -> dict:
    """``{cpu, simd, nproc, accelerators, tensorflow, keras, numpy, python}`` of this process."""
    import keras
    import numpy as np
    import tensorflow as tf

    model, flags = cpu()
    accelerators = [d.name for d in tf.config.list_logical_devices() if d.device_type != "CPU"]
    return {
        "cpu": model,
        "simd": next((f for f in SIMD_LEVELS if f in flags), "unknown"),
        "nproc": cores(),
        "accelerators": accelerators or ["none"],
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
