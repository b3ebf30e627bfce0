#!/usr/bin/env bash
# dflash-train as one torchrun job of 2 processes on the device machine, from the repo root,
# one call (under 5 minutes), nothing installed:
#   gloo:  2 processes on the one GPU (--rank-gpu-offset 0: both ranks' roles on cuda:0),
#          gloo between them (NCCL refuses two ranks on one GPU); the tiny preset, 60 steps,
#          compiled flex, 2 target + 2 drafter workers a rank, a checksum every 10 steps;
#   nccl:  the same with one GPU a process and NCCL, only when `nvidia-smi -L` lists 2 GPUs;
#   fault: gloo again, rank 1's drafter 0 raises at step 5: both must end, non-zero, fast.
#   drill (only with `drill`): SIGTERM to the job at step 20, then `--resume auto`.
# Each job runs in the background with a time limit; at the limit its workers get SIGUSR1
# (dflash-train prints every thread's stack), torchrun SIGTERM, and 40 s later whatever is left
# of both SIGKILL (the workers run in their own sessions: found by the pids in the events).
# Results in $OUT (8 files at most): summary.txt, gloo.log, gloo_events.jsonl, nccl.log,
# nccl_events.jsonl, fault.log (its events at the end), checksums.txt (every replica_checksum
# line and event), drill.log.
#   OUT=$OUT bash bench/device_torchrun.sh          # gloo, nccl if 2 GPUs, fault
#   OUT=$OUT bash bench/device_torchrun.sh drill
# DEVICE=cpu runs the same on the CPU (a dry run of this script; PYTHON=.venv/bin/python).
set -u
PART=${1:-all}
OUT=${OUT:-/tmp/dflash-torchrun}
W=/tmp/dflash-torchrun-work
rm -rf "$W"
mkdir -p "$OUT" "$W"
. bench/device_env.sh
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
T0=$(date +%s)
SUMMARY="$OUT/summary.txt"
note() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$SUMMARY"; }

if [ "${DEVICE:-cuda}" = cpu ]; then
  ROLES=(--device cpu --target-workers 1 --drafter-workers 2 --threads 1)
  GPUS=0
else
  ROLES=(--target-gpus 0 --drafter-gpus 0 --allow-shared-gpus --target-workers 2
    --drafter-workers 2 --attention flex)
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  note "$(nvidia-smi -L 2>&1 | head -4 | tr '\n' ' ')"
fi
note "env: $($PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPU(s)")' 2>&1)"
COMMON=(--preset tiny --stall-timeout 120 --dist-timeout 60 --checksum-every 10)

worker_pids() { # the ranks' pids, from rank 0's `distributed` event
  $PY -c 'import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "distributed":
        print(" ".join(str(r["pid"]) for r in e["ranks"]))' "$1" 2>/dev/null | tail -1
}

job() { # name seconds events-file args... : one torchrun job, its log in $OUT/name.log
  local name=$1 secs=$2 ev=$3 t=$(date +%s) p pids i
  shift 3
  echo "=== torchrun --nproc-per-node 2 -m dflash_train.train $*" >>"$OUT/$name.log"
  $PY -m torch.distributed.run --standalone --nproc-per-node 2 --max-restarts 0 \
    -m dflash_train.train "${COMMON[@]}" --events "$ev" "$@" >>"$OUT/$name.log" 2>&1 &
  p=$!
  echo $p >"$W/$name.pid"
  for ((i = 0; i < secs; i++)); do kill -0 $p 2>/dev/null || break; sleep 1; done
  pids=$(worker_pids "$ev")
  if kill -0 $p 2>/dev/null; then
    note "$name: still running after $secs s: stacks (SIGUSR1), then SIGTERM to torchrun"
    [ -n "$pids" ] && kill -USR1 $pids 2>/dev/null
    sleep 3
    kill -TERM $p 2>/dev/null
    for ((i = 0; i < 40; i++)); do kill -0 $p 2>/dev/null || break; sleep 1; done
    kill -KILL $p 2>/dev/null
  fi
  wait $p
  local rc=$?
  for i in $pids; do kill -0 "$i" 2>/dev/null && { note "$name: worker $i left over: SIGKILL"; kill -KILL "$i"; }; done
  note "$name: torchrun rc=$rc in $(($(date +%s) - t)) s; step lines $(grep -c '^step=' "$OUT/$name.log"); checksum mismatches $(grep -c 'replica_checksum.*equal=False' "$OUT/$name.log")"
  grep -hE '^(\[rank 1\] )?dflash-train: (rank|process group|global|training|done|stopped|error|warning|checkpoint|resumed|weights)|^(\[rank 1\] )?[A-Za-z_.]*(Error|Mismatch):' "$OUT/$name.log" |
    cut -c1-300 | tail -n 14 | tee -a "$SUMMARY"
  grep -E '^step=' "$OUT/$name.log" | sed -n '1p;$p' | tee -a "$SUMMARY"
  return $rc
}

checksums() { # every replica_checksum line of the logs and event of the streams
  grep -h 'replica_checksum' "$OUT"/*.log "$OUT"/*_events.jsonl "$W"/*.jsonl 2>/dev/null >"$OUT/checksums.txt"
  note "checksums: $(grep -c '"replica_checksum"' "$OUT/checksums.txt") events ($(grep -c '"equal":false' "$OUT/checksums.txt") unequal), $(grep -c 'dflash-train: replica_checksum' "$OUT/checksums.txt") log lines"
}

part_all() {
  job gloo 170 "$OUT/gloo_events.jsonl" "${ROLES[@]}" --rank-gpu-offset 0 --dist-backend gloo \
    --out-dir "$W/gloo" --steps 60
  if [ "$GPUS" -ge 2 ]; then # one GPU a process: local rank 1 takes cuda:1 (the default offset)
    job nccl 120 "$OUT/nccl_events.jsonl" "${ROLES[@]}" --out-dir "$W/nccl" --steps 60
  else
    note "nccl: skipped, $GPUS GPU(s) listed by nvidia-smi -L (NCCL needs one GPU a rank)"
  fi
  if [ $(($(date +%s) - T0)) -lt 200 ]; then
    DFLASH_FAULT=drafter:0:step:5:rank:1 job fault 70 "$W/fault_events.jsonl" "${ROLES[@]}" \
      --rank-gpu-offset 0 --dist-backend gloo --out-dir "$W/fault" --steps 60
    note "fault: $(grep -c 'injected fault' "$OUT/fault.log") line(s) naming the injected fault"
    { echo "=== events"; cat "$W/fault_events.jsonl"; } >>"$OUT/fault.log"
  else
    note "fault: skipped, out of time"
  fi
}

part_drill() { # SIGTERM to the job after step 20; then --resume auto to the end
  local args=("${ROLES[@]}" --rank-gpu-offset 0 --dist-backend gloo --out-dir "$W/drill" --steps 60)
  job drill 150 "$W/drill_events.jsonl" "${args[@]}" &
  local j=$! i
  for ((i = 0; i < 140; i++)); do grep -q '^step=20 ' "$OUT/drill.log" 2>/dev/null && break; sleep 1; done
  kill -TERM "$(cat "$W/drill.pid")" # torchrun (by its pid): it forwards SIGTERM to the ranks
  wait $j
  note "drill: stopped; checkpoints: $(ls "$W/drill/checkpoints" 2>/dev/null | tr '\n' ' ')"
  job drill 120 "$W/drill_events.jsonl" "${args[@]}" --resume auto
}

case "$PART" in
  drill) part_drill ;;
  *) part_all ;;
esac
checksums
note "total $(($(date +%s) - T0)) s"
