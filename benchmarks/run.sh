#!/bin/sh
# The two commands behind benchmarks/RESULTS.md (about 10-15 minutes on 2 CPU cores).
set -e
# A: every measurement, eager-free (tf.function), both models, with the keras-io baseline.
lipgan bench --model toy --model dcgan --mode function --steps-per-execution 5 \
  --constraint none --constraint weight_clip --constraint spectral_norm \
  --constraint gradient_penalty --constraint gradient_penalty:fast_relu=True \
  --out benchmarks/a
# B: lazy GP (every 16), amortized over whole periods: critic steps only (16 DCGAN iterations per
# repetition would take minutes).
lipgan bench --model toy --model dcgan --mode function --measure critic_step --no-keras-io \
  --constraint none --constraint gradient_penalty --constraint gradient_penalty:every=16 \
  --out benchmarks/b
