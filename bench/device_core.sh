#!/usr/bin/env bash
# The supervisor's GPU paths on a real GPU (run on the device machine, from the repo root):
# real nvidia-smi and NVML through the probe, status --json with a run-owned and a foreign
# torch process, kill (memory released), restart. Outputs land in $OUT.
set -u
# Many small files: gathered into one archive at the end (the device tool returns 8 files).
O=/tmp/dflash-core
mkdir -p "$O"
. bench/device_env.sh
R=/tmp/dflash-runs
T=${TOPO:-0:}
S() { python3 -m dflash_tui.cli.main status --json --topology "$T" --run-root "$R" "$@"; }
F=index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,memory.reserved,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,pstate,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total
{
  echo "== idle"
  nvidia-smi --query-gpu=$F --format=csv,noheader,nounits | tee "$O/q_gpu_idle.csv"
  python3 tui/core/probe/main.py --once >"$O/probe_idle_nvml.json"
  python3 tui/core/probe/main.py --once --no-nvml >"$O/probe_idle_smi.json"
  S >"$O/status_idle.json"; echo "status rc=$?"
  echo "== launch a run-owned torch job through control"
  python3 -m dflash_tui.cli.main launch --topology "$T" --run-root "$R" --json \
    --command "python3 $PWD/bench/gpu_hold.py --gib 20 --busy" | tee "$O/launch.json"
  sleep 15
  nvidia-smi --query-gpu=$F --format=csv,noheader,nounits | tee "$O/q_gpu_load.csv"
  nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid,process_name --format=csv,noheader,nounits | tee "$O/q_apps_load.csv"
  python3 tui/core/probe/main.py --once >"$O/probe_load_nvml.json"
  S >"$O/status_run.json"; echo "status rc=$?"
  echo "== a foreign job beside it"
  python3 bench/gpu_hold.py --gib 5 & FPID=$!
  sleep 12
  S >"$O/status_foreign.json"; echo "status rc=$?"
  kill "$FPID"; wait "$FPID" 2>/dev/null
  echo "== kill through control"
  python3 -m dflash_tui.cli.main kill --topology "$T" --run-root "$R" --json --grace 5 | tee "$O/kill.json"
  sleep 2
  nvidia-smi --query-gpu=$F --format=csv,noheader,nounits | tee "$O/q_gpu_after_kill.csv"
  S >"$O/status_killed.json"; echo "status rc=$?"
  echo "== restart (launch again) and the dflash pipeline under control"
  python3 -m dflash_tui.cli.main restart --topology "$T" --run-root "$R" --json --grace 5 \
    --command "python3 -m dflash_train.train --preset tiny --target-gpus 0 --drafter-gpus 0 --allow-shared-gpus --target-workers 5 --drafter-workers 3 --steps 400" \
    | tee "$O/restart.json"
  sleep 25
  S >"$O/status_pipeline.json"; echo "status rc=$?"
  python3 -m dflash_tui.cli.main kill --topology "$T" --run-root "$R" --json --grace 10 | tee "$O/kill2.json"
  tail -n 30 "$R"/*/output.log >"$O/run_logs.txt" 2>&1
} 2>&1 | tee "$O/device_core.log"
tar czf "${OUT:-/tmp}/device_core.tgz" -C "$(dirname "$O")" "$(basename "$O")"
cp "$O/device_core.log" "${OUT:-/tmp}/"
