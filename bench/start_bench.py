#!/usr/bin/python3
"""Process start of h5fs-ls (issue 45): `h5fs-ls --version` --starts times,
against another build (--before, e.g. the build before a change). Run by hand.

    /usr/bin/python3 bench/start_bench.py [--h5fs-ls ./h5fs-ls] --before OLD
        [--starts 200] [--runs 5]

In each of --runs runs the two binaries alternate, --starts starts each in
blocks of 10 (before, after, before, ...: the shared machine's load falls
on both); each start is posix_spawn'd with stdout and stderr to /dev/null
and reaped with wait4 (wall time and the child's user + system CPU). Per
run: the mean wall and CPU time of one start of each, and the ratio. Warm:
the binaries and their libraries stay in the page cache. The libraries a
binary maps are what `ldd` lists; --version maps them all and does nothing
else.
"""
import argparse
import os
import statistics
import sys
import time


def start(argv, devnull):
    t = time.monotonic()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    el = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s: exit status %d" % (argv[0], os.waitstatus_to_exitcode(status)))
    return el, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs-ls", default="./h5fs-ls")
    ap.add_argument("--before", required=True)
    ap.add_argument("--starts", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    bins = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.h5fs_ls)}
    devnull = os.open(os.devnull, os.O_WRONLY)
    print("load average %s" % open("/proc/loadavg").read().split()[:3])
    ratios = []
    for run in range(a.runs):
        wall = {k: [] for k in bins}
        cpu = {k: [] for k in bins}
        for _ in range(a.starts // 10):
            for k, b in bins.items():
                for _ in range(10):
                    el, c = start([b, "--version"], devnull)
                    wall[k].append(el)
                    cpu[k].append(c)
        mw = {k: statistics.mean(v) * 1e3 for k, v in wall.items()}
        mc = {k: statistics.mean(v) * 1e3 for k, v in cpu.items()}
        ratios.append(mw["before"] / mw["after"])
        print("run %d: before %.2f ms wall (median %.2f), %.2f ms CPU; after %.2f ms wall (median %.2f), "
              "%.2f ms CPU; %.2f ms less a start (%.2fx)" % (
                  run + 1, mw["before"], statistics.median(wall["before"]) * 1e3, mc["before"], mw["after"],
                  statistics.median(wall["after"]) * 1e3, mc["after"], mw["before"] - mw["after"], ratios[-1]))
        sys.stdout.flush()
    print("load average %s" % open("/proc/loadavg").read().split()[:3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
