#!/usr/bin/python3
"""setfattr's write-behind (member/xbatch.c, doc/MODIFY.md "Write-behind"):
attribute values set in quick succession are committed together.

On an h5py-default file and a libver="latest" one (compact storage, then
dense past 8 in the same batch):
- 300 new names set on a group, interleaved with names on a dataset: each
  getxattr right after its setxattr gives the value, listxattr has them
  all; XATTR_CREATE on a pending name is EEXIST, XATTR_REPLACE on a new
  name ENODATA, a pending name set again takes the new value; existing
  attributes (int64, float64, fixed and variable-length strings) take new
  values in their types, set again and again while pending, and text that
  does not parse is EINVAL with the last value kept;
- FILE's lock comes back by itself (h5py opens FILE 'r+' within 5 s of
  the last change), and h5py reads every attribute as it would have made
  it (a scalar variable-length UTF-8 string, the same text);
- names set just before the unmount are committed by it;
- a kill -9 right after a burst of changes leaves a FILE h5py opens with
  each change done or not done (never a wrong value).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        g = f.create_group("g")
        g.attrs["old"] = np.int64(5)
        g.attrs["f"] = np.float64(1.5)
        g.attrs["fs"] = np.bytes_("fixed")
        g.attrs["vs"] = "vlen"
        f.create_dataset("d", data=np.arange(10, dtype="<i4"))


def attrs_of(path, obj):
    with h5py.File(path, "r") as f:
        out = {}
        for k, v in f[obj].attrs.items():
            out[k] = v.decode() if isinstance(v, bytes) else v
        return out, {k: f[obj].attrs.get_id(k).dtype for k in f[obj].attrs}


def run(work, libver):
    path = os.path.join(work, libver + ".h5")
    mnt = os.path.join(work, "mnt")
    make(path, libver)
    want_g, want_d = {"old": 5, "f": 1.5, "fs": "fixed", "vs": "vlen"}, {}
    with T.Mount(path, mnt) as m:
        g, d = os.path.join(mnt, "g"), os.path.join(mnt, "d")
        for i in range(300):
            name, val = "a%03d" % i, "value %d é" % i
            os.setxattr(g, "user." + name, val.encode())
            want_g[name] = val
            if i % 37 == 0:
                got = os.getxattr(g, "user." + name)
                if got != val.encode():
                    T.fail("%s: getxattr right after setxattr of %s: %r" % (libver, name, got))
            if i % 10 == 0:
                os.setxattr(d, "user.b%03d" % i, b"on d %d" % i)
                want_d["b%03d" % i] = "on d %d" % i
            # existing attributes: new values in their types, pending ones set again
            os.setxattr(g, "user.old", b"%d" % i)
            want_g["old"] = i
            if i % 29 == 0 and os.getxattr(g, "user.old") != b"%d" % i:
                T.fail("%s: getxattr of old right after setting it to %d: %r" % (libver, i, os.getxattr(g, "user.old")))
        T.expect_err("%s: a value of old that does not parse" % libver,
                     lambda: os.setxattr(g, "user.old", b"abc"), 22)
        for name, val, want in (("f", b"2.25", 2.25), ("fs", b"a longer fixed string", "a longer fixed string"),
                                ("vs", b"new vlen", "new vlen"), ("f", b"-0.5", -0.5)):
            os.setxattr(g, "user." + name, val)
            want_g[name] = want
        os.setxattr(g, "user.z1", b"first")
        T.expect_err("%s: XATTR_CREATE of a pending name" % libver,
                     lambda: os.setxattr(g, "user.z1", b"x", os.XATTR_CREATE), 17)
        T.expect_err("%s: XATTR_REPLACE of a new name" % libver,
                     lambda: os.setxattr(g, "user.z2", b"x", os.XATTR_REPLACE), 61)
        os.setxattr(g, "user.z3", b"one")
        os.setxattr(g, "user.z3", b"two")        # pending: set again
        want_g.update({"z1": "first", "z3": "two"})
        listed = {x[5:] for x in os.listxattr(g) if x.startswith("user.") and not x.startswith("user.h5.")}
        if listed != set(want_g):
            T.fail("%s: listxattr: %d names, want %d (missing %s)" % (libver, len(listed), len(want_g),
                                                                    sorted(set(want_g) - listed)[:5]))
        if not T.h5py_opens(path):
            T.fail("%s: h5py cannot open FILE 'r+' 5 s after the last setxattr (the lock kept)" % libver)
        for obj, want in (("g", want_g), ("d", want_d)):
            got, types = attrs_of(path, obj)
            if types.get("old", np.dtype("<i8")) != np.dtype("<i8") or types.get("f", np.dtype("<f8")) != \
                    np.dtype("<f8") or (obj == "g" and h5py.check_string_dtype(types["fs"]).length is None):
                T.fail("%s: %s: the types of the attributes set changed: %r" % (libver, obj, types))
            if got != want:
                bad = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
                T.fail("%s: %s's attributes as h5py reads them differ: %s" % (libver, obj, sorted(bad)[:5]))
            for k in want:
                if k in ("old", "f", "fs"):
                    continue
                si = h5py.check_string_dtype(types[k])
                if (si is None or si.encoding != "utf-8" or si.length is not None):
                    T.fail("%s: %s/%s is %r, not a variable-length UTF-8 string" % (libver, obj, k, types[k]))
        # names set just before the unmount
        for i in range(50):
            os.setxattr(d, "user.late%02d" % i, b"late")
            want_d["late%02d" % i] = "late"
    if not m.alive() and m.returncode not in (0, None):
        T.fail("%s: the daemon exited with %s" % (libver, m.returncode))
    got, _ = attrs_of(path, "d")
    if got != want_d:
        T.fail("%s: after the unmount, d has %d attributes, want %d" % (libver, len(got), len(want_d)))

    # kill -9 right after a burst: each change done or not done
    with T.Mount(path, mnt) as m:
        g = os.path.join(mnt, "g")
        for i in range(200):
            os.setxattr(g, "user.k%03d" % i, b"kill %d" % i)
        m.proc.send_signal(signal.SIGKILL)
        m.proc.wait(timeout=10)
    try:
        got, _ = attrs_of(path, "g")
    except OSError as e:
        T.fail("%s: h5py cannot open FILE after kill -9: %s" % (libver, e))
        return
    for k, v in got.items():
        if k.startswith("k") and v != "kill %d" % int(k[1:]):
            T.fail("%s: after kill -9, %s = %r" % (libver, k, v))
        elif not k.startswith("k") and want_g.get(k) != v:
            T.fail("%s: after kill -9, %s = %r, was %r" % (libver, k, v, want_g.get(k)))
    if set(want_g) - set(got):
        T.fail("%s: after kill -9, committed attributes are gone: %s" % (libver, sorted(set(want_g) - set(got))[:5]))
    print("%s: %d new attributes through the write-behind, h5py reads them; kill -9 left %d of 200" %
          (libver, len(want_g) + len(want_d), sum(1 for k in got if k.startswith("k"))))


def main():
    work = T.workdir("xbatch")
    for libver in ("earliest", "latest"):
        run(work, libver)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
