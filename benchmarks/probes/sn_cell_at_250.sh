#!/bin/bash
# bash benchmarks/probes/sn_cell_at_250.sh COMMIT
# Trains studies/tuned-sn-grid-full's first replicate (spectral norm, grid, config 8, seed 0) with
# COMMIT's code, in this checkout's .venv, to its curve point at iteration 250, and prints that
# point's sliced W1 (docs/study.md: 0.863 in the 12-05 cells, 0.437 in today's, whatever the commit).
# COMMIT is checked out in a worktree at $PROBE_TREE (default /tmp/lipgan-probe-tree); older commits
# ran cells as `python -m lipgan.study.cell`, newer ones as `python -m lipgan.config.cells`.
# Exit 125 (git bisect's "skip") when the commit cannot train the cell.
set -u
c=$1; tree=${PROBE_TREE:-/tmp/lipgan-probe-tree}
repo=$(git rev-parse --show-toplevel); cd "$repo"
[ -d $tree ] || git worktree add -q --detach $tree $c
git -C $tree checkout -q --detach $c || exit 125
. $repo/.venv/bin/activate
LIPGAN_TREE=$tree . "$repo/studies/snapshot.sh"  # COMMIT's lipgan and plugins first on the path
if [ -f $tree/lipgan/config/cells.py ]; then mod=lipgan.config.cells; else mod=lipgan.study.cell; fi
work=$(mktemp -d); python3 -c "
import json; r=json.load(open('$repo/studies/tuned-sn-grid-full/final/runs/grid/spectral_norm/seed0/result.json')); json.dump(r['cell'], open('$work/cell.json','w'))"
cd $work
setsid python -m $mod $work/cell.json $work/run > $work/log 2>&1 &
pid=$!
for i in $(seq 600); do
  if grep -q '"step": 250' $work/run/curve.jsonl 2>/dev/null; then break; fi
  kill -0 $pid 2>/dev/null || { echo "died"; tail -3 $work/log; exit 125; }
  sleep 1
done
kill -- -$pid 2>/dev/null; sleep 1; kill -9 -- -$pid 2>/dev/null
grep '"step": 250' $work/run/curve.jsonl | python3 -c "import json,sys; print('$c', json.loads(sys.stdin.read())['sliced_w1'])"
