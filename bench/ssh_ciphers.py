#!/usr/bin/env python3
"""What asyncssh spends encrypting one packet with each cipher OpenSSH offers by default, for
packet sizes a probe sample travels in (a short line, a few KiB, a full 32 KiB packet):
microseconds a packet, medians of --repeats runs of --packets packets. Decrypting costs the
same shape. The reason tui/core/link/ssh_connect.CIPHERS offers AES-GCM first.

    .venv/bin/python bench/ssh_ciphers.py [--packets 3000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # asyncssh's DSA import warns under new cryptography
    from asyncssh.encryption import get_encryption, get_encryption_params

ALGS = (b"chacha20-poly1305@openssh.com", b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com")
SIZES = (192, 4000, 32768)


def per_packet_us(alg: bytes, size: int, packets: int) -> float:
    key_size, iv_size, *_ = get_encryption_params(alg)
    enc = get_encryption(alg, os.urandom(key_size), os.urandom(iv_size))
    size -= size % 16
    header, body = size.to_bytes(4, "big"), os.urandom(size)
    t0 = time.perf_counter()
    for seq in range(packets):
        enc.encrypt_packet(seq, header, body)
    return (time.perf_counter() - t0) / packets * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print("| cipher | " + " | ".join(f"{s} B, us a packet" for s in SIZES) + " |")
    print("| --- |" + " --- |" * len(SIZES))
    for alg in ALGS:
        cells = []
        for size in SIZES:
            runs = [per_packet_us(alg, size, args.packets) for _ in range(args.repeats)]
            cells.append(f"{statistics.median(runs):.1f}")
        print(f"| {alg.decode()} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
