#!/usr/bin/env sh
# The converged ring/grid study (docs/study.md): every built-in constraint at each config's own
# 4,000 iterations, curves every 250 iterations. One study per data set so that both progress side
# by side on 2 cores. SEEDS=2 first (every row gets seeds early), then SEEDS=5 with --force reuses
# the finished cells (a cell is finished when its result.json records the same cell). Re-running
# the same command resumes; a finished study only rebuilds its report.
set -eu
SEEDS=${SEEDS:-5}
FORCE=${FORCE---force}  # FORCE= (empty) drops it
export TF_CPP_MIN_LOG_LEVEL=3
for data in ring grid; do
  nice -n 10 lipgan study --dataset "$data" --seeds "$SEEDS" --jobs 1 $FORCE \
    --out "studies/converged/$data" \
    --constraint gradient_penalty --constraint spectral_norm \
    --constraint 'bjorck:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin' \
    --constraint 'aol:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin' \
    --constraint weight_clip --constraint lipschitz_penalty --constraint dragan --constraint r1 \
    --constraint 'gradient_penalty:every=4' --constraint 'gradient_penalty:every=16' &
done
wait
