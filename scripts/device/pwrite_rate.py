#!/usr/bin/env python3
"""Page-cache write rate into one new file by T threads, each writing its own contiguous share
with os.pwrite in 16 MiB calls (the GIL is released in the call): whether a tractogram written
by several threads could pass one thread's rate on this file system.
Usage: pwrite_rate.py FOLDER GIB THREADS..."""
import os, sys, threading, time

folder, gib, counts = sys.argv[1], float(sys.argv[2]), [int(t) for t in sys.argv[3:]]
chunk = 16 << 20
total = int(gib * (1 << 30)) // chunk * chunk
buf = os.urandom(chunk)
for t in counts:
    path = os.path.join(folder, f"pwrite-{t}.bin")
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
    share = total // t // chunk * chunk

    def run(k):
        at = k * share
        end = total if k == t - 1 else at + share
        while at < end:
            os.pwrite(fd, buf, at)
            at += chunk

    start = time.perf_counter()
    ths = [threading.Thread(target=run, args=(k,)) for k in range(t)]
    for h in ths:
        h.start()
    for h in ths:
        h.join()
    took = time.perf_counter() - start
    os.close(fd)
    start = time.perf_counter()
    os.unlink(path)
    gone = time.perf_counter() - start
    print(f"{t:2d} threads: {total / took / 1e9:5.2f} GB/s ({total / 1e9:.2f} GB in {took:.3f} s; unlink {gone * 1e3:.0f} ms)")
