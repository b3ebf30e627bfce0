#!/usr/bin/env bash
# dflash-tui beside nvitop 1.7.2 and beside a baseline tree of dflash-tui, on the device
# machine's GPU (one H200, no network): a torch job holds ~20 GiB on GPU 0 with 8 processes on
# the GPU (bench/gpu_hold.py, 1 busy + 7 idle holders), 40 more idle processes run, then
# bench/monitor_cost.py --b nvitop and --b baseline (each 3 intervals x 2 monitors x 2 repeats
# of SECONDS_EACH, default 13 s: about 4 minutes each). Needs .whl/ carried (textual, rich, asyncssh,
# nvitop, nvidia_ml_py, psutil; installed into /tmp/site by bench/device_env.sh) and torch.
# The baseline: the tree in BASELINE_DIR (default .baseline/) when carried (made here by
#   mkdir .baseline && git archive REV tui dflash | tar -x -C .baseline),
# else a git worktree of BASELINE_REV (the carried tree then needs its .git).
#   OUT=/tmp/out [BASELINE_DIR=D | BASELINE_REV=R] [RUNS="nvitop baseline nvitop@0:"] [PROBE=1]
#   [RSS=1] bash bench/device_monitor_cost.sh
# WARMUP (default 4 s), REPEATS (2), WINDOWS (1 a start of a monitor), INTERVALS (2,1,0.5)
# and RUN_LIMIT (270 s a comparison) change the windows: WARMUP=65 measures past the app's
# first minute, when a label's chip has stopped counting seconds (it says whole minutes from
# then on); WINDOWS=2 then pays that warm-up once for two windows.
set -u
OUT=${OUT:-/tmp/dflash-monitor-cost-out}
SECONDS_EACH=${SECONDS_EACH:-13}  # 2 x (3 x 2 x 2 x (13 + 4 warm-up) s + one-shots): ~8 min
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
source bench/device_env.sh
# nvitop and NVML for both monitors (device_env.sh installs the wheels only without textual).
if ! python3 -c 'import nvitop, pynvml, psutil' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  device_wheels | xargs python3 -m pip install -q --upgrade --no-index --no-deps --target /tmp/site
  export PYTHONPATH=$DEVICE_PY:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PATH=/tmp/site/bin:$PATH
{
  # TREE: what the caller says was copied here (a device copy's .git may be stale)
  echo "== $(date -u +%FT%TZ) $(hostname) tree ${TREE:-$(git rev-parse --short HEAD 2>/dev/null)}"
  nvidia-smi -L
  python3 -c 'import nvitop, pynvml, textual; print("nvitop", nvitop.__version__, "textual", textual.__version__)'
} 2>&1 | tee "$OUT/device_monitor_cost.log"
pids=()
python3 bench/gpu_hold.py --gib 20 --busy >"$OUT/gpu_hold_0.log" 2>&1 &
pids+=($!)
for i in 1 2 3 4 5 6 7; do  # 7 more processes with a CUDA context on GPU 0 (small holds)
  python3 bench/gpu_hold.py --gib 0.25 >"$OUT/gpu_hold_$i.log" 2>&1 &
  pids+=($!)
done
for i in $(seq 40); do sleep 100000 & pids+=($!); done
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 60); do  # until every holder holds its memory (CUDA start-up)
  n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)
  [ "$n" -ge 8 ] && break
  sleep 1
done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv | tee -a "$OUT/device_monitor_cost.log"
BASELINE_DIR=${BASELINE_DIR:-.baseline}
base=()
if [ -d "$BASELINE_DIR/tui" ]; then
  base=(--baseline-dir "$(cd "$BASELINE_DIR" && pwd)")
elif [ -n "${BASELINE_REV:-}" ]; then
  base=(--baseline-rev "$BASELINE_REV")
fi
# RUNS: which comparisons, in order; B@T runs both dflash-tuis with --topology T (`0:` draws
# the one GPU there is; the default topology names 8, so 7 panels say "missing").
for run in ${RUNS:-nvitop baseline}; do
  b=${run%%@*}
  topo=()
  [ "$b" != "$run" ] && topo=(--topology "${run#*@}")
  echo "== monitor_cost.py --b $b ${topo[*]}" | tee -a "$OUT/device_monitor_cost.log"
  timeout "${RUN_LIMIT:-270}" python3 bench/monitor_cost.py --b "$b" "${base[@]}" "${topo[@]}" \
    --seconds "$SECONDS_EACH" --warmup "${WARMUP:-4}" --repeats "${REPEATS:-2}" \
    --windows "${WINDOWS:-1}" --intervals "${INTERVALS:-2,1,0.5}" --out "$OUT" 2>&1 |
    tee -a "$OUT/device_monitor_cost.log"
done
# RSS=1: where each monitor's resident memory goes (bench/rss_parts.py, one GPU panel, 0.5 s;
# dflash-tui again with MALLOC_ARENA_MAX=2).
if [ "${RSS:-0}" = 1 ]; then
  echo "== rss_parts.py" | tee -a "$OUT/device_monitor_cost.log"
  timeout 150 python3 bench/rss_parts.py --env MALLOC_ARENA_MAX=2 2>&1 |
    tee -a "$OUT/device_monitor_cost.log"
fi
# PROBE=1: the probe's CPU per sample with 1,000 more sleeping processes, reading NVML as it
# does on a GPU host (this tree beside the baseline), and the 100,000-line flood's key waits.
if [ "${PROBE:-0}" = 1 ]; then
  echo "== probe_cost.py --gpu real" | tee -a "$OUT/device_monitor_cost.log"
  old=()
  [ -d "$BASELINE_DIR/tui" ] && old=(--old-dir "$(cd "$BASELINE_DIR" && pwd)")
  [ -z "${old[*]}" ] && [ -n "${BASELINE_REV:-}" ] && old=(--old "$BASELINE_REV")
  timeout 200 python3 bench/probe_cost.py --gpu real --samples 20 "${old[@]}" 2>&1 |
    tee -a "$OUT/device_monitor_cost.log"
  echo "== log_flood.py" | tee -a "$OUT/device_monitor_cost.log"
  timeout 120 python3 bench/log_flood.py 2>&1 | tee -a "$OUT/device_monitor_cost.log"
fi
