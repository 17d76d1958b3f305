#!/usr/bin/env sh
# SOC's scale on ring and grid (issue #39): Hoelder's bound (soc's default) against the Gram bound
# (soc.bound='gram'), the MLP critic with MaxMin, each data set's shipped config and 4,000
# iterations, 3 seeds. On the MLP critic's 512-wide Dense layers Hoelder's bound is ~10x the exact
# norm of a random skew matrix, so the default scale leaves rotations of ~0.05 rad; the Gram bound
# is within 0.5 % of it. One intervention: only the scale differs. Code: snapshot 2d75d86 or later.
# Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
needs_snapshot="its soc rows are Hoelder's scale, soc's default before 2026-12-07: set LIPGAN_TREE to a checkout of 2d75d86 (or of any commit before the change)"
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
maxmin=mlp_critic.activation=maxmin
exec nice -n 10 lipgan study --dataset ring --dataset grid --seeds 3 \
  --constraint "soc:$maxmin" --constraint "soc:bound=gram,$maxmin" \
  --out studies/toy-soc-gram "$@"
