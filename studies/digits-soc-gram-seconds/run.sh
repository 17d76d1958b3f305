#!/usr/bin/env sh
# SOC's 'after' order with the Gram scale at equal seconds to the reference's order: 1,370
# iterations, where studies/digits-soc-gram trained both orders for 800 and its 'before' cells took
# 765 ms per iteration against 'after''s 447 (800 x 765 / 447 = 1,369). Otherwise its protocol:
# digits, 5 seeds (the same), MaxMin, the DCGAN critic, scored by the shipped digits classifier.
# Compare with digits-soc-gram's 'before' row (FD 14.6 at 800 iterations): does the cheaper
# order catch up when it gets the same seconds? Code: snapshot 2d75d86 (digits-soc-gram's own),
# so the comparison differs only in the order and the iterations. Re-running the same command
# resumes.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start).
set -eu
needs_snapshot="it compares with studies/digits-soc-gram's cells: set LIPGAN_TREE to a checkout of 2d75d86"
. studies/snapshot.sh  # TF_CPP_MIN_LOG_LEVEL, and LIPGAN_TREE (a snapshot of the code)
exec nice -n 10 lipgan study --dataset digits --seeds 5 --steps 1370 \
  --constraint "soc:downsample=after,bound=gram,dcgan_critic.activation=maxmin" \
  --out studies/digits-soc-gram-seconds "$@"
