#!/usr/bin/python3
"""fio's own verification through the mount (issue 53): `fio --rw=randwrite
--bs=3k --verify=crc32c --verify_backlog=8` into a contiguous, a fixed
chunked, a gzip-chunked, a growable and a growable gzip dataset - every
3 KiB block written at a random offset (partial 4 KiB pages at both
edges) is read back by fio soon after, on the same descriptor, and
checked (its header and crc32c); then the whole file once more. The bytes
read through the mount before unmounting equal what h5py reads from FILE
after. Then three fio jobs at once on one dataset (contiguous, gzip,
growable), each over its own MiB, verified as they write and, after a
remount, all of it again (--verify_only). Skipped (77) without fio
(Debian's fio, contrib/install-deps.sh).
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

FIO = shutil.which("fio")
N = 3 << 20
KINDS = {
    "contig": dict(),
    "chunked": dict(chunks=(65536,)),
    "gzip": dict(chunks=(65536,), compression="gzip"),
    "growable": dict(chunks=(65536,), maxshape=(None,)),
    "growable_gz": dict(chunks=(65536,), maxshape=(None,), compression="gzip"),
}


def main():
    if not FIO:
        T.skip("fio not installed (Debian's fio: contrib/install-deps.sh)")
    work = T.workdir("fio")
    src = os.path.join(work, "fio.h5")
    with h5py.File(src, "w") as f:
        for k, kw in KINDS.items():
            f.create_dataset(k, data=np.zeros(N, "u1"), **kw)
    mnt = os.path.join(work, "mnt")
    seen = {}
    with T.Mount(src, mnt) as m, m.watchdog(240):
        for k in KINDS:
            p = os.path.join(mnt, k)
            cmd = [FIO, "--name=verify-" + k, "--filename=" + p, "--rw=randwrite", "--bs=3k",
                   "--size=%d" % (N - N % 3072), "--verify=crc32c", "--verify_backlog=8", "--do_verify=1",
                   "--verify_fatal=1", "--verify_state_save=0", "--randseed=53", "--number_ios=1200",
                   "--output-format=terse"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=work)
            if r.returncode:
                T.fail("%s: fio verify failed (%d): %s %s" % (k, r.returncode, r.stderr.strip()[-600:],
                                                              r.stdout.strip()[-300:]))
            else:
                print("%s: fio randwrite bs=3k verify=crc32c verify_backlog=8: ok" % k, flush=True)
            with open(p, "rb") as fh:
                seen[k] = fh.read()
        out = m.output()
    with h5py.File(src, "r") as f:
        for k in KINDS:
            if T.dataset_raw(f[k]) != seen[k]:
                T.fail("%s: FILE after the unmount differs from what the mount read" % k)
    # several jobs at once (issue 56 item 7), each over its own MiB of the
    # same dataset, verified as they write; then, after a remount, fio
    # verifies every block again from FILE (--verify_only)
    multi = ["--rw=randwrite", "--bs=4k", "--size=1M", "--offset_increment=1M", "--numjobs=3",
             "--verify=crc32c", "--verify_fatal=1", "--verify_state_save=0", "--randseed=56",
             "--output-format=terse"]
    for phase in ("write", "remount"):
        with T.Mount(src, mnt) as m, m.watchdog(240):
            for k in ("contig", "gzip", "growable"):
                cmd = [FIO, "--name=jobs-" + k, "--filename=" + os.path.join(mnt, k)] + multi + \
                    (["--do_verify=1"] if phase == "write" else ["--verify_only"])
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=work)
                if r.returncode:
                    T.fail("%s: fio 3 jobs, %s: verify failed (%d): %s %s" % (
                        k, phase, r.returncode, r.stderr.strip()[-600:], r.stdout.strip()[-300:]))
                else:
                    print("%s: fio 3 jobs verify=crc32c, %s: ok" % (k, phase), flush=True)
            out = m.output()
    if T._failures[0]:
        print(out[-2000:])
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
