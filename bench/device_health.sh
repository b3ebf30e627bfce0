#!/usr/bin/env bash
# NVML health fields of the device machine's GPUs, read three ways, to record as fixtures
# (the NVML fields the probe reads, read for real). Run from the repo root, one call
# (about 30 s), nothing installed when nvidia-ml-py is importable (else from .whl/ if carried):
#   nvml_raw.json     each pynvml call nvhealth.py makes, its answer or its error, per GPU:
#                     UUID, PCI bus id, retired pages (SBE, DBE lists, pending), remapped rows,
#                     PCIe replay counter, supported event types, ECC mode and counts, and the
#                     Xid events of a 3 s wait on an event set (usually none: a Timeout);
#                     tests/fakes/nvml/pynvml.py replays this shape (FAKE_NVML_HEALTH).
#   nvhealth.json     tui/core/probe/nvhealth.py's NvHealth.read(), once and as a watcher
#                     (two reads 2 s apart: the Xid event set kept open between them).
#   probe_machine.json  the probe's "machine" and "workers" keys (--interval, 2 samples).
#   smi_health.txt    nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER and the PCI section of
#                     nvidia-smi -q (link, "Replays Since Reset"), for comparison.
#   device_health.log everything above printed, and what was not there.
#   OUT=/tmp/out bash bench/device_health.sh
set -u
OUT=${OUT:-/tmp/dflash-health}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! $PY -c 'import pynvml' 2>/dev/null && ls .whl/nvidia_ml_py-*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --target /tmp/dflash-health-site .whl/nvidia_ml_py-*.whl
  export PYTHONPATH=/tmp/dflash-health-site${PYTHONPATH:+:$PYTHONPATH}
fi
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi -L || echo "nvidia-smi -L failed"
  echo "== pynvml, raw (nvml_raw.json)"
  $PY - "$OUT/nvml_raw.json" <<'EOF'
import json, sys, time
try:
    import pynvml as nv
except ImportError as exc:
    json.dump({"error": "pynvml not importable: %s" % exc}, open(sys.argv[1], "w"), indent=1)
    print("pynvml not importable:", exc); sys.exit(0)

def call(fn, *a):
    try:
        v = getattr(nv, fn)(*a)
    except Exception as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc), "value": getattr(exc, "value", None)}
    if isinstance(v, bytes):
        v = v.decode()
    if hasattr(v, "_fields_"):
        v = {k: getattr(v, k) for k, _ in v._fields_}
        v = {k: (x.decode() if isinstance(x, bytes) else x if isinstance(x, (int, float, str)) else repr(x))
             for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        v = [x if isinstance(x, (int, float, str, bool)) else repr(x) for x in v]
    return v

nv.nvmlInit()
out = {"time": time.time(), "driver": call("nvmlSystemGetDriverVersion"),
       "nvml_version": call("nvmlSystemGetNVMLVersion"), "gpus": []}
try:
    es = nv.nvmlEventSetCreate()
except Exception as exc:
    es, out["event_set"] = None, "%s: %s" % (type(exc).__name__, exc)
for i in range(nv.nvmlDeviceGetCount()):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i, "uuid": call("nvmlDeviceGetUUID", h), "name": call("nvmlDeviceGetName", h),
         "pci": call("nvmlDeviceGetPciInfo", h),
         "retired_pages_sbe": call("nvmlDeviceGetRetiredPages", h, 0),
         "retired_pages_dbe": call("nvmlDeviceGetRetiredPages", h, 1),
         "retired_pages_pending": call("nvmlDeviceGetRetiredPagesPendingStatus", h),
         "remapped_rows": call("nvmlDeviceGetRemappedRows", h),
         "pcie_replay": call("nvmlDeviceGetPcieReplayCounter", h),
         "pcie_link_gen": [call("nvmlDeviceGetCurrPcieLinkGeneration", h), call("nvmlDeviceGetMaxPcieLinkGeneration", h)],
         "pcie_link_width": [call("nvmlDeviceGetCurrPcieLinkWidth", h), call("nvmlDeviceGetMaxPcieLinkWidth", h)],
         "ecc_mode": call("nvmlDeviceGetEccMode", h),
         "ecc_volatile_uncorrected": call("nvmlDeviceGetTotalEccErrors", h, 1, 0),
         "ecc_aggregate_uncorrected": call("nvmlDeviceGetTotalEccErrors", h, 1, 1),
         "supported_event_types": call("nvmlDeviceGetSupportedEventTypes", h)}
    if es is not None:
        g["register_xid_events"] = call("nvmlDeviceRegisterEvents", h, getattr(nv, "nvmlEventTypeXidCriticalError", 8), es)
    out["gpus"].append(g)
events, t0 = [], time.time()
wait = getattr(nv, "nvmlEventSetWait_v2", None) or getattr(nv, "nvmlEventSetWait", None)
while es is not None and time.time() - t0 < 3.0:
    try:
        ev = wait(es, 500)
    except Exception as exc:
        out["event_wait"] = "%s: %s" % (type(exc).__name__, exc)
        continue
    events.append({k: getattr(ev, k, None) if k != "device" else call("nvmlDeviceGetUUID", ev.device)
                   for k in ("device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId", "timestamp")})
out["xid_events_3s"] = events
if es is not None:
    nv.nvmlEventSetFree(es)
nv.nvmlShutdown()
json.dump(out, open(sys.argv[1], "w"), indent=1, default=repr)
print(json.dumps(out, indent=1, default=repr))
EOF
  echo "== nvhealth.py (nvhealth.json)"
  $PY - "$OUT/nvhealth.json" <<'EOF'
import json, sys, time
sys.path.insert(0, "tui/core/probe")
try:
    import pynvml as nv
except ImportError as exc:
    print("pynvml not importable:", exc); sys.exit(0)
from nvhealth import NvHealth
nv.nvmlInit()
errors = []
once = NvHealth(nv, False).read(errors)
w = NvHealth(nv, True)
first = w.read(errors)
time.sleep(2.0)
second = w.read(errors)
out = {"time": time.time(), "once": once, "watch_first": first, "watch_second": second,
       "watch_note": w.note, "errors": errors}
json.dump(out, open(sys.argv[1], "w"), indent=1, default=repr)
print(json.dumps(out, indent=1, default=repr))
EOF
  echo "== probe machine/workers (probe_machine.json)"
  timeout 20 $PY tui/core/probe/main.py --interval 2 --run-root /tmp/dflash-health-runs \
    | head -n 2 | $PY -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
out = [{k: r.get(k) for k in ("time", "telemetry", "machine", "workers", "errors")} for r in rows]
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out, indent=1))' "$OUT/probe_machine.json"
  echo "== nvidia-smi health sections (smi_health.txt)"
  {
    echo "### nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"
    nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER
    echo "### nvidia-smi -q, PCI section"
    nvidia-smi -q | awk '/^    PCI$/ {p=1} p && /^    [A-Z]/ && !/^    PCI$/ {p=0} p'
    echo "### nvidia-smi --query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,pcie.link.gen.current,pcie.link.width.current --format=csv"
    nvidia-smi --query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,pcie.link.gen.current,pcie.link.width.current --format=csv
  } 2>&1 | tee "$OUT/smi_health.txt"
  echo "== kernel log readable? (Xid lines)"
  if dmesg >/dev/null 2>&1; then dmesg | grep -E 'NVRM: Xid|Out of memory' | tail -n 20 || echo "no Xid/OOM lines"; else echo "dmesg not readable"; fi
} 2>&1 | tee "$OUT/device_health.log"
