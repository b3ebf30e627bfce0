"""dflash-tui probe, NVML health part: Xid events (an event set kept open in --interval mode,
waited on for 0 ms each sample), retired pages, remapped rows, the PCIe replay counter, and
whether a GPU has fallen off the bus (NVML's GPU_IS_LOST). The replay counter is read once per
SLOW_EVERY_S (gpu.py says why), the rest every sample.

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of main.py
(see tui/core/probe/bundle.py). A reading NVML does not offer is null, never a guess: an H200
on driver 580 answers retired pages "Not Supported" (it remaps rows instead).
"""

import time

# >>> parts: bundle.probe_source() drops this block (gpu.py's code is sent ahead)
try:  # imported as dflash_tui.core.probe.nvhealth
    from dflash_tui.core.probe.gpu import SlowReads
except ImportError:  # run as a file, beside gpu.py
    from gpu import SlowReads  # type: ignore[import-not-found,no-redef]
# <<< parts

GPU_IS_LOST = 15  # NVML_ERROR_GPU_IS_LOST
XID_EVENT = 0x0000000000000008  # nvmlEventTypeXidCriticalError
EVENTS_MAX = 200  # events drained per sample


def nvml_code(exc):
    return getattr(exc, "value", None)


class NvHealth:
    """Per-GPU health through an initialised pynvml module `nv`."""

    def __init__(self, nv, watch):
        self.nv, self.watch, self.events, self.note = nv, watch, None, None
        self.slow = SlowReads()
        if not watch:
            self.note = "one sample: NVML tells Xid events only to a watcher (--interval)"
            return
        try:
            self.events = nv.nvmlEventSetCreate()
            for i in range(nv.nvmlDeviceGetCount()):
                h = nv.nvmlDeviceGetHandleByIndex(i)
                kinds = getattr(nv, "nvmlEventTypeXidCriticalError", XID_EVENT)
                nv.nvmlDeviceRegisterEvents(h, kinds, self.events)
        except Exception as exc:
            self.note = "NVML Xid events unavailable: %s" % (exc,)

    def close(self):
        """Free the event set (a probe inside a long-lived program is made again after a
        failure: a process got this back at exit)."""
        events, self.events = self.events, None
        if events is not None:
            try:
                self.nv.nvmlEventSetFree(events)
            except Exception:
                pass

    def read(self, errors):
        """[{index, uuid, lost, error, xids, retired_pages, remapped_rows, pcie_replay}]."""
        out = []
        for i in range(self.nv.nvmlDeviceGetCount()):
            out.append(self.gpu(i))
        xids = self.drain(errors)
        by_uuid = {g["uuid"]: g for g in out if g["uuid"]}
        for uuid, ev in xids:
            g = by_uuid.get(uuid)
            if g is not None:
                g["xids"].append(ev)
        return {"gpus": out, "xid_watch": self.note or "nvml"}

    def gpu(self, i):
        nv = self.nv
        g = {"index": i, "uuid": None, "lost": False, "error": None, "xids": [],
             "retired_pages": None, "remapped_rows": None, "pcie_replay": None}  # fmt: skip
        try:
            h = nv.nvmlDeviceGetHandleByIndex(i)
            uuid = nv.nvmlDeviceGetUUID(h)
        except Exception as exc:
            g["lost"] = nvml_code(exc) == GPU_IS_LOST or "lost" in str(exc).lower()
            g["error"] = "%s: %s" % (type(exc).__name__, exc)
            return g
        g["uuid"] = uuid.decode() if isinstance(uuid, bytes) else uuid
        g["retired_pages"] = self.retired(h)
        rows = self.q("nvmlDeviceGetRemappedRows", h)
        if isinstance(rows, (tuple, list)) and len(rows) >= 4:
            g["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1],
                                  "pending": bool(rows[2]), "failure": bool(rows[3])}  # fmt: skip
        g["pcie_replay"] = self.slow.get(i, lambda: self.q("nvmlDeviceGetPcieReplayCounter", h))
        return g

    def retired(self, h):
        sbe, dbe = (self.q("nvmlDeviceGetRetiredPages", h, c) for c in (0, 1))
        pending = self.q("nvmlDeviceGetRetiredPagesPendingStatus", h)
        if sbe is None and dbe is None and pending is None:
            return None  # "Not Supported" (H100/H200 remap rows instead)
        return {"single_bit": len(sbe) if sbe is not None else None,
                "double_bit": len(dbe) if dbe is not None else None,
                "pending": bool(pending) if pending is not None else None}  # fmt: skip

    def q(self, name, *args):
        fn = getattr(self.nv, name, None)
        try:
            return fn(*args) if fn else None
        except Exception:
            return None

    def drain(self, errors):
        """The Xid events NVML queued since the last sample: (uuid, {time, code}). NVML's event
        data carries no time (device, type, data, instance ids): an event is stamped when it is
        drained, at most one sample late."""
        if self.events is None:
            return []
        nv, out = self.nv, []
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        for _ in range(EVENTS_MAX):
            try:
                ev = wait(self.events, 0)
            except Exception as exc:
                if "timeout" not in type(exc).__name__.lower() + str(exc).lower():
                    errors.append("NVML event wait failed: %s" % (exc,))
                break
            uuid = self.q("nvmlDeviceGetUUID", getattr(ev, "device", None))
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            out.append((uuid, {"code": getattr(ev, "eventData", None), "time": time.time()}))
        return out
