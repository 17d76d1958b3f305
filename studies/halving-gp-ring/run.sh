#!/usr/bin/env sh
# The first of the two gradient_penalty ring searches that issue #41 item 2 compares ("the choice
# survives a re-search with other seeds on two rows"; the first row is spectral norm on the grid):
# the same successive halving as studies/tuned-halving (eta 3, rungs of 444, 1,333 and 4,000
# iterations, 2 seeds per config per rung, the search seeds from 2000) on its own, so that the
# row's choice is known before studies/tuned-halving reaches its rung 2, and the chosen config over
# 5 fresh seeds, as in studies/research-gp-ring (the re-search, seeds from 6000).
# Its rung-1 runs are studies/tuned-halving's own GP ring runs: the same 40 cells (the configs are
# drawn per constraint and index, the seeds per config and seed), copied here when this study has
# none yet, so only rungs 2 and 3 and the replicates train. Without the copy they train again, to
# the same numbers on the same code. Run both on the code of studies/tuned-halving's snapshot:
#   LIPGAN_TREE=/path/to/a/checkout/of/ef34b9c sh studies/halving-gp-ring/run.sh
# Re-running the same command resumes.
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
out=studies/halving-gp-ring
first=studies/tuned-halving/search/runs/ring/gradient_penalty
if [ ! -d "$out/search/runs" ] && [ -d "$first" ]; then
  mkdir -p "$out/search/runs/ring" && cp -R "$first" "$out/search/runs/ring/"
fi
exec nice -n 15 lipgan tune --constraint gradient_penalty --dataset ring --configs 20 \
  --search halving --eta 3 --rungs 3 --search-seeds 2 --seeds 5 --out "$out" "$@"
