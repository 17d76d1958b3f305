#!/usr/bin/env sh
# SOC's two orders on the digits data set (issue #39), at studies/digits-certified's protocol (5
# seeds, 800 iterations, MaxMin, the DCGAN critic), scored by the shipped digits classifier: the
# reference's order (soc.downsample='before', the default: invertible downsampling, then the
# series) against lipgan's 'after' (the series at the input's resolution, then the downsampling:
# s² times fewer multiply-adds; benchmarks/soc_order). Code: snapshot 5ad24bb or later.
# Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
needs_snapshot="its soc rows are Hoelder's scale, soc's default before 2026-12-07: set LIPGAN_TREE to a checkout of 5ad24bb (or of any commit before the change)"
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
maxmin=dcgan_critic.activation=maxmin
exec nice -n 10 lipgan study --dataset digits --seeds 5 --steps 800 \
  --constraint "soc:downsample=before,$maxmin" --constraint "soc:downsample=after,$maxmin" \
  --out studies/digits-soc-order "$@"
