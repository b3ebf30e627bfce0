"""The usual meaning of NVIDIA's common Xid codes (pure data).

Source: NVIDIA, "Xid Errors" and its Xid catalog for Ampere and newer GPUs,
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (mnemonics and resolution
buckets), and "Dynamic Page Retirement", https://docs.nvidia.com/deploy/dynamic-page-retirement/
(Xid 48, 63, 64). ``app``: the catalog's first action is to fix or restart the application
(the GPU itself is usually fine); the others point at the GPU, its memory or its links.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Xid:
    meaning: str
    next_step: str
    app: bool = False  # caused by the application rather than the hardware


_RESET = "reset the GPU (nvidia-smi -r) or reboot, then restart the run"
_DRAIN = "drain the GPU from the topology and have it checked"
XIDS: dict[int, Xid] = {
    13: Xid(
        "graphics engine exception (an illegal instruction or address in a kernel)",
        "check the run's code for out-of-range indexing; restart it",
        app=True,
    ),
    31: Xid(
        "GPU memory page fault (a kernel touched an address it does not own)",
        "check the run's code for an illegal memory access; restart it",
        app=True,
    ),
    43: Xid(
        "GPU stopped processing: the application's context hit a fault",
        "restart the run; the GPU itself is usually fine",
        app=True,
    ),
    45: Xid(
        "preemptive cleanup: the driver tore down a context (a killed process or an earlier error)",
        "look for the Xid before it; restart the run",
        app=True,
    ),
    48: Xid("double-bit (uncorrectable) ECC error in GPU memory", _RESET + "; " + _DRAIN),
    61: Xid("internal micro-controller breakpoint/warning", _RESET),
    62: Xid("internal micro-controller halt", _RESET),
    63: Xid(
        "ECC page retirement or row remapping recorded: a bad memory row was replaced",
        "reset the GPU at the next stop to activate the remapping",
    ),
    64: Xid("ECC page retirement or row remapping failed", _RESET + "; " + _DRAIN),
    68: Xid("video decoder (NVDEC) exception", "restart the run", app=True),
    69: Xid("graphics engine class error", "restart the run; report it if it repeats", app=True),
    74: Xid("NVLink error (a link between GPUs)", _RESET + "; check the NVLink/NVSwitch fabric"),
    79: Xid(
        "GPU has fallen off the bus (no longer reachable over PCIe)",
        "reboot the machine (a GPU reset rarely brings it back); " + _DRAIN,
    ),
    92: Xid("high single-bit ECC error rate", "watch it; " + _DRAIN + " if it continues"),
    94: Xid(
        "contained ECC error: the affected application was stopped",
        "restart the run; reset the GPU when convenient",
    ),
    95: Xid("uncontained ECC error: every application on the GPU is affected", _RESET),
    119: Xid("GSP (GPU System Processor) RPC timeout", _RESET),
    120: Xid("GSP (GPU System Processor) error", _RESET),
}


def describe_xid(code: int) -> Xid:
    return XIDS.get(
        code,
        Xid(
            "an Xid outside the common list (see NVIDIA's Xid catalog)",
            "look the code up in NVIDIA's Xid catalog",
        ),
    )
