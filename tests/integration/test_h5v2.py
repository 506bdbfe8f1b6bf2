#!/usr/bin/python3
"""The files HDF5 2.x writes (issue 54: format specification 4.0), read and
written through a real mount, with HDF5 2.x itself as the oracle: h5wasm
0.10.x (libhdf5 2.0 compiled to WebAssembly, npm; contrib/install-deps.sh
installs it as h5wasm2 beside the 1.14 one) writes the fixtures
(h5wasm2_io.mjs make) under libver="latest" ([v2.0, v2.0]: datatype
message version 5 for compounds, layout message version 5 whose filtered
chunk index entries carry the chunk size in Size of Lengths bytes) and
under its default bounds, and reads back what h5fs wrote (dump).

Reads: every dataset's bytes through the mount equal h5wasm's, compounds
(and their attributes, and the REFERENCE_LIST of dimension scales) included.
The 4.0 types no writer here makes (complex, bfloat16, FP8, the version 1
mapping block of virtual datasets) come from make_h5v2_types.py.
Writes: `cat >>` onto extensible-array datasets (filtered and not),
`dd conv=notrunc` into the middle of every index (fixed array, extensible
array, v2 B-tree, single chunk, all deflated: chunks re-encoded); then
HDF5 2.x must read every value h5fs wrote, and a second mount the same.
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
try:
    import numpy as np  # noqa: E402
except ImportError:
    T.skip("numpy missing")

H5WASM2_VERSION = "0.10."         # libhdf5 2.0
SCRIPT = os.path.join(T.HERE, "h5wasm2_io.mjs")


def module_dir():
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
        with open(os.path.join(root, "h5wasm2", "package.json")) as fh:
            if json.load(fh).get("version", "").startswith(H5WASM2_VERSION):
                return os.path.join(root, "h5wasm2")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return None


MOD = module_dir()
if MOD is None:
    T.skip("h5wasm 0.10 (libhdf5 2.0) not installed as h5wasm2: contrib/install-deps.sh")


def node(*args):
    p = subprocess.run(["node", SCRIPT, MOD] + list(args), capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("h5wasm2_io.mjs %s: %s" % (" ".join(args), p.stderr.strip()[-800:]))
    return p.stdout


def dump(path):
    return json.loads(node("dump", os.path.abspath(path)))


# The fixture's values (h5wasm2_io.mjs make writes the same).
def initial():
    return {
        "ea": np.arange(100, dtype="<i4"),
        "fa": 3 * np.arange(100, dtype="<i4"),
        "bt2": (7 * np.arange(64, dtype="<i4")).reshape(8, 8),
        "single": 5 * np.arange(20, dtype="<i4"),
        "ea_plain": np.arange(40, dtype="<f8") * 0.5,
        "ea_empty": np.zeros(0, dtype="<i4"),
        "ea_cut": np.arange(1, 51, dtype="<i4"),
        "bt2_empty": np.zeros((0, 4), dtype="<i4"),
        "x": np.arange(8, dtype="<f8") * 10,
        "img": np.arange(64, dtype="<u2").reshape(8, 8),
    }


CMP = [(1, 0.5), (2, 1.5), (3, -2.25)]
CMP_BYTES = b"".join(struct.pack("<id", a, b) for a, b in CMP)


def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        T.fail("read %s: %s" % (path, e))
        return None


def check_reads(mnt, want, label):
    for name, a in want.items():
        got = read(os.path.join(mnt, name))
        if got != a.tobytes():
            T.fail("%s: %s through the mount differs from HDF5 2.x's values (%d bytes, expected %d)"
                   % (label, name, len(got), a.nbytes))
    got = read(os.path.join(mnt, "cmp"))
    if got != CMP_BYTES:
        T.fail("%s: compound cmp reads %r, expected %r" % (label, got, CMP_BYTES))
    dt = os.getxattr(os.path.join(mnt, "cmp"), "user.h5.dtype")
    if dt != b"|V12":
        T.fail("%s: cmp's user.h5.dtype %r" % (label, dt))
    descr = os.getxattr(os.path.join(mnt, "cmp"), "user.h5.descr").decode()
    if np.dtype(eval(descr)) != np.dtype([("a", "<i4"), ("b", "<f8")]):
        T.fail("%s: cmp's user.h5.descr %r" % (label, descr))
    pair = os.getxattr(os.path.join(mnt, "cmp"), "user.pair").decode()
    if pair != "{x: 7, y: 2.5}":
        T.fail("%s: the compound attribute pair reads %r" % (label, pair))
    # the dimension scales' compound REFERENCE_LIST and DIMENSION_LIST
    # name the dataset and the scale at their object header addresses
    rl = xattr(os.path.join(mnt, "x"), "user.REFERENCE_LIST") or ""
    dl = xattr(os.path.join(mnt, "img"), "user.DIMENSION_LIST") or ""
    if not re.fullmatch(r"\{dataset: obj:0x[0-9a-f]+, dimension: 0\}, \{dataset: obj:0x[0-9a-f]+, dimension: 1\}", rl):
        T.fail("%s: x's REFERENCE_LIST reads %r" % (label, rl))
    if not re.fullmatch(r"\[obj:0x[0-9a-f]+\], \[obj:0x[0-9a-f]+\]", dl):
        T.fail("%s: img's DIMENSION_LIST reads %r" % (label, dl))
    # every attribute of the dimension scale and its dataset reads
    for name in ("x", "img"):
        p = os.path.join(mnt, name)
        for k in os.listxattr(p):
            try:
                os.getxattr(p, k)
            except OSError as e:
                T.fail("%s: getxattr %s %s: %s" % (label, name, k, e))
    if "user.REFERENCE_LIST" not in os.listxattr(os.path.join(mnt, "x")):
        T.fail("%s: the scale x has no REFERENCE_LIST attribute" % label)


def check_all(mnt, d, label, skip=()):
    """Every dataset HDF5 2.x reads (its dump d), through the mount: the
    same bytes, or for strings the same texts; root attributes alike."""
    for p, e in sorted(d.items()):
        if p.lstrip("/") in skip or e.get("error") or e.get("group") or "soft" in e:
            continue
        got = read(os.path.join(mnt, p.lstrip("/")))
        if got is None:
            continue
        if "b64" in e:
            if got != base64.b64decode(e["b64"]):
                T.fail("%s: %s through the mount differs from HDF5 2.x's bytes" % (label, p))
        elif e.get("dtype") in ("Reference", "RegionReference"):
            if got != b"".join(bytes(r["ref_data"]) for r in e["values"]):
                T.fail("%s: %s reads %r, HDF5 2.x %r" % (label, p, got, e["values"]))
        elif e.get("dtype") == "S":
            if got.decode().split("\n")[:-1] != e["values"]:
                T.fail("%s: %s reads %r, HDF5 2.x %r" % (label, p, got, e["values"]))
        elif isinstance(e.get("dtype"), str) and e["dtype"].startswith("S"):
            n = int(e["dtype"][1:])
            if got != b"".join(v.encode().ljust(n, b"\0") for v in e["values"]):
                T.fail("%s: %s reads %r, HDF5 2.x %r" % (label, p, got, e["values"]))
    ra = d["/"]["attrs"]
    names = sorted(k[5:] for k in os.listxattr(mnt) if k.startswith("user.") and not k.startswith("user.h5."))
    if names != sorted(ra):
        T.fail("%s: root attributes %s, HDF5 2.x %s" % (label, names, sorted(ra)))
    for k, v in ra.items():
        got = xattr(mnt, "user." + k)
        if got is None:
            continue
        if isinstance(v, str):
            ok = got == v
        else:
            vals = v if isinstance(v, list) else [v]
            ok = [float(x) for x in got.split(", ")] == [float(x) for x in vals]
        if not ok:
            T.fail("%s: root attribute %s reads %r, HDF5 2.x %r" % (label, k, got, v))
    groups = sorted(p for p, e in d.items() if e.get("group"))
    for g in groups:
        kids = sorted(q.rsplit("/", 1)[1] for q in d if q != g and q.rsplit("/", 1)[0] == (g if g != "/" else ""))
        if sorted(x for x in os.listdir(os.path.join(mnt, g.lstrip("/")))) != kids:
            T.fail("%s: group %s lists %s, HDF5 2.x %s" % (label, g, os.listdir(os.path.join(mnt, g.lstrip("/"))),
                                                          kids))


def check_oracle(path, want, label):
    """HDF5 2.x reads every value as expected."""
    d = dump(path)
    for name, a in want.items():
        e = d.get("/" + name)
        if e is None or e.get("error"):
            T.fail("%s: HDF5 2.x cannot read %s: %s" % (label, name, e and e.get("error")))
            continue
        if list(e["shape"]) != list(a.shape):
            T.fail("%s: HDF5 2.x reads %s of shape %s, expected %s" % (label, name, e["shape"], a.shape))
        if base64.b64decode(e["b64"]) != a.tobytes():
            T.fail("%s: HDF5 2.x reads other values of %s" % (label, name))
    e = d.get("/cmp", {})
    if [tuple(r) for r in e.get("values", [])] != CMP:
        T.fail("%s: HDF5 2.x reads cmp as %r" % (label, e))
    if "new" in want:
        if d.get("/made/soft", {}).get("soft") not in ("/fa", "../fa") or "/made/hard" not in d:
            T.fail("%s: HDF5 2.x does not see the links made: %s" % (label, sorted(d)))
        if d.get("/fa", {}).get("attrs", {}).get("note") != "written by h5fs":
            T.fail("%s: HDF5 2.x reads fa's attribute note as %r" % (label, d.get("/fa", {}).get("attrs")))
        if "/ea_plain" in d or "/many/g07" in d or "/many/leaf" not in d:
            T.fail("%s: HDF5 2.x sees the tree as %s" % (label, sorted(d)))
        a = d.get("/", {}).get("attrs", {})
        if a.get("title") != "changed by h5fs" or "n" in a or a.get("scale") != [0.5, 1.5, 2.5]:
            T.fail("%s: HDF5 2.x reads the root attributes as %r" % (label, a))


def sh(cmd, *args):
    r = subprocess.run(["/bin/bash", "-c", cmd, "sh"] + list(args), capture_output=True, timeout=60)
    if r.returncode != 0:
        T.fail("%s %s: %s" % (cmd, args, r.stderr.decode().strip()))
    return r.returncode == 0


def overwrite(mnt, name, want, index, values, work):
    """dd conv=notrunc of values at element index (flat) of name."""
    a = want[name]
    flat = a.reshape(-1).copy()
    flat[index:index + len(values)] = values
    src = os.path.join(work, "dd.bin")
    with open(src, "wb") as fh:
        fh.write(np.asarray(values, dtype=a.dtype).tobytes())
    sh('dd if="$1" of="$2" bs=%d seek=%d conv=notrunc status=none' % (a.itemsize, index), src,
       os.path.join(mnt, name))
    want[name] = flat.reshape(a.shape)


def append(mnt, name, want, values, work):
    a = want[name]
    more = np.asarray(values, dtype=a.dtype)
    src = os.path.join(work, "rows.bin")
    with open(src, "wb") as fh:
        fh.write(more.tobytes())
    sh('cat "$1" >> "$2"', src, os.path.join(mnt, name))
    want[name] = np.concatenate([a, more])


def writes(mnt, want, work):
    # appends onto extensible arrays, filtered (elements of 20 bytes
    # under layout version 5) and not; the second adds chunks past the
    # index block
    append(mnt, "ea", want, np.arange(1000, 1037, dtype="<i4"), work)
    append(mnt, "ea", want, np.arange(-500, -200, dtype="<i4"), work)
    append(mnt, "ea_plain", want, np.arange(9, dtype="<f8") - 0.25, work)
    # the first chunks of datasets with none: h5fs makes the index
    append(mnt, "ea_empty", want, np.arange(40, dtype="<i4") * -3, work)
    append(mnt, "bt2_empty", want, np.arange(40, dtype="<i4").reshape(10, 4) + 7, work)
    # in-place writes: chunks re-encoded under every index
    overwrite(mnt, "fa", want, 10, np.arange(-40, 0, dtype="<i4"), work)
    overwrite(mnt, "bt2", want, 18, np.arange(900, 930, dtype="<i4"), work)
    overwrite(mnt, "single", want, 3, [-1, -2, -3, -4], work)
    overwrite(mnt, "ea", want, 5, np.arange(2000, 2050, dtype="<i4"), work)
    # incompressible values: re-encoded chunks larger than before
    rng = np.random.default_rng(54)
    overwrite(mnt, "fa", want, 48, rng.integers(-2**31, 2**31 - 1, 16, dtype="<i4"), work)
    overwrite(mnt, "bt2", want, 32, rng.integers(-2**31, 2**31 - 1, 32, dtype="<i4"), work)
    # a new attribute and a new dataset in the file
    try:
        os.setxattr(os.path.join(mnt, "fa"), "user.note", b"written by h5fs")
    except OSError as e:
        T.fail("setxattr fa user.note: %s" % e)
    np.save(os.path.join(mnt, "new.npy"), np.arange(12, dtype="<f4").reshape(3, 4))
    want["new"] = np.arange(12, dtype="<f4").reshape(3, 4)
    # the tree and attributes: a group made, a dataset moved into it, a
    # link removed from the dense group, root attributes replaced, removed
    try:
        os.mkdir(os.path.join(mnt, "made"))
        os.rename(os.path.join(mnt, "ea_plain"), os.path.join(mnt, "made", "moved"))
        os.rmdir(os.path.join(mnt, "many", "g07"))
        os.setxattr(mnt, "user.title", b"changed by h5fs")
        os.removexattr(mnt, "user.n")
    except OSError as e:
        T.fail("tree/attribute changes: %s" % e)
    want["made/moved"] = want.pop("ea_plain")
    # emptied and written anew (open with O_TRUNC: the index address goes
    # undefined in the layout message, then a new index), links made
    cut = np.arange(7, dtype="<i4") * 11
    try:
        with open(os.path.join(mnt, "ea_cut"), "wb") as fh:
            fh.write(cut.tobytes())
        want["ea_cut"] = cut
        os.symlink("../fa", os.path.join(mnt, "made", "soft"))
        os.link(os.path.join(mnt, "single"), os.path.join(mnt, "made", "hard"))
        want["made/hard"] = want["single"]
    except OSError as e:
        T.fail("cat > ea_cut, ln -s, ln: %s" % e)


def older_readers(path):
    """libhdf5 1.10 (h5py) and 1.14 (h5wasm 0.8) on path: the differences
    between their readings (h514.compare), or None when either is missing."""
    try:
        import h5py  # noqa: F401
        import h514
    except ImportError:
        return None
    if h514.module_dir() is None:
        return None
    try:
        return set(h514.compare(path))
    except Exception as e:  # a library that cannot open the file
        return {"cannot read: %s" % e}


def run(libver):
    work = T.workdir("h5v2-" + libver)
    path = os.path.join(work, "f.h5")
    mnt = os.path.join(work, "mnt")
    node("make", path, libver)
    want = initial()
    check_oracle(path, want, libver + " fixture")
    # under 2.x's default bounds libhdf5 1.10 and 1.14 read the fixture
    # (alike but for how they show object references): they must still
    # after h5fs's writes
    before = older_readers(path) if libver == "default" else None
    with T.Mount(path, mnt) as m, m.watchdog(120):
        check_all(mnt, dump(path), libver + " read")
        check_reads(mnt, want, libver + " read")
        writes(mnt, want, work)
        check_reads(mnt, want, libver + " after writes")
    check_oracle(path, want, libver + " written by h5fs")
    if before is not None:
        after = older_readers(path)
        if after - before:
            T.fail("%s: libhdf5 1.10/1.14 read the file h5fs changed otherwise: %s" % (libver, sorted(after - before)))
        print("%s: libhdf5 1.10 and 1.14 read the changed file as before (%d known differences)" % (libver, len(before)))
    elif libver == "default":
        print("h5py or h5wasm 0.8 missing: 1.10/1.14 not checked")
    # HDF5 2.x appends to and rewrites in the indexes h5fs made or grew
    # (extensible arrays, filtered): it reads and writes their entries
    node("more", path, "ea", "ea_empty")
    for n in ("ea", "ea_empty"):
        a = np.concatenate([want[n], -1 - np.arange(16, dtype="<i4")])
        a[0] = 4242
        want[n] = a
    check_oracle(path, want, libver + " then HDF5 2.x")
    with T.Mount(path, mnt, opts=["-o", "ro"]) as m, m.watchdog(60):
        check_reads(mnt, want, libver + " remounted")
        check_all(mnt, dump(path), libver + " remounted")
    shutil.rmtree(work, ignore_errors=True)


def xattr(path, name):
    try:
        return os.getxattr(path, name).decode()
    except OSError as e:
        T.fail("getxattr %s %s: %s" % (path, name, e))
        return None


def run_types():
    """The 4.0 types no writer here makes (make_h5v2_types.py builds them
    from the specification's bytes): HDF5 2.x reads the complex ones as
    built, h5fs reads and names every one, refuses the polar form."""
    import make_h5v2_types as G
    work = T.workdir("h5v2-types")
    path = os.path.join(work, "types.h5")
    mnt = os.path.join(work, "mnt")
    G.build(path)
    raw = {"c8": G.C8.tobytes(), "c16": G.C16.tobytes(), "c4": G.C4.tobytes(), "bf16": G.BF16_BITS.tobytes(),
           "e4m3": G.E4M3_BITS.tobytes(), "e5m2": G.E5M2_BITS.tobytes()}
    names = {"c8": "<c8", "c16": "<c16", "c4": "complex32", "bf16": "bfloat16", "e4m3": "float8_e4m3fn",
             "e5m2": "float8_e5m2", "e2m3": "float6_e2m3fn", "e3m2": "float6_e3m2fn", "e2m1": "float4_e2m1fn"}
    raw.update({n: b.tobytes() for n, b in G.LOW_BITS.items()})
    # the oracle: libhdf5 2.0 opens the generated types (its JavaScript
    # layer converts the complex ones only) and refuses the polar form
    d = dump(path)
    for n in ("c8", "c16", "c4"):
        if base64.b64decode(d.get("/" + n, {}).get("b64", "")) != raw[n]:
            T.fail("HDF5 2.x reads the generated %s as %r" % (n, d.get("/" + n)))
    if d.get("/c8", {}).get("attrs", {}).get("z") != list(G.Z.tobytes()):
        T.fail("HDF5 2.x reads c8's attribute z as %r" % d.get("/c8", {}).get("attrs"))
    for n in ("bf16", "e4m3", "e5m2"):
        if "not supported" not in d.get("/" + n, {}).get("error", ""):
            T.fail("HDF5 2.x on the generated %s: %r" % (n, d.get("/" + n)))
    if "error" not in d.get("/polar", {}):
        T.fail("HDF5 2.x reads the polar complex type: %r" % d.get("/polar"))
    with T.Mount(path, mnt, opts=["-o", "ro"]) as m, m.watchdog(60):
        for n, b in raw.items():
            p = os.path.join(mnt, n)
            if read(p) != b:
                T.fail("types: %s through the mount differs" % n)
            if xattr(p, "user.h5.dtype") != names[n]:
                T.fail("types: %s's user.h5.dtype is %r, expected %r" % (n, xattr(p, "user.h5.dtype"), names[n]))
        for n, want in (("c8", G.C8), ("c16", G.C16)):
            a = np.load(os.path.join(mnt, n + ".npy"))
            if a.dtype != want.dtype or not np.array_equal(a, want):
                T.fail("types: %s.npy loads as %r %r" % (n, a.dtype, a))
        z = xattr(os.path.join(mnt, "c8"), "user.z")
        if z != "(-1.25+4.0j)":
            T.fail("types: c8's attribute z reads %r" % z)
        try:
            open(os.path.join(mnt, "polar"), "rb").read()
            T.fail("types: the polar complex dataset reads")
        except OSError:
            pass
        if "polar" not in m.output():
            T.fail("types: no log line names the polar form: %s" % m.output()[-400:])
    # the tools: h5fs-ls --json names them as user.h5.dtype does
    r = subprocess.run([T.H5FS_LS, "--json", path], capture_output=True, text=True, timeout=60)
    ent = {e["path"].lstrip("/"): e.get("dtype", {}) for e in json.loads(r.stdout)["entries"]}
    for n, want in names.items():
        got = ent.get(n, {}).get("name", ent.get(n, {}).get("numpy"))
        if got != want:
            T.fail("h5fs-ls --json: %s's dtype %r, expected %r" % (n, ent.get(n), want))
    # Zarr v2 has complex64/128 and nothing for the others
    r = subprocess.run([T.H5FS_LS, "--refs", path], capture_output=True, text=True, timeout=60)
    refs = json.loads(r.stdout)["refs"] if r.stdout.strip() else {}
    for n, z in (("c8", "<c8"), ("c16", "<c16")):
        if json.loads(refs.get(n + "/.zarray", "{}")).get("dtype") != z:
            T.fail("h5fs-ls --refs: %s has no Zarr dtype %s" % (n, z))
    for n in ("c4", "bf16", "e4m3", "e5m2"):
        if n + "/.zarray" in refs or "/%s: dataset skipped" % n not in r.stderr:
            T.fail("h5fs-ls --refs: %s not skipped with a line: %s" % (n, r.stderr))
    find = os.path.join(T.BUILDDIR, "h5fs-find")
    for pat, want in (("float8*", ["e4m3", "e5m2"]), ("<c*", ["c16", "c8"]), ("bfloat16", ["bf16"]),
                      ("complex32", ["c4"])):
        r = subprocess.run([find, work, "-dtype", pat], capture_output=True, text=True, timeout=60)
        got = sorted(line.rsplit("/", 1)[-1] for line in r.stdout.split())
        if got != want:
            T.fail("h5fs-find -dtype %s: %s" % (pat, got))
    shutil.rmtree(work, ignore_errors=True)


def run_vds():
    """A virtual dataset whose mapping block is version 1 (III.F: flags,
    shared names, the same-file bit; make_h5v2_types.build_vds): HDF5 2.x
    and the mount read the same values."""
    import make_h5v2_types as G
    work = T.workdir("h5v2-vds")
    path = G.build_vds(work)
    mnt = os.path.join(work, "mnt")
    e = dump(path).get("/v", {})
    if base64.b64decode(e.get("b64", "")) != G.VDS_WANT.tobytes():
        T.fail("HDF5 2.x reads the version 1 mapping block's /v as %r" % e)
    with T.Mount(path, mnt, opts=["-o", "ro"]) as m, m.watchdog(60):
        got = read(os.path.join(mnt, "v"))
        if got != G.VDS_WANT.tobytes():
            T.fail("vds: /v through the mount reads %r" % (got and np.frombuffer(got, "<i4")))
    shutil.rmtree(work, ignore_errors=True)


for lv in ("latest", "default"):
    run(lv)
run_types()
run_vds()
sys.exit(T.finish())
