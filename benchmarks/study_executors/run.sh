#!/bin/sh
# Wall time of the quick study with the local pool and with the Ray executor (a fresh local Ray
# instance, started and stopped by the study: its start-up is part of the overhead), run back to
# back, ROUNDS times (default 2), each in a fresh study dir. From the repository root:
#     unshare -n sh -c 'ip link set lo up && sh benchmarks/study_executors/run.sh'
# (needs pip install -e '.[ray]'; the namespace keeps the Ray instance on loopback, docs/study.md)
# Prints one line per run and the Ray/local ratio per round; results.md records a run.
set -e
ROUNDS=${ROUNDS:-2}
TMP=$(mktemp -d)
export TF_CPP_MIN_LOG_LEVEL=3
STUDY="lipgan study --quick --constraint gradient_penalty --constraint spectral_norm --quiet"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  cores: $(nproc)"
for round in $(seq "$ROUNDS"); do
  for executor in local ray; do
    start=$(date +%s.%N)
    $STUDY --executor "$executor" --out "$TMP/$executor$round" >/dev/null 2>"$TMP/$executor$round.err"
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc)
    echo "round $round  $executor  wall ${wall}s  load $(cut -d' ' -f1 /proc/loadavg)"
    eval "w_$executor=$wall"
  done
  echo "round $round  ray/local = $(echo "scale=3; $w_ray / $w_local" | bc)"
done
rm -rf "$TMP"
