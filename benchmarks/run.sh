#!/bin/sh
# The commands behind benchmarks/RESULTS.md (run from the repository root; ~15-25 min on 2 cores shared with other jobs).
set -e
ALL="--constraint none --constraint weight_clip --constraint spectral_norm --constraint gradient_penalty"
ALL="$ALL --constraint gradient_penalty:fast_relu=True --constraint gradient_penalty:every=16"
# toy MLP, batch 256: everything, tf.function and XLA, with the keras-io baseline.
lipgan bench --model toy --mode function --steps-per-execution 5 $ALL --out benchmarks/toy
# DCGAN 32x32, batch 64: penalty and critic step for every constraint.
lipgan bench --model dcgan --mode function --measure penalty --measure critic_step $ALL --out benchmarks/dcgan_step
# DCGAN full iterations (5 critic updates + 1 generator update) against keras-io.
lipgan bench --model dcgan --mode function --measure iteration --steps-per-execution 1 \
  --constraint none --constraint gradient_penalty --constraint gradient_penalty:fast_relu=True \
  --out benchmarks/dcgan_iteration
