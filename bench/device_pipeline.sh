#!/usr/bin/env bash
# The pipeline on one GPU machine (written for the device tool's single H200), in two parts
# that each fit one 10-minute call:
#   train: GPU and software; the tiny and medium presets with all 8 roles (5 target + 3 drafter
#          workers) on GPU 0 through compiled flex_attention (the "called without
#          torch.compile" warning is an error, so a silent unfused fallback fails the run);
#          a worker fault on the GPU.
#   bench: bench/flex_vs_dense.py at seq 4096 (flex, dense, flex-eager), then flex again with
#          the drafter layers checkpointed (the same kernels: Inductor's cache makes it cheap).
#   medium: only the medium preset's run (about 5 minutes).
#   drill: the tiny preset stopped by SIGTERM at step 40 (a checkpoint must appear), then
#          `--resume auto` from it, stopped again (the supervisor's restart, on the GPU).
#   mask:  bench/block_mask_compile.py at the medium shape: the pipeline's compile options,
#          torch's defaults (which hung ptxas there), and eager; each in a fresh process.
#   all:   train and bench (needs about 15 minutes).
# Installs nothing. Each step has a time limit; at the limit the step gets SIGUSR1 first, which
# makes dflash-train and the benchmark print every thread's stack (where a compile or a worker
# hangs), and SIGKILL 20 s later. Results land in $OUT (8 files at most come back).
#
#   OUT=/tmp/out bash bench/device_pipeline.sh train
set -u
PART=${1:-all}
OUT=${OUT:-/tmp/dflash-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
. bench/device_env.sh
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
ROLES=(--target-gpus 0 --drafter-gpus 0 --allow-shared-gpus
  --target-workers 5 --drafter-workers 3 --attention flex --stall-timeout 120)
T0=$(date +%s)
SUMMARY="$OUT/summary-$PART.txt"

note() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$SUMMARY"; }
limit() { timeout -s USR1 -k 20 "$@"; }

env_info() {
  {
    nvidia-smi
    $PY -c 'import sys, torch, transformers, triton
print("python", sys.version.split()[0], "torch", torch.__version__, "transformers",
      transformers.__version__, "triton", triton.__version__)
print("cuda", torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.device_count(), "GPU")'
  } >"$OUT/env.txt" 2>&1
  note "env: $(tail -2 "$OUT/env.txt" | tr '\n' ' ')"
}

run_train() { # name seconds args... (a retry appends to the same two files)
  local name=$1 secs=$2
  shift 2
  local t=$(date +%s)
  echo "=== dflash-train $*" >>"$OUT/$name.log"
  limit "$secs" $PY -m dflash_train.train "${ROLES[@]}" --out-dir "/tmp/dflash-$name" \
    --events "$OUT/${name}_events.jsonl" "$@" >>"$OUT/$name.log" 2>&1
  local rc=$?
  note "$name: rc=$rc in $(($(date +%s) - t)) s; fallback warnings: $(grep -c 'without torch.compile' "$OUT/$name.log")"
  grep -E '^(eval|dflash-train: (generated|compil|warm|done|error|warning))' "$OUT/$name.log" |
    tail -n 12 | tee -a "$SUMMARY"
  grep -E '^step=' "$OUT/$name.log" | sed -n '1p;$p' | tee -a "$SUMMARY"
  return $rc
}

part_train() {
  run_train tiny 150 --preset tiny
  run_train medium 330 --preset medium
  local t=$(date +%s) # a worker that raises: non-zero exit within seconds (tiny's cached kernels)
  DFLASH_FAULT=drafter:1:step:3 limit 60 $PY -m dflash_train.train "${ROLES[@]}" --preset tiny \
    --out-dir /tmp/dflash-fault --events /tmp/dflash-fault/ev.jsonl >/tmp/dflash-fault.log 2>&1
  note "fault drafter:1:step:3: rc=$? in $(($(date +%s) - t)) s; $(grep -c Traceback /tmp/dflash-fault.log) traceback(s)"
  tail -n 2 /tmp/dflash-fault.log | tee -a "$SUMMARY"
}

part_bench() {
  local t=$(date +%s)
  limit 330 $PY bench/flex_vs_dense.py --seq 4096 --anchors 512 --block 16 --runs 10 \
    --warmup 3 --modes flex,dense,flex-eager --out "$OUT/bench.json" >"$OUT/bench.log" 2>&1
  note "bench: rc=$? in $(($(date +%s) - t)) s"
  t=$(date +%s)
  limit 150 $PY bench/flex_vs_dense.py --seq 4096 --anchors 512 --block 16 --runs 5 \
    --warmup 2 --modes flex --grad-checkpoint >>"$OUT/bench.log" 2>&1
  note "bench --grad-checkpoint: rc=$? in $(($(date +%s) - t)) s"
  grep -E '^(\||\{|flex|dense)' "$OUT/bench.log" | tee -a "$SUMMARY"
}

part_mask() { # variant seconds [extra args]: one fresh process and Inductor cache per variant
  local v secs
  for spec in pipeline:90 eager:45 default:75; do
    v=${spec%%:*} secs=${spec##*:}
    local t=$(date +%s)
    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) limit "$secs" $PY bench/block_mask_compile.py \
      --variant "$v" --seq 2048 >>"$OUT/mask.log" 2>&1
    note "block mask $v: rc=$? in $(($(date +%s) - t)) s (limit $secs s)"
  done
  grep '^{' "$OUT/mask.log" | tee -a "$SUMMARY"
}

part_drill() {
  local args=("${ROLES[@]}" --preset tiny --out-dir /tmp/dflash-drill --steps 100000)
  rm -rf /tmp/dflash-drill
  $PY -m dflash_train.train "${args[@]}" >"$OUT/drill.log" 2>&1 &
  local p=$! i
  for i in $(seq 1 150); do grep -q '^step=40 ' "$OUT/drill.log" && break; sleep 1; done
  kill -TERM $p
  wait $p
  note "drill: SIGTERM rc=$?; checkpoints: $(ls /tmp/dflash-drill/checkpoints | tr '\n' ' ')"
  $PY -m dflash_train.train "${args[@]}" --resume auto >"$OUT/resume.log" 2>&1 &
  p=$!
  for i in $(seq 1 150); do grep -q '^step=' "$OUT/resume.log" && break; sleep 1; done
  sleep 2
  kill -TERM $p
  wait $p
  note "drill: resumed run SIGTERM rc=$?; checkpoints: $(ls /tmp/dflash-drill/checkpoints | tr '\n' ' ')"
  grep -hE 'resumed|stopped|checkpoint|schedule' "$OUT/drill.log" "$OUT/resume.log" | tee -a "$SUMMARY"
  grep -h '^step=' "$OUT/resume.log" | sed -n '1p;$p' | tee -a "$SUMMARY"
}

env_info
case "$PART" in
  drill) part_drill ;;
  train) part_train ;;
  medium) run_train medium 330 --preset medium ;;
  mask) part_mask ;;
  bench) part_bench ;;
  *) part_train; part_bench ;;
esac
note "total $(($(date +%s) - T0)) s"
