#!/usr/bin/python3
"""No input crashes, hangs or fools h5fs: hostile files through a real mount.

make_hostile.py writes valid files with h5py and patches one structure of
each (sizes and addresses past EOF, dims that overflow, huge heaps, v1
B-tree/fractal heap/object header/global heap cycles, hard links to an
ancestor, nesting and B-tree depth, a checksum mismatch in every
checksummed structure, hostile link and attribute names, soft links that
try to leave the mount, a deflate bomb, external file names outside the
file's directory).  For every file, mounted in the foreground:
  * each hostile object answers EIO (lookup, listing or read) and the log
    has a line naming its path (and the reason, e.g. "checksum");
  * every other object reads byte-identical to what h5py reads from the
    unpatched file (names, kinds, sizes, inodes, bytes, random windows);
  * nothing hangs: every mount runs under a watchdog that kills the daemon,
    and find/ls run with timeouts;
  * the daemon is alive afterwards, exits 0 on unmount, and its peak
    resident memory (VmHWM) stays below 300 MiB.
Case-specific checks: hostile link names never reach the kernel (siblings
listed, one log line names the group); hostile attribute names never split
or corrupt the xattr list; readlink of escaping soft links resolves inside
the mount; find reports hard-link loops and terminates; external files
named by absolute paths or ".." are refused unless -o efl_any.
"""
import errno
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import make_hostile  # noqa: E402

VMHWM_MAX = 300 << 20
WATCHDOG = 40           # seconds per mounted case
fails = []


def fail(case, msg):
    fails.append("%s: %s" % (case.name, msg))


def under(p, roots):
    return any(p == r or p.startswith(r + "/") for r in roots)


def vmhwm(pid):
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def expect_eio(fn):
    """None if fn() raised EIO, else what happened."""
    try:
        fn()
    except OSError as e:
        if e.errno in T.DEAD:
            raise
        return None if e.errno == errno.EIO else "errno %s (%s)" % (errno.errorcode.get(e.errno), e)
    return "succeeded"


def read_all(p):
    with open(p, "rb") as fh:
        while fh.read(1 << 20):
            pass


def check_bad(case, mnt, p, actual):
    """p must answer EIO somewhere on its way: lookup, listing or read."""
    a = actual.get(p)
    full = mnt + p
    if a is None:
        parent = p.rsplit("/", 1)[0]
        if parent and under(parent, case.bad):
            return
        why = expect_eio(lambda: os.lstat(full))
        if why:
            fail(case, "%s: not listed, and lstat %s instead of EIO" % (p, why))
        return
    kind, st, target, err = a
    if err:
        if "[Errno %d]" % errno.EIO not in err:
            fail(case, "%s: %s, expected EIO" % (p, err))
        return
    if kind == "dir":
        why = expect_eio(lambda: os.listdir(full))
    elif kind == "file":
        why = expect_eio(lambda: read_all(full))
    else:
        why = "is a %s" % kind
    if why:
        fail(case, "%s: %s instead of EIO" % (p, why))


def check_log(case, log, p, needle):
    lines = [ln for ln in log.splitlines() if "EIO" in ln and (p + " " in ln or p + ":" in ln or p + "/" in ln)]
    for ln in log.splitlines():
        if " //" in ln:
            fail(case, "log line with a doubled slash: %r" % ln)
            break
    if not lines:
        fail(case, "no EIO log line names %s" % p)
    elif needle and not any(needle.lower() in ln.lower() for ln in lines):
        fail(case, "no log line for %s says %r: %r" % (p, needle, lines[:3]))
    else:
        print("    log  %s" % lines[0][:200])


def check_blocks(case, mnt):
    """st_blocks never counts storage the file cannot hold."""
    for p, most in case.info.get("blocks_max", {}).items():
        st = os.stat(mnt + p)
        if st.st_blocks * 512 > most + 511:
            fail(case, "%s: st_blocks %d (%d bytes), at most %d expected" % (p, st.st_blocks, st.st_blocks * 512, most))


def check_xattrs(case, mnt):
    for p, names in case.info.get("xattr_bad", {}).items():
        for n in names:
            why = expect_eio(lambda: os.getxattr(mnt + p, n))
            if why:
                fail(case, "getxattr %s %s: %s instead of EIO" % (p, n, why))
    for p, vals in case.info.get("xattr_good", {}).items():
        listed = set(os.listxattr(mnt + p))
        for n, v in vals.items():
            if n not in listed:
                fail(case, "listxattr %s: %s missing" % (p, n))
            got = os.getxattr(mnt + p, n)
            if got != v:
                fail(case, "getxattr %s %s = %r, expected %r" % (p, n, got, v))


def run_tool(case, argv, timeout=20):
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(case, "%s did not finish within %d s" % (" ".join(argv[:2]), timeout))
        return None


def check_loops(case, mnt):
    """Links up the tree are symlinks to the ancestor (".", "..", "../.."),
    so find and ls -R terminate without an error and each resolves there."""
    r = run_tool(case, ["find", mnt])
    if r is not None:
        err = r.stderr.decode("utf-8", "replace")
        out = r.stdout.decode("utf-8", "replace").splitlines()
        if r.returncode != 0 or err.strip():
            fail(case, "find reported an error: %r" % err[:300])
        if len(out) > 200:
            fail(case, "find printed %d paths" % len(out))
        for want in ("/a/b/leaf", "/ctl/contig"):
            if mnt + want not in out:
                fail(case, "find did not print %s" % want)
        for link, target, dest in (("/a/b/to_root", "../..", ""), ("/a/b/to_parent", "..", "/a"),
                                   ("/a/to_self", ".", "/a")):
            try:
                got = os.readlink(mnt + link)
            except OSError as e:
                got = "error %s" % e
            if got != target:
                fail(case, "%s: readlink %r, expected %r" % (link, got, target))
            elif not os.path.samefile(mnt + link, mnt + dest):
                fail(case, "%s does not lead to %s" % (link, dest or "/"))
        print("    find: %d paths, no error" % len(out))
    r = run_tool(case, ["ls", "-R", mnt])
    if r is not None and (len(r.stdout) > 100000 or r.returncode != 0):
        fail(case, "ls -R printed %d bytes, exit %d" % (len(r.stdout), r.returncode))


def check_names(case, mnt, log):
    """Only the showable names are listed (as stored, also when they are not
    UTF-8), each reads; "." and ".." stay the kernel's; one log line per
    listing says what was skipped."""
    for grp, shown in sorted(case.info["groups"].items()):
        g = mnt + grp
        got = set(os.listdir(g.encode()))
        want = {n.encode() if isinstance(n, str) else n for n in shown}
        if got != want:
            fail(case, "listing of %s: %r, expected %r" % (grp, sorted(got), sorted(want)))
        for n in want:
            p = g.encode() + b"/" + n
            try:
                with open(p, "rb") as fh:
                    if not fh.read():
                        fail(case, "%r reads empty" % n)
            except OSError as e:
                fail(case, "%r: %s" % (n, e))
        if os.stat(g + "/.").st_ino != os.stat(g).st_ino or \
                os.stat(g + "/..").st_ino != os.stat(os.path.dirname(g)).st_ino:
            fail(case, "%s/. or %s/.. is not what the kernel says" % (grp, grp))
        # "a" is what the name "a\0c" would be cut to; 300 bytes is over NAME_MAX
        for bad in ("a", "L" * 300):
            try:
                os.lstat(os.path.join(g, bad))
                fail(case, "%s/%s can be looked up" % (grp, bad[:20]))
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.ENAMETOOLONG):
                    fail(case, "lookup %s/%s: %s" % (grp, bad[:20], e))
        lines = [ln for ln in log.splitlines() if grp + ":" in ln and "skipped" in ln]
        if not lines:
            fail(case, "no log line says links of %s were skipped" % grp)
        else:
            print("    log  %s" % lines[0][:200])


def check_xattr_names(case, mnt):
    p = (mnt + case.info["path"]).encode()
    names = os.listxattr(p)
    raw = [n.encode("utf-8", "surrogateescape") for n in names]
    for n, v in case.info["want"].items():
        if n not in raw:
            fail(case, "listxattr lacks %r (has %r)" % (n, raw))
            continue
        got = os.getxattr(p, n)
        if got != v:
            fail(case, "getxattr %r = %r, expected %r" % (n, got, v))
    for n in case.info["absent"]:
        if n in raw:
            fail(case, "listxattr shows %r" % n)
    for n in raw:
        if not n.startswith(b"user.") or b"\0" in n:
            fail(case, "listxattr entry %r" % n)
        try:
            os.getxattr(p, n)
        except OSError as e:
            fail(case, "listed xattr %r cannot be read: %s" % (n, e))


def check_symlinks(case, mnt):
    real_mnt = os.path.realpath(mnt)
    for d, n in sorted((mnt + d, n) for d, ns in case.info["dirs"].items() for n in ns):
        p = os.path.join(d, n)
        try:
            t = os.readlink(p)
        except OSError as e:
            if e.errno in T.DEAD:
                raise
            # a target the kernel cannot take (PATH_MAX or more) fails
            if n == "long" and e.errno == errno.ENAMETOOLONG:
                print("    readlink %s: %s (accepted: %d-byte target)" % (n, e.strerror, 6001))
                continue
            fail(case, "readlink %s: %s" % (n, e))
            continue
        if t.startswith("/"):
            fail(case, "readlink %s = %r is absolute" % (n, t[:100]))
        if "\0" in t:
            fail(case, "readlink %s contains NUL" % n)
        r = os.path.realpath(p)
        if not (r == real_mnt or r.startswith(real_mnt + "/")):
            fail(case, "%s resolves to %s, outside the mount" % (n, r[:200]))
        print("    %-12s -> %-40s %s" % (n, t[:40], "(inside)" if r.startswith(real_mnt) else "(OUTSIDE)"))


def check_efl(case, mnt):
    for p in ("/absolute", "/dotdot", "/dotdot_inner", "/near", "/deeper"):
        if p in case.bad:
            continue
        try:
            with open(mnt + p, "rb") as fh:
                data = fh.read()
        except OSError as e:
            fail(case, "%s: %s" % (p, e))
            continue
        if p in ("/absolute", "/dotdot", "/dotdot_inner") and not data.startswith(b"SECRET-"):
            fail(case, "%s (-o efl_any) reads %r" % (p, data[:20]))


def run_sb(case, mnt):
    try:
        r = subprocess.run([T.H5FS, "-f", case.path, mnt], capture_output=True, timeout=20,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(case, "h5fs did not exit within 20 s")
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True, timeout=10)
        return
    if T.is_mounted(mnt):
        subprocess.run(["fusermount3", "-uz", mnt], capture_output=True, timeout=10)
        fail(case, "mounted a file whose superblock fails its checksum")
    err = r.stderr.decode("utf-8", "replace").strip()
    if r.returncode != 5 or len(err.splitlines()) != 1 or case.info["want"] not in err.lower():
        fail(case, "exit %d, stderr %r (expected status 5, one line saying %s)" % (
            r.returncode, err[:300], case.info["want"]))
    else:
        print("    %s" % err)


TREES = {}


def expected_tree(case):
    key = (case.pristine, case.info.get("cwd"))
    if key not in TREES:
        TREES[key] = T.h5py_tree(case.pristine, cwd=case.info.get("cwd"))
    return TREES[key]


def run_case(case, wd):
    t0 = time.monotonic()
    mnt = os.path.join(wd, "mnt-" + case.name)
    os.makedirs(mnt, exist_ok=True)
    print("--- %s %s" % (case.name, case.why))
    if case.kind == "sb":
        run_sb(case, mnt)
        return
    expected, root = expected_tree(case)
    skip = set(case.bad) | case.maybe
    good = {p: e for p, e in expected.items() if not under(p, skip)}
    m = T.Mount(case.path, mnt, opts=case.opts, cwd=case.info.get("cwd"))
    try:
        m.start()
    except T.MountError as e:
        fail(case, "mount: %s" % e)
        return
    rep = T.Report(case.name)
    peak = None
    try:
        with m.watchdog(WATCHDOG):
            # a read-write mount (FILE writable, no -o ro) shows the datasets
            # it can write bytes of as 644 (write/overwrite.c)
            rw = os.access(case.path, os.W_OK) and not any(
                "ro" in o.split(",") for o in case.opts)
            actual = T.compare(good, root, mnt, rep, compare_names=False, windows=50, writable=rw)
            if actual is not None:
                loops = {p for p, a in actual.items() if a[0] == "error" and "[Errno %d]" % errno.ELOOP in a[3]}
                for p in sorted(good):
                    if p not in actual and not under(p.rsplit("/", 1)[0], loops):
                        rep.bad("%s: missing in the mount" % p)
                for p in sorted(case.bad):
                    check_bad(case, mnt, p, actual)
                for p in sorted(case.maybe):
                    a = actual.get(p)
                    if a and a[0] == "dir":
                        try:
                            os.listdir(mnt + p)
                        except OSError as e:
                            if e.errno != errno.EIO:
                                fail(case, "%s: %s (may be EIO, nothing else)" % (p, e))
                check_xattrs(case, mnt)
                check_blocks(case, mnt)
                if case.kind == "loops":
                    check_loops(case, mnt)
                elif case.kind == "names":
                    check_names(case, mnt, m.output())
                elif case.kind == "xattr_names":
                    check_xattr_names(case, mnt)
                elif case.kind == "symlinks":
                    check_symlinks(case, mnt)
                elif case.kind == "efl":
                    check_efl(case, mnt)
        if m.hung:
            fail(case, "hung: the watchdog killed the daemon after %d s" % WATCHDOG)
        elif not m.alive():
            fail(case, "the daemon died (status %s): %s" % (m.proc.returncode, m.output()[-2000:]))
        else:
            peak = vmhwm(m.proc.pid)
    except OSError as e:
        fail(case, "daemon gone: %s" % e)
    finally:
        m.stop()
    log = m.output()
    for p, needle in sorted(case.bad.items()):
        check_log(case, log, p, needle)
    if not m.hung and m.returncode != 0:
        fail(case, "exit status %s after unmount" % m.returncode)
    if peak is not None and peak > VMHWM_MAX:
        fail(case, "daemon VmHWM %d MiB > %d MiB" % (peak >> 20, VMHWM_MAX >> 20))
    for msg in rep.fail + rep.chunked_fail:
        fail(case, msg)
    print("    %d objects compared, %d hostile, VmHWM %s MiB, %.1f s" % (
        rep.compared + rep.chunked_ok, len(case.bad), peak >> 20 if peak else "?", time.monotonic() - t0))


def main():
    wd = T.workdir("hostile")
    only = set(sys.argv[1:]) or None
    t0 = time.monotonic()
    cases = make_hostile.build(wd)
    print("generated %d hostile files in %.1f s" % (len(cases), time.monotonic() - t0))
    for c in cases:
        if only and c.name not in only:
            continue
        run_case(c, wd)
    for f in fails:
        print("FAIL " + f)
    print("%d cases, %d failures, %.1f s" % (len(cases), len(fails), time.monotonic() - t0))
    if not fails:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
