"""Print the issue's targets next to the measured ratios from benchmarks/*/results.json (tf.function)."""

import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks")
records = []
for path in sorted(root.glob("*/results.json")):
    records += [r for r in json.loads(path.read_text())["records"] if r["mode"] == "function"]


def find(model, constraint, measurement):
    return next(
        (
            r
            for r in records
            if (r["model"], r["constraint"], r["measurement"]) == (model, constraint, measurement)
        ),
        None,
    )


rows = [
    (
        "GP/plain critic step, DCGAN, fast_relu",
        "dcgan",
        "gradient_penalty:fast_relu=True",
        "critic_step",
        "time_ratio_vs_none",
        "<=",
        1.75,
    ),
    (
        "GP/plain critic step, DCGAN, standard",
        "dcgan",
        "gradient_penalty",
        "critic_step",
        "time_ratio_vs_none",
        "",
        None,
    ),
    (
        "clip/plain critic step, DCGAN",
        "dcgan",
        "weight_clip",
        "critic_step",
        "time_ratio_vs_none",
        "<=",
        1.05,
    ),
    (
        "spectral_norm/plain critic step, DCGAN",
        "dcgan",
        "spectral_norm",
        "critic_step",
        "time_ratio_vs_none",
        "<=",
        1.10,
    ),
    (
        "GP every=16 / plain critic step, DCGAN",
        "dcgan",
        "gradient_penalty:every=16",
        "critic_step",
        "time_ratio_vs_none",
        "<=",
        1.10,
    ),
    (
        "GP every=16 / plain critic step, toy",
        "toy",
        "gradient_penalty:every=16",
        "critic_step",
        "time_ratio_vs_none",
        "<=",
        1.10,
    ),
    (
        "lipgan GP iteration / keras-io, DCGAN",
        "dcgan",
        "gradient_penalty",
        "iteration",
        "speedup_vs_keras_io",
        ">=",
        1.15,
    ),
    (
        "lipgan GP fast_relu iteration / keras-io, DCGAN",
        "dcgan",
        "gradient_penalty:fast_relu=True",
        "iteration",
        "speedup_vs_keras_io",
        ">=",
        1.15,
    ),
    (
        "lipgan GP iteration / keras-io, toy",
        "toy",
        "gradient_penalty",
        "iteration",
        "speedup_vs_keras_io",
        ">=",
        1.5,
    ),
    (
        "lipgan GP fast_relu iteration / keras-io, toy",
        "toy",
        "gradient_penalty:fast_relu=True",
        "iteration",
        "speedup_vs_keras_io",
        ">=",
        1.5,
    ),
]
print("| target | measured | FLOP ratio | goal | met |")
print("|---|---|---|---|---|")
for label, model, constraint, measurement, field, op, goal in rows:
    r = find(model, constraint, measurement)
    value = r and r[field]
    flop = r and r.get("flop_ratio_vs_none")
    met = (
        "–"
        if goal is None or value is None
        else ("yes" if (value <= goal if op == "<=" else value >= goal) else "**no**")
    )
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
    print(
        f"| {label} | {fmt(value)} | {fmt(flop) if field == 'time_ratio_vs_none' else ''} | {op} {goal if goal else ''} | {met} |"
    )
