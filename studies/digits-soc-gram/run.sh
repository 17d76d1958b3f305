#!/usr/bin/env sh
# SOC scaled by the Gram bound (soc.bound='gram': L's scale from the flattened kernel's norm by
# Gram iteration, ~0.5 of soc.norm at initialization where Hoelder's default gives 0.04-0.20) in
# both orders, on the digits data set at studies/digits-soc-order's protocol (5 seeds, 800
# iterations, MaxMin, the DCGAN critic), scored by the shipped digits classifier: compare with
# digits-soc-order's rows (the same seeds, Hoelder's scale). 'after' first: it is the order whose
# cost meets issue #39's 2.5x. Code: snapshot 2d75d86 or later. Re-running the same command resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
maxmin=dcgan_critic.activation=maxmin
exec nice -n 10 lipgan study --dataset digits --seeds 5 --steps 800 \
  --constraint "soc:downsample=after,bound=gram,$maxmin" \
  --constraint "soc:downsample=before,bound=gram,$maxmin" \
  --out studies/digits-soc-gram "$@"
