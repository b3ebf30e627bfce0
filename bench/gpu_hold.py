"""Hold GPU memory and keep the GPU busy: a stand-in training job for device checks.

python3 bench/gpu_hold.py --gib 20 --busy
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=10.0)
    ap.add_argument("--busy", action="store_true", help="run bf16 matmuls in a loop")
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()
    import torch

    held = torch.empty(int(args.gib * 2**30), dtype=torch.uint8, device=args.device)
    a = torch.randn(4096, 4096, device=args.device, dtype=torch.bfloat16)
    print(f"holding {held.numel() / 2**30:.1f} GiB on {args.device}", flush=True)
    step = 0
    while True:
        if args.busy:
            for _ in range(50):
                a = (a @ a).clamp_(-1, 1)
            torch.cuda.synchronize()
        else:
            time.sleep(0.5)
        step += 1
        if step % 20 == 0:
            print(f"step={step} tok/s=0", flush=True)


if __name__ == "__main__":
    main()
