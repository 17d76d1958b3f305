#!/usr/bin/env sh
# The intervention behind "spectral norm's unused Lipschitz budget costs it the grid" (issue #41
# item 4): the identical ReLU critic and config (spectral norm's grid config from the exhaustive
# full-budget search, studies/tuned-sn-grid-full/chosen.json, trial 8), trained
#   * with spectral norm as it is (its critics' largest input gradient: 0.11-0.21),
#   * with spectral norm and the critic's output times 9 (spectral_norm.output_scale: the same
#     normalized critic, nine times the slope, about the whole budget), and
#   * with Björck's orthonormal layers (every singular value 1),
# 5 seeds each at 4,000 iterations. Re-running the same command resumes.
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
exec nice -n 15 lipgan study --dataset grid --seeds 5 \
  --constraint spectral_norm \
  --constraint spectral_norm:spectral_norm.output_scale=9 \
  --constraint bjorck \
  --bind 'train.n_critic = 5' \
  --bind 'critic/linear_decay.initial_learning_rate = 0.0007301519906092517' \
  --bind 'generator/linear_decay.initial_learning_rate = 0.0007301519906092517' \
  --bind 'critic/linear_decay.decay_steps = 20000' \
  --bind 'generator/linear_decay.decay_steps = 4000' \
  --bind 'critic/Adam.beta_1 = 0.05761549621668827' --bind 'critic/Adam.beta_2 = 0.9' \
  --bind 'generator/Adam.beta_1 = 0.05761549621668827' --bind 'generator/Adam.beta_2 = 0.9' \
  --out studies/intervention-sn "$@"
