#!/usr/bin/env sh
# A re-search of one row with other seeds (issue #41 item 2: "the choice survives a re-search with
# other seeds on two rows"): gradient_penalty on ring, the same 20 configs and the same successive halving as
# studies/tuned-halving (eta 3, rungs of 444, 1,333 and 4,000 iterations, 2 seeds per config per rung), with the
# search trials' seeds from 6000 (--search-seed) instead of 2000, and the chosen config over
# 5 fresh seeds. The choice survives when it is the first search's config, or one inside that
# config's interval; the first search is studies/halving-gp-ring (docs/study.md, "A second row").
# Its cells ran on snapshot ef34b9c, as studies/tuned-halving's. Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
exec nice -n 15 lipgan tune --constraint gradient_penalty --dataset ring --configs 20 \
  --search halving --eta 3 --rungs 3 --search-seeds 2 --search-seed 6000 --seeds 5 \
  --out studies/research-gp-ring "$@"
