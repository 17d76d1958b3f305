#!/usr/bin/env sh
# The tuned study (docs/study.md, "Each constraint at its own best"): every constraint with a
# search space, ring and grid, 20 configs each at 1,000 iterations, the best over 5 seeds at
# 4,000 with generator EMA, on Ray Tune (one trial per run, one CPU each). Re-running the same
# command resumes: finished runs are read back from their result.json.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start); run it from that tree with an
#   absolute --out, since Ray puts the driver's working directory first on its workers' path.
# The committed runs were trained by lipgan at d9fd664 (run dirs before run.json); the study is
# finished, so the same command only rebuilds the reports from their result.json files (with
# --report-only, nothing is started). A newer lipgan refuses an *unfinished* run dir of that
# format: to re-run a cell, delete its run dir first.
# `sh studies/tuned/run.sh --bench` on quiet cores re-measures the side-by-side timing behind the
# seconds to target (bench.json).
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
# The study's eight constraints are named: a plain `lipgan tune` tunes every registered one, and
# constructions registered since (aoc, cayley, ...) would make it another study (spec.json).
exec nice -n 10 lipgan tune --configs 20 --search-steps 1000 --seeds 5 --executor tune \
  --constraint aol:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin \
  --constraint bjorck:mlp_critic.activation=maxmin,dcgan_critic.activation=maxmin \
  --constraint dragan --constraint gradient_penalty --constraint lipschitz_penalty \
  --constraint r1 --constraint spectral_norm --constraint weight_clip \
  --shared studies/converged/ring --shared studies/converged/grid --out studies/tuned "$@"
