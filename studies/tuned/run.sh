#!/usr/bin/env sh
# The tuned study (docs/study.md, "Each constraint at its own best"): every constraint with a
# search space, ring and grid, 20 configs each at 1,000 iterations, the best over 5 seeds at
# 4,000 with generator EMA, on Ray Tune (one trial per run, one CPU each). Re-running the same
# command resumes: finished runs are read back from their result.json.
#   LIPGAN_TREE=/path/to/a/checkout runs that tree's code (a snapshot, so that editing the work
#   tree does not change the code of runs still to start); run it from that tree with an
#   absolute --out, since Ray puts the driver's working directory first on its workers' path.
# The committed runs were trained by lipgan at d9fd664 (run dirs before run.json): finish the
# study with that tree (a newer lipgan refuses their unfinished run dirs: the study stops and
# records nothing). With the checkout in $MAIN:
#   git -C $MAIN worktree add /work/study-tree d9fd664 && cd /work/study-tree &&
#   PYTHONPATH=$PWD lipgan tune --configs 20 --search-steps 1000 --seeds 5 --executor tune \
#     --shared $MAIN/studies/converged/ring --shared $MAIN/studies/converged/grid \
#     --out $MAIN/studies/tuned
# When the runs are done, `sh studies/tuned/run.sh --bench` on quiet cores adds the side-by-side
# timing behind the seconds to target.
set -eu
export TF_CPP_MIN_LOG_LEVEL=3
if [ -n "${LIPGAN_TREE:-}" ]; then export PYTHONPATH="$LIPGAN_TREE"; fi
exec nice -n 10 lipgan tune --configs 20 --search-steps 1000 --seeds 5 --executor tune \
  --shared studies/converged/ring --shared studies/converged/grid --out studies/tuned "$@"
