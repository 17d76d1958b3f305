"""Print the speed targets next to the ratios measured in benchmarks/*/results.json.

lipgan's default execution on one CPU replica (``train.jit_compile='auto'``, lipgan/core/jit.py) is
XLA for the dense toy MLP and ``tf.function`` for the convolutional DCGAN (XLA measured ~4x slower
for convolutions on CPU), with exact ReLU pruning (``fast_relu='auto'``), so "the default" below is
the
:data:`DEFAULT_MODE` row of the plain constraint name (tests/test_jit_resolution.py checks that
``'auto'`` resolves this way for both models); the keras-io baseline as users run it is its ``function`` row (Keras ``compile``
defaults: ``jit_compile='auto'`` is off on CPU-only machines) and its ``xla`` row is
``jit_compile=True``. Every ratio compares rows of one bench process (same run, interleaved).
"""

import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks")
#: The full sweep's own groups (benchmarks/run.sh), read first: later groups re-measure some of
#: these rows for other questions, often under load, and must not replace the sweep's figures.
SWEEP = ("toy", "dcgan_step", "dcgan_iteration")
records = []
for path in sorted(root.glob("*/results.json"), key=lambda p: (p.parent.name not in SWEEP, p)):
    records += [r for r in json.loads(path.read_text())["records"] if r["strategy"] == "default"]


#: What ``train.jit_compile='auto'`` resolves to on one CPU replica, per bench model.
DEFAULT_MODE = {"toy": "xla", "dcgan": "function"}


def find(model, constraint, measurement, mode):
    """The first default-strategy record with these keys (:data:`SWEEP`'s folders first, then the
    others in name order), or None."""
    return next(
        (
            r
            for r in records
            if (r["model"], r["constraint"], r["measurement"], r["mode"])
            == (model, constraint, measurement, mode)
        ),
        None,
    )


def speedup(model, keras_mode):
    """lipgan's default GP iteration over keras-io's iteration in ``keras_mode``."""
    ours = find(model, "gradient_penalty", "iteration", DEFAULT_MODE[model])
    theirs = find(model, "keras_io_gp", "iteration", keras_mode)
    return ours and theirs and ours["examples_per_s"] / theirs["examples_per_s"]


def field(model, constraint, measurement, mode, name):
    record = find(model, constraint, measurement, mode)
    return record and record[name]


rows = []
for model in ("toy", "dcgan"):
    rows += [
        (
            f"default GP iteration / keras-io as users run it, {model}",
            speedup(model, "function"),
            ">=",
            2.0,
        ),
        (
            f"default GP iteration / keras-io jit_compile=True, {model}",
            speedup(model, "xla"),
            ">=",
            1.15,
        ),
    ]
rows += [
    (
        "default GP iteration, GFLOP/s as a fraction of the matmul probe, toy",
        field("toy", "gradient_penalty", "iteration", DEFAULT_MODE["toy"], "fraction_of_probe"),
        ">=",
        0.80,
    ),
    (
        # The probe's stand-in where it is no limit: a 2048² float32 matmul, the peak as TF reaches it.
        "default GP iteration, GFLOP/s as a fraction of a 2048² matmul (peak), toy",
        field("toy", "gradient_penalty", "iteration", DEFAULT_MODE["toy"], "fraction_of_peak"),
        ">=",
        0.80,
    ),
    (
        "default GP / none critic step, DCGAN",
        field(
            "dcgan", "gradient_penalty", "critic_step", DEFAULT_MODE["dcgan"], "time_ratio_vs_none"
        ),
        "<=",
        1.6,
    ),
    (
        "XLA (train.jit_compile=True) GP / none critic step, DCGAN",
        field("dcgan", "gradient_penalty", "critic_step", "xla", "time_ratio_vs_none"),
        "<=",
        1.6,
    ),
]
for model in ("toy", "dcgan"):
    for mode in ("xla", "function"):
        rows.append(
            (
                f"lazy GP (every=16) / none critic step, {model}, {mode}",
                field(
                    model, "gradient_penalty:every=16", "critic_step", mode, "time_ratio_vs_none"
                ),
                "<=",
                1.1,
            )
        )

print("| target | measured | goal | met |")
print("|---|---|---|---|")
for label, value, op, goal in rows:
    if value is None:
        measured, met = "not measured", "–"
    else:
        measured = f"{value:.2f}"
        met = "yes" if (value <= goal if op == "<=" else value >= goal) else "**no**"
        if "fraction of the matmul probe" in label and value > 1.0:
            met = "**invalid**: the probe ran below the achieved rate, so it was no limit"
    print(f"| {label} | {measured} | {op} {goal} | {met} |")
