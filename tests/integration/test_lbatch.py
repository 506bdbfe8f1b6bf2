#!/usr/bin/python3
"""The write-behind of new files (member/lbatch.c, doc/MODIFY.md
"Write-behind of new files", issue 55): create(2) makes a dataset that is
linked later, with the other new files of its group, in one commit.

On an h5py-default file (symbol-table groups: one commit a batch) and a
libver="latest" one (compact storage: a commit a link; then dense: one a batch):
- `cp -r` of 300 small files (0 to 70,000 bytes: empty, one chunk, two)
  into a group: each reads back right after its copy (cat through the
  mount), stat shows its size, a create of a pending name with O_EXCL is
  EEXIST, `ls` (readdir) lists every name, and h5py reads every byte
  after the unmount;
- rm, mv and ln of a file still pending, and a file created, written and
  fsync'd: the fsync makes it durable (FILE then holds it: h5py, with the
  lock given back, opens FILE 'r+' within 5 s and sees it);
- mkdir joins the batch: a directory at once, EEXIST twice, a file, a
  group and an attribute made in it and removable while pending, groups
  in FILE after the unmount; rmdir too: gone at once, ENOENT twice,
  ENOTEMPTY, ENOTDIR, its name made again;
- a create in another group links the first group's batch;
- a kill -9 right after a burst of creates leaves a FILE h5py opens, each
  file complete or absent (never a name without its bytes), and the files
  and groups (mkdir between them) committed before it all there;
- on a disk that fills (a 3 MB tmpfs), creates of 20 KiB files until one
  is refused: each answered file is in FILE after the unmount with its
  bytes (the commit's space was reserved before the answer), the refusal
  is ENOSPC, and the mount is not marked lost (the unmount exits 0);
- 700 names pending at once, one of them held open through the timer's
  commit: each found by the daemon's lookup, EEXIST again (the pending
  names' index).
"""
import errno
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def content(i, n):
    return bytes(((i * 31 + k * 7) & 0xFF for k in range(n)))


SIZES = [0, 1, 4096, 65536, 70000]


def run(work, libver):
    path = os.path.join(work, libver + ".h5")
    mnt = os.path.join(work, "mnt")
    src = os.path.join(work, "src-" + libver)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
        f.create_group("h")
        f["keep"] = np.arange(5)
    os.makedirs(src, exist_ok=True)
    want = {}
    for i in range(300):
        n = SIZES[i % len(SIZES)]
        name = "f%03d.bin" % i
        with open(os.path.join(src, name), "wb") as fh:
            fh.write(content(i, n))
        want["g/tree/" + name] = content(i, n)
    with T.Mount(path, mnt) as m:
        subprocess.run(["cp", "-r", src, os.path.join(mnt, "g", "tree")], check=True, timeout=120)
        for name in ("f000.bin", "f001.bin", "f003.bin", "f299.bin"):
            got = open(os.path.join(mnt, "g", "tree", name), "rb").read()
            if got != want["g/tree/" + name]:
                T.fail("%s: %s reads back %d bytes, want %d" % (libver, name, len(got), len(want["g/tree/" + name])))
        # one at a time, each read right after its copy (pending then)
        for i in range(20):
            p = os.path.join(mnt, "h", "p%02d" % i)
            data = content(i + 7, SIZES[i % len(SIZES)])
            with open(p, "wb") as fh:
                fh.write(data)
            if os.stat(p).st_size != len(data) or open(p, "rb").read() != data:
                T.fail("%s: h/p%02d does not read back right after its create" % (libver, i))
            want["h/p%02d" % i] = data
        T.expect_err("%s: O_EXCL on a name just created" % libver,
                     lambda: os.open(os.path.join(mnt, "h", "p19"), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                     errno.EEXIST)
        # rm, mv, ln of pending files
        for name in ("r1", "r2", "r3"):
            with open(os.path.join(mnt, "h", name), "wb") as fh:
                fh.write(name.encode() * 10)
        os.unlink(os.path.join(mnt, "h", "r1"))
        os.rename(os.path.join(mnt, "h", "r2"), os.path.join(mnt, "h", "moved"))
        os.link(os.path.join(mnt, "h", "r3"), os.path.join(mnt, "h", "r3link"))
        want.update({"h/moved": b"r2" * 10, "h/r3": b"r3" * 10, "h/r3link": b"r3" * 10})
        # mkdir joins the batch (issue 70 item 3): each new group a
        # directory at once, EEXIST twice, usable (a file, a group and an
        # attribute in it), removable while pending
        for i in range(20):
            p = os.path.join(mnt, "h", "m%02d" % i)
            os.mkdir(p)
            if not os.path.isdir(p):
                T.fail("%s: h/m%02d is no directory right after its mkdir" % (libver, i))
        T.expect_err("%s: mkdir of a name just made" % libver, lambda: os.mkdir(os.path.join(mnt, "h", "m05")),
                     errno.EEXIST)
        os.setxattr(os.path.join(mnt, "h", "m02"), "user.note", b"pending group")
        with open(os.path.join(mnt, "h", "m00", "inner"), "wb") as fh:
            fh.write(b"in a new group")
        os.mkdir(os.path.join(mnt, "h", "m01", "sub"))
        os.rmdir(os.path.join(mnt, "h", "m19"))
        want["h/m00/inner"] = b"in a new group"
        # rmdir joins the batch too: gone at once for lookups, its name free
        # again, the usual refusals
        for i in range(10):
            os.mkdir(os.path.join(mnt, "h", "x%02d" % i))
        os.listdir(os.path.join(mnt, "h"))      # (linked: removals of groups in FILE)
        for i in range(10):
            os.rmdir(os.path.join(mnt, "h", "x%02d" % i))
        if os.path.exists(os.path.join(mnt, "h", "x03")):
            T.fail("%s: h/x03 still there right after its rmdir" % libver)
        T.expect_err("%s: rmdir twice" % libver, lambda: os.rmdir(os.path.join(mnt, "h", "x04")), errno.ENOENT)
        T.expect_err("%s: rmdir of a group not empty" % libver, lambda: os.rmdir(os.path.join(mnt, "h", "m00")),
                     errno.ENOTEMPTY)
        T.expect_err("%s: rmdir of a file" % libver, lambda: os.rmdir(os.path.join(mnt, "h", "p01")), errno.ENOTDIR)
        os.mkdir(os.path.join(mnt, "h", "x05"))          # the name again, after its pending removal
        T.expect_err("%s: mkdir twice after rmdir" % libver, lambda: os.mkdir(os.path.join(mnt, "h", "x05")),
                     errno.EEXIST)
        # a create in another group, then fsync: durable now
        with open(os.path.join(mnt, "g", "synced"), "wb") as fh:
            fh.write(b"durable")
            fh.flush()
            os.fsync(fh.fileno())
        want["g/synced"] = b"durable"
        listed = sorted(os.listdir(os.path.join(mnt, "g", "tree")))
        if listed != sorted("f%03d.bin" % i for i in range(300)):
            T.fail("%s: ls lists %d names of 300" % (libver, len(listed)))
        if sorted(os.listdir(os.path.join(mnt, "h"))) != sorted(["p%02d" % i for i in range(20)] +
                                                              ["moved", "r3", "r3link"] +
                                                              ["m%02d" % i for i in range(19)] + ["x05"]):
            T.fail("%s: ls h: %r" % (libver, sorted(os.listdir(os.path.join(mnt, "h")))))
        if not T.h5py_opens(path):
            T.fail("%s: h5py cannot open FILE 'r+' 5 s after the last create (the lock kept)" % libver)
        with h5py.File(path, "r") as f:
            if "g/synced" not in f or f["g/synced"][()].tobytes() != b"durable":
                T.fail("%s: the fsync'd file is not in FILE" % libver)
    if not m.alive() and m.returncode not in (0, None):
        T.fail("%s: the daemon exited with %s" % (libver, m.returncode))
    with h5py.File(path, "r") as f:
        for k, v in want.items():
            if k not in f or f[k].dtype != np.uint8 or f[k][()].tobytes() != v:
                T.fail("%s: after the unmount %s is %s" % (libver, k, "missing" if k not in f else
                                                           "%d bytes" % f[k].shape[0]))
                break
        if "h/r1" in f or "h/r2" in f or "h/m19" in f or any("h/x%02d" % i in f for i in range(10) if i != 5) or \
                not isinstance(f.get("h/x05"), h5py.Group):
            T.fail("%s: a removed or moved name is still there" % libver)
        if not all(isinstance(f.get("h/m%02d" % i), h5py.Group) for i in range(19)) or \
                not isinstance(f.get("h/m01/sub"), h5py.Group):
            T.fail("%s: a group made by mkdir is missing after the unmount" % libver)
        elif f["h/m02"].attrs.get("note") not in (b"pending group", "pending group"):
            T.fail("%s: h/m02's attribute: %r" % (libver, f["h/m02"].attrs.get("note")))

    # kill -9 right after a burst of creates: each file whole or absent
    with T.Mount(path, mnt) as m:
        d = os.path.join(mnt, "h")
        for i in range(100):
            with open(os.path.join(d, "k%03d" % i), "wb") as fh:
                fh.write(content(i, 3000))
            if i % 10 == 0:
                os.mkdir(os.path.join(d, "kd%03d" % i))
            if i == 49:
                time.sleep(0.5)         # the first 50: linked by the timer
            if i == 60:
                for k in (0, 10, 20):   # removed, committed by the timer
                    os.rmdir(os.path.join(d, "kd%03d" % k))
                time.sleep(0.5)
            if i == 70:
                os.rmdir(os.path.join(d, "kd030"))      # done or not at the kill
        m.proc.send_signal(signal.SIGKILL)
        m.proc.wait(timeout=10)
    try:
        with h5py.File(path, "r") as f:
            h = f["h"]
            got = {k: h[k][()].tobytes() for k in h if k.startswith("k") and not k.startswith("kd")}
            dirs = [k for k in h if k.startswith("kd")]
            notgroup = [k for k in dirs if not isinstance(h[k], h5py.Group)]
            kept = all(k in f and f[k][()].tobytes() == v for k, v in want.items())
    except Exception as e:  # noqa: BLE001 - any failure to open is a crash-safety bug
        T.fail("%s: h5py cannot read FILE after kill -9: %s" % (libver, e))
        return
    bad = [k for k, v in got.items() if v != content(int(k[1:]), 3000)]
    if any("k%03d" % i not in got for i in range(50)):
        T.fail("%s: after kill -9, files linked before it are missing: %s" %
               (libver, [i for i in range(50) if "k%03d" % i not in got][:5]))
    if bad:
        T.fail("%s: after kill -9, files with wrong bytes: %s" % (libver, bad[:5]))
    if any("kd%03d" % i in dirs for i in (0, 10, 20)):
        T.fail("%s: after kill -9, groups removed before the timer's commit are back: %s" % (libver, sorted(dirs)))
    if "kd040" not in dirs or notgroup:
        T.fail("%s: after kill -9, groups made before the timer's link missing or not groups: %s, %s" %
               (libver, sorted(dirs), notgroup))
    if not kept:
        T.fail("%s: after kill -9, files committed before are gone or changed" % libver)
    print("%s: 325 new files through the write-behind read back, h5py reads them; kill -9 left %d of 100 whole"
          % (libver, len(got)))


def full_disk(work):
    small = os.path.join(work, "small")
    with T.small_disk(small, "3m"):
        path = os.path.join(small, "f.h5")
        mnt = os.path.join(work, "mnt")
        with h5py.File(path, "w") as f:
            f.create_group("g")
        made, refused = [], None
        with T.Mount(path, mnt) as m:
            for i in range(400):
                name = os.path.join(mnt, "g", "s%03d" % i)
                try:
                    with open(name, "wb") as fh:
                        fh.write(content(i, 20000))
                    made.append(i)
                except OSError as e:
                    refused = e.errno
                    break
        if refused != errno.ENOSPC:
            T.fail("full disk: %d files made, then %s, not ENOSPC" % (len(made), refused and errno.errorcode[refused]))
        if m.returncode not in (0, None):
            T.fail("full disk: the unmount exits %s: %s" % (m.returncode, m.output()[-300:]))
        with h5py.File(path, "r") as f:
            g = f["g"]
            lost = [i for i in made if "s%03d" % i not in g or g["s%03d" % i][()].tobytes() != content(i, 20000)]
        # the file whose write was refused may be there, empty or not
        if lost:
            T.fail("full disk: %d answered files lost or wrong after the unmount: %s" % (len(lost), lost[:5]))
        print("full disk: %d files of 20 KB answered and kept, then ENOSPC" % len(made))


def pending_index(work):
    """The pending names' index (lbatch.c names_index_locked): 700
    names pending at once (the index grown twice), a file held open for
    writing in the middle of them, so that the timer's commit links the
    others and keeps it (the names reordered, then dropped: the index
    made again); each looked up by the daemon once the kernel's entries
    expired (1 s): found, its mkdir EEXIST, a name never made ENOENT."""
    path = os.path.join(work, "index.h5")
    mnt = os.path.join(work, "mnt")
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_group("g")
    env = {"H5FS_COMMIT_NAMES_IDLE_MS": "1500", "H5FS_COMMIT_NAMES_MS": "1500"}
    with T.Mount(path, mnt, env=env):
        g = os.path.join(mnt, "g")
        names = ["d%03d" % i for i in range(700)]
        for nm in names[:350]:
            os.mkdir(os.path.join(g, nm))
        fh = open(os.path.join(g, "w"), "wb")
        for nm in names[350:]:
            os.mkdir(os.path.join(g, nm))
        time.sleep(1.2)         # the kernel's entries expired; all pending
        for nm in names[::7] + [names[-1], "w"]:
            if not os.path.exists(os.path.join(g, nm)):
                T.fail("index: %s pending is not found" % nm)
        T.expect_err("index: mkdir of a pending name", lambda: os.mkdir(os.path.join(g, "d349")), errno.EEXIST)
        T.expect_err("index: a name never made", lambda: os.stat(os.path.join(g, "d700")), errno.ENOENT)
        time.sleep(1.0)         # the timer's commit: all but w linked
        fh.write(b"held")
        os.mkdir(os.path.join(g, "late"))
        time.sleep(1.1)
        for nm in ("w", "late", "d000", "d351", "d699"):
            if not os.path.exists(os.path.join(g, nm)):
                T.fail("index: %s is not found after the commit" % nm)
        T.expect_err("index: O_EXCL create of w", lambda: os.open(os.path.join(g, "w"), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                     errno.EEXIST)
        fh.close()
    with h5py.File(path, "r") as f:
        got = sorted(f["g"].keys())
        want = sorted(names + ["w", "late"])
        if got != want:
            T.fail("index: FILE holds %d names of %d" % (len(got), len(want)))
        if f["g/w"][()].tobytes() != b"held":
            T.fail("index: w holds %r" % f["g/w"][()].tobytes())
    print("index: 700 names pending, one held through the timer's commit, all found")


def main():
    work = T.workdir("lbatch")
    for libver in ("earliest", "latest"):
        run(work, libver)
    full_disk(work)
    pending_index(work)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
