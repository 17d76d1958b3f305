#!/usr/bin/env sh
# Successive halving on spectral norm, grid (issue #41 item 2): the same 20 configs as the
# exhaustive full-budget search in studies/tuned-sn-grid-full (one seed of every config at 4,000
# iterations: 80,000 iterations), searched with eta = 3 and three rungs (444, 1,333 and 4,000
# iterations; 20, 7 and 3 configs) at 2 seeds per config per rung: 46,200 iterations (58 %).
# The second try: eta = 4 (studies/halving-sn-grid) dropped the exhaustive search's choice at
# 1,000 iterations, where it was third of five.
# The chosen config is then re-run over 5 fresh seeds like the exhaustive search's. Re-running
# the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
exec nice -n 15 lipgan tune --constraint spectral_norm --dataset grid --configs 20 \
  --search halving --eta 3 --rungs 3 --search-seeds 2 --seeds 5 \
  --out studies/halving-sn-grid-eta3 "$@"
