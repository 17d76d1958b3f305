"""What keeping three generator EMAs costs against one: a ring run of 4,000 iterations each.

Two trainers of the ring's shipped config (gradient penalty, ``gin/ring.gin`` as a tuned
replicate builds it, :func:`lipgan.study.row_bench._trainer`), one with ``train.ema_decay =
0.999`` and one with ``(0.999, 0.99, 0.9999)``, both from ``ema_start`` 1,000, built and warmed up
in one process, then trained in turn in rounds of ``--chunk`` iterations until each has trained
``--steps``: interleaving puts both under the same machine conditions. Prints and writes
(``--out``, JSON) each one's seconds per iteration over its rounds and the ratio, total and the
median of the rounds' ratios.

    python benchmarks/ema_decays/bench.py --out benchmarks/ema_decays/results.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--out")
    args = parser.parse_args()

    from lipgan.progress import Progress
    from lipgan.study.row_bench import _trainer, machine
    from lipgan.study.spec import Cell

    quiet = Progress(lambda line: None)
    rows = {"1 decay": "0.999", "3 decays": "(0.999, 0.99, 0.9999)"}
    trainers = {}
    for name, decay in rows.items():
        bindings = (f"train.ema_decay = {decay}", "train.ema_start = 1000")
        trainer = _trainer(Cell("ring", "gradient_penalty", 0, args.steps, 2500, bindings))
        trainer.fit(10, progress=quiet)  # warm-up: tracing and the first batches
        trainers[name] = trainer
        print(f"built {name}: {len(trainer.wgan.generator_emas)} EMA copies", flush=True)
    seconds = {name: [] for name in rows}
    for _ in range(args.steps // args.chunk):
        for name, trainer in trainers.items():
            started = time.perf_counter()
            trainer.fit(trainer.step + args.chunk, progress=quiet)
            seconds[name].append(time.perf_counter() - started)
        print({n: round(s[-1], 2) for n, s in seconds.items()}, flush=True)
    per_iteration = {n: sum(s) / (len(s) * args.chunk) for n, s in seconds.items()}
    result = {
        "machine": machine(),
        "steps": args.steps,
        "chunk": args.chunk,
        "seconds_per_iteration": per_iteration,
        "ratio": per_iteration["3 decays"] / per_iteration["1 decay"],
        "median_round_ratio": statistics.median(
            b / a for a, b in zip(seconds["1 decay"], seconds["3 decays"], strict=True)
        ),
        "rounds": seconds,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
