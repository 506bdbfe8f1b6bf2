#!/usr/bin/python3
"""README's "60-second tour" runs as written (issue 57, the first hour).

Every command of the tour (the lines "    $ CMD" of README's section, a
quoted Python program spanning lines included) runs in order with bash,
in a scratch directory holding examples/example.h5 and the built h5fs
and h5fs-ls as ./h5fs and ./h5fs-ls, as a new user runs it from the
source directory after the quick start; each must exit 0 and print the
lines README shows under it. What differs between machines is left out of
the comparison: the owner and group (README: "me me") and the time (README:
"...") of `ls -l` lines; runs of blanks count as one. The mount is read-only
(-o ro), as contrib/quickstart.sh makes it, so README's modes are those
shown. Needs getfattr, tiffinfo and Debian's python3 with numpy
(contrib/install-deps.sh --build installs them); the tour's mount is
unmounted in the end whatever happened.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
for tool in ("getfattr", "tiffinfo", "od", "dd"):
    if not shutil.which(tool):
        T.skip("%s is not installed (contrib/install-deps.sh --build)" % tool)
if subprocess.run(["/usr/bin/python3", "-c", "import numpy"], capture_output=True).returncode != 0:
    T.skip("Debian's python3 has no numpy (python3-numpy: contrib/install-deps.sh --build)")


def tour(readme):
    """[(command, [expected lines])] of README's tour section."""
    lines = open(readme).read().split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("A 60-second tour"))
    end = next(i for i in range(start + 2, len(lines)) if lines[i] and not lines[i].startswith(" ")
               and lines[i + 1].startswith("---"))
    steps, i = [], start
    while i < end:
        ln = lines[i]
        if not ln.startswith("    $ "):
            i += 1
            continue
        cmd = ln[6:]
        i += 1
        while cmd.count("'") % 2 and i < end:         # a quoted program goes on
            cmd += "\n" + lines[i][4:]
            i += 1
        out = []
        while i < end and not lines[i].startswith("    $ ") and (lines[i].startswith("    ") or not lines[i]):
            out.append(lines[i][4:])
            i += 1
        while out and not out[-1].strip():
            out.pop()
        steps.append((cmd, out))
    return steps


LS = re.compile(r"^(\d+ +)?([-dlrwxs]{10}) +(\d+) +\S+ +\S+ +(\d+) +(\.\.\.|\w{3} +\d+ +[\d:]+) +(.*)$")


def norm(line):
    m = LS.match(line)
    if m:
        line = "%s%s %s me me %s ... %s" % (m.group(1) or "", m.group(2), m.group(3), m.group(4), m.group(6))
    return re.sub(r"\s+", " ", line).strip()


def main():
    readme = os.path.join(T.SRCDIR, "README")
    steps = tour(readme)
    if len(steps) < 8:
        T.fail("README's tour: %d commands found" % len(steps))
        return T.finish()
    wd = T.workdir("tour")
    os.makedirs(os.path.join(wd, "examples"))
    shutil.copy(os.path.join(T.SRCDIR, "examples", "example.h5"), os.path.join(wd, "examples"))
    os.symlink(T.H5FS, os.path.join(wd, "h5fs"))
    os.symlink(os.environ.get("H5FS_LS", os.path.join(T.BUILDDIR, "h5fs-ls")), os.path.join(wd, "h5fs-ls"))
    mnt = os.path.join(wd, "mnt")
    try:
        for cmd, want in steps:
            r = subprocess.run(["bash", "-c", cmd], cwd=wd, capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            got = [norm(ln) for ln in r.stdout.rstrip("\n").split("\n")] if r.stdout.strip() else []
            want = [norm(ln) for ln in want]
            if r.returncode != 0:
                T.fail("tour: %r exited %d: %s" % (cmd, r.returncode, r.stderr[-300:]))
                break
            if got != want:
                T.fail("tour: %r printed\n  %s\nREADME shows\n  %s" % (cmd, "\n  ".join(got), "\n  ".join(want)))
            else:
                print("ok   %s" % cmd.split("\n")[0][:100])
    finally:
        if T.is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", mnt], timeout=10)
        if T.is_mounted(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], timeout=10)
    rc = T.finish()
    if rc == 0:
        shutil.rmtree(wd, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
