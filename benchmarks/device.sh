#!/bin/sh
# The accelerator sweep: one GPU (default strategy) or a TPU VM (tpu strategy), <= 8 minutes.
#     sh benchmarks/device.sh            # on a GPU machine  -> benchmarks/device_gpu/
#     sh benchmarks/device.sh tpu        # on a TPU VM       -> benchmarks/device_tpu/
# Rows: toy MLP and DCGAN, batch 64-1024; no constraint vs gradient penalty; penalty alone, critic
# step and full iteration (the penalty's share of the step = penalty time / critic-step time);
# tf.function vs XLA (TPUs always compile: their function and xla rows are both XLA); float32 vs
# bf16 (mixed_bfloat16). examples/s per chip: examples_per_s_per_replica in results.json.
# LIPGAN_DEVICE_TINY=1 checks the logic on a CPU in a few minutes (tiny batches, one repetition,
# results under /tmp/lipgan-device-tiny). Each bench call is capped by `timeout` so that the whole
# script stays within its budget even if one compile is slow; a capped call is reported, not fatal.
set -u
KIND=${1:-gpu}
case "$KIND" in
  gpu) STRATEGY=default ;;
  tpu) STRATEGY=tpu ;;
  *) echo "usage: sh benchmarks/device.sh [gpu|tpu]" >&2; exit 2 ;;
esac
OUT=benchmarks/device_$KIND
BATCH_TOY="toy=64,256,1024"
BATCH_DCGAN="dcgan=64,256,1024"
REPS="--repetitions 3 --min-rep-seconds 0.1"
CAP=110
if [ -n "${LIPGAN_DEVICE_TINY:-}" ]; then
  OUT=/tmp/lipgan-device-tiny
  BATCH_TOY="toy=16,32"
  BATCH_DCGAN="dcgan=8"
  REPS="--repetitions 1 --min-rep-seconds 0.01 --n-critic 2"
  CAP=600
fi
MODES="--mode function --mode xla --mode function+bf16 --mode xla+bf16"
CONSTRAINTS="--constraint none --constraint gradient_penalty"
STATUS=0
run() {  # name, then lipgan bench arguments
  name=$1; shift
  # shellcheck disable=SC2086
  timeout "$CAP" lipgan bench --strategy "$STRATEGY" "$@" --out "$OUT/$name" || {
    echo "device.sh: $name did not finish within ${CAP}s (or failed); see above" >&2
    STATUS=1
  }
}
mkdir -p "$OUT"
nvidia-smi -L > "$OUT/devices.txt" 2>/dev/null || echo "no nvidia-smi" > "$OUT/devices.txt"
# shellcheck disable=SC2086
{
run toy_step --model toy $MODES $CONSTRAINTS --measure penalty --measure critic_step \
  --batch "$BATCH_TOY" --no-keras-io $REPS
run dcgan_step --model dcgan $MODES $CONSTRAINTS --measure penalty --measure critic_step \
  --batch "$BATCH_DCGAN" --no-keras-io $REPS
run toy_iteration --model toy --mode function --mode xla $CONSTRAINTS --measure iteration \
  --steps-per-execution 5 --batch "$BATCH_TOY" $REPS
run dcgan_iteration --model dcgan --mode function --mode xla $CONSTRAINTS --measure iteration \
  --steps-per-execution 1 --batch "$BATCH_DCGAN" $REPS
}
echo "device.sh: results in $OUT/*/results.md (commit them with the machine line they contain)"
exit $STATUS
