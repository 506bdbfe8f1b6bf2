"""The second oracle: libhdf5 1.14 (h5wasm, libhdf5 1.14.6 compiled to
WebAssembly, an npm package installed by contrib/install-deps.sh) beside
the Debian libhdf5 1.10 of h5py.  Debian bookworm ships no libhdf5 1.14, so
the write tests check what h5fs writes with both: h5py's reading of FILE
and h5wasm's (h5wasm_tree.mjs) must agree, object by object.

    import h514
    h514.require()                  # exits 77 when node or h5wasm is missing
    bad = h514.compare(path)        # [] when both libraries read the same
"""
import hashlib
import json
import os
import shutil
import subprocess

import h5fs_testlib as T

H5WASM_VERSION = "0.8.11"       # the last h5wasm on libhdf5 1.14 (1.14.6)
SCRIPT = os.path.join(T.HERE, "h5wasm_tree.mjs")


def module_dir():
    """Where h5wasm is installed (npm install -g), or None."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    d = os.path.join(root, "h5wasm")
    try:
        with open(os.path.join(d, "package.json")) as fh:
            if json.load(fh).get("version") != H5WASM_VERSION:
                return None
    except (OSError, ValueError):
        return None
    return d


def require():
    if module_dir() is None:
        T.skip("h5wasm %s (libhdf5 1.14) not installed: npm install -g h5wasm@%s" % (H5WASM_VERSION, H5WASM_VERSION))


def wasm_tree(path):
    """FILE as libhdf5 1.14 reads it (h5wasm_tree.mjs)."""
    p = subprocess.run(["node", SCRIPT, module_dir(), os.path.abspath(path)], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise AssertionError("libhdf5 1.14 (h5wasm) cannot read %s: %s" % (path, p.stderr.strip()[-800:]))
    return json.loads(p.stdout)


def _flat(v):
    import numpy as np
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [x for e in v for x in _flat(e)]
    if isinstance(v, (bytes, np.bytes_)):
        return [bytes(v).decode("utf-8", "replace")]
    if isinstance(v, np.generic):
        return _flat(v.item())
    return [v]


def _attrs(obj):
    return {name: _flat(obj.attrs[name]) for name in obj.attrs}


def _numeric(dt):
    return dt.kind in "iufb" and dt.metadata is None and dt.names is None and dt.subdtype is None


def h5py_tree(path):
    """FILE as libhdf5 1.10 (h5py) reads it, in wasm_tree's form."""
    import h5py
    import numpy as np
    tree = {}
    with h5py.File(path, "r") as f:
        tree["/"] = {"kind": "group", "attrs": _attrs(f)}
        stack = ["/"]
        while stack:
            gpath = stack.pop()
            g = f[gpath]
            for name in g:
                p = (gpath if gpath != "/" else "") + "/" + name
                link = g.get(name, getlink=True)
                if isinstance(link, h5py.SoftLink):
                    tree[p] = {"kind": "soft", "target": link.path}
                    continue
                if isinstance(link, h5py.ExternalLink):
                    tree[p] = {"kind": "external", "target": {"filename": link.filename, "obj_path": link.path}}
                    continue
                o = g[name]
                if isinstance(o, h5py.Group):
                    tree[p] = {"kind": "group", "attrs": _attrs(o)}
                    stack.append(p)
                    continue
                d = {"kind": "dataset", "shape": list(o.shape), "attrs": _attrs(o)}
                v = o[()]
                if _numeric(o.dtype):
                    a = np.ascontiguousarray(np.asarray(v), dtype=o.dtype.newbyteorder("<"))
                    d["nbytes"] = a.nbytes
                    d["sha256"] = hashlib.sha256(a.tobytes()).hexdigest()
                else:
                    d["values"] = _flat(v)
                tree[p] = d
    return tree


def _same_value(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
    return x == y or (x != x and y != y)


def _same_list(a, b):
    return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))


def compare(path):
    """The differences between libhdf5 1.10's and 1.14's reading of FILE
    (a list of lines; [] when they agree)."""
    want, got = h5py_tree(path), wasm_tree(path)
    bad = []
    for p in sorted(set(want) | set(got)):
        w, g = want.get(p), got.get(p)
        if w is None or g is None:
            bad.append("%s: only libhdf5 %s reads it" % (p, "1.10" if g is None else "1.14"))
            continue
        if w["kind"] != g["kind"]:
            bad.append("%s: %s by 1.10, %s by 1.14" % (p, w["kind"], g["kind"]))
            continue
        if g.get("error"):
            bad.append("%s: 1.14: %s" % (p, g["error"]))
        for k in ("target", "nbytes", "sha256"):
            if w.get(k) != g.get(k):
                bad.append("%s: %s %r by 1.10, %r by 1.14" % (p, k, w.get(k), g.get(k)))
        if w["kind"] == "dataset" and list(w["shape"]) != list(g.get("shape") or []):
            bad.append("%s: shape %r by 1.10, %r by 1.14" % (p, w["shape"], g.get("shape")))
        if "values" in w and not _same_list(w["values"], g.get("values", [])):
            bad.append("%s: values differ: %r / %r" % (p, w["values"][:8], g.get("values", [])[:8]))
        wa, ga = w.get("attrs", {}), g.get("attrs", {})
        for n in sorted(set(wa) | set(ga)):
            if n not in wa or n not in ga:
                bad.append("%s: attribute %r read by one library only" % (p, n))
            elif not isinstance(ga[n], list) or not _same_list(wa[n], ga[n]):
                bad.append("%s: attribute %r: %r by 1.10, %r by 1.14" % (p, n, wa[n][:8], ga[n]))
    return bad
