#!/usr/bin/env python3
"""Run the NumPy example of doc/h5fs.1 (EXAMPLES) against a real mount of
examples/example.h5, exactly as printed, and compare the array it builds
from the reserved user.h5.* xattrs with what h5py reads."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()


def man_numpy_example(page):
    """The code block that follows the 'Use a dataset from NumPy' paragraph."""
    text = open(page, encoding="utf-8").read()
    m = re.search(r"Use a dataset from NumPy.*?\n\.nf\n\.RS\n(.*?)\n\.RE\n", text, re.S)
    if not m:
        raise SystemExit("FAIL: no NumPy example in %s" % page)
    # undo the roff escapes the page uses inside code
    return m.group(1).replace("\\-", "-").replace("\\e", "\\")


def main():
    import h5py
    import numpy as np

    code = man_numpy_example(os.path.join(T.SRCDIR, "doc", "h5fs.1"))
    example = os.path.join(T.SRCDIR, "examples", "example.h5")
    wd = T.workdir("manexample")
    mnt = os.path.join(wd, "mnt")
    paths = re.findall(r'"(/mnt/h5/[^"]+)"', code)
    if not paths:
        print("FAIL: the example names no /mnt/h5 path")
        return 1
    with T.Mount(example, mnt, opts=("-o", "ro")):
        ns = {}
        exec(compile(code.replace("/mnt/h5", mnt), "h5fs.1 example", "exec"), ns)
        got = np.array(ns["a"])
        # the example's np.memmap maps the dataset: dropped before the
        # unmount, else the mount is busy, unmounted lazily, and the
        # daemon waits for the mapping (killed after 10 s)
        ns.clear()
    with h5py.File(example, "r") as f:
        want = f[paths[0][len("/mnt/h5"):]][()]
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        print("FAIL: man page example built %s %s, h5py reads %s %s" % (
            got.dtype, got.shape, want.dtype, want.shape))
        return 1
    print("ok: man page NumPy example on %s: %s %s equal to h5py" % (paths[0], got.dtype, got.shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())
