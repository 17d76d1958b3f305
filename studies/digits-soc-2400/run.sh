#!/usr/bin/env sh
# SOC in lipgan's 'after' order (soc.downsample='after': the series at the input's resolution,
# then the downsampling) on the digits data set at three times studies/digits-soc-order's
# iterations (2,400 against 800; 5 seeds, MaxMin, the DCGAN critic). Planned as equal seconds by
# the DCGAN bench's critic-step ratio (~3.4x, benchmarks/soc_order); measured beside
# digits-soc-order's cells, a whole digits iteration of 'after' costs 1/1.7 of the reference's, so
# these runs had ~1.7x the seconds of 800 reference iterations (docs/study.md, "SOC's two orders").
# Code: snapshot 5ad24bb or later. Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
needs_snapshot="its soc rows are Hoelder's scale, soc's default before 2026-12-07: set LIPGAN_TREE to a checkout of 5ad24bb (or of any commit before the change)"
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
exec nice -n 10 lipgan study --dataset digits --seeds 5 --steps 2400 \
  --constraint "soc:downsample=after,dcgan_critic.activation=maxmin" \
  --out studies/digits-soc-2400 "$@"
