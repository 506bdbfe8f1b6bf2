#!/usr/bin/python3
"""Fixtures of tests/integration/test_links.py, written by h5py
(deterministic). Issue 21 items 4-6:

    make_link_fixtures.py DIR     writes the files below into DIR

  master.h5         /nested -> chain/chain_b.h5:/to_c, which is itself an
                    external link to chain_c.h5:/c/data (a chain);
                    /nested_grp -> chain/chain_b.h5:/to_cgrp/sub (an external
                    link in the middle of the path);
                    /hops16 -> hops/h01.h5:/next ... h16.h5:/next, a dataset:
                    16 links in all (libhdf5's limit: followed);
                    /hops17 -> hops/h00.h5:/next: 17 links (refused);
                    /loop -> chain/loop_a.h5:/x -> loop_b.h5:/y -> loop_a.h5:/x;
                    /entry/ext_group -> sub/data.h5:/entry
  sub/data.h5       /entry/data/data (int32), /other/x, and soft links in
                    /entry: latest -> /entry/data/data, dlink -> /entry/data,
                    top -> /entry, rel -> data/data, outside -> /other/x,
                    other_grp -> /other (whose back -> /entry/data/data),
                    dangling -> /nowhere
  visit.h5          libhdf5's h5ex_g_visit layout: /group1 is also
                    /group1/group3/group4/group1/group5 (there an ancestor)
                    and /group2/group4/group1/group5 (there not)
"""
import os
import sys

import numpy as np


def make(d):
    import h5py

    for sub in ("chain", "sub", "hops"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    # a chain of two external links, and one in the middle of a path
    with h5py.File(os.path.join(d, "chain", "chain_c.h5"), "w") as f:
        f.create_dataset("c/data", data=np.arange(24, dtype=np.float64).reshape(4, 6) * 1.5)
        f.create_dataset("c/sub/inner", data=np.arange(5, dtype=np.int16) - 2)
        f["c/sub/soft"] = h5py.SoftLink("/c/data")
    with h5py.File(os.path.join(d, "chain", "chain_b.h5"), "w") as f:
        f["to_c"] = h5py.ExternalLink("chain_c.h5", "/c/data")
        f["to_cgrp"] = h5py.ExternalLink("chain_c.h5", "/c")
    # a loop of external links
    with h5py.File(os.path.join(d, "chain", "loop_a.h5"), "w") as f:
        f["x"] = h5py.ExternalLink("loop_b.h5", "/y")
    with h5py.File(os.path.join(d, "chain", "loop_b.h5"), "w") as f:
        f["y"] = h5py.ExternalLink("loop_a.h5", "/x")
    # h00 .. h16: each /next links to the next file's /next; h16's is data
    for k in range(17):
        with h5py.File(os.path.join(d, "hops", "h%02d.h5" % k), "w") as f:
            if k < 16:
                f["next"] = h5py.ExternalLink("h%02d.h5" % (k + 1), "/next")
            else:
                f.create_dataset("next", data=np.arange(7, dtype=np.uint8) * 3)
    # soft links inside an externally linked group
    with h5py.File(os.path.join(d, "sub", "data.h5"), "w") as f:
        f.create_dataset("entry/data/data", data=np.arange(30, dtype=np.int32).reshape(5, 6) - 7)
        f.create_dataset("other/x", data=np.linspace(0, 1, 9))
        e = f["entry"]
        e["latest"] = h5py.SoftLink("/entry/data/data")
        e["dlink"] = h5py.SoftLink("/entry/data")
        e["top"] = h5py.SoftLink("/entry")
        e["rel"] = h5py.SoftLink("data/data")
        e["outside"] = h5py.SoftLink("/other/x")
        e["other_grp"] = h5py.SoftLink("/other")
        e["dangling"] = h5py.SoftLink("/nowhere")
        f["other/back"] = h5py.SoftLink("/entry/data/data")
    with h5py.File(os.path.join(d, "master.h5"), "w") as f:
        f["nested"] = h5py.ExternalLink("chain/chain_b.h5", "/to_c")
        f["nested_grp"] = h5py.ExternalLink("chain/chain_b.h5", "/to_cgrp/sub")
        f["hops16"] = h5py.ExternalLink("hops/h01.h5", "/next")
        f["hops17"] = h5py.ExternalLink("hops/h00.h5", "/next")
        f["loop"] = h5py.ExternalLink("chain/loop_a.h5", "/x")
        f.create_group("entry")
        f["entry/ext_group"] = h5py.ExternalLink("sub/data.h5", "/entry")
    # h5ex_g_visit (libhdf5's example, HDF5Examples/C/H5G/h5ex_g_visit.c)
    with h5py.File(os.path.join(d, "visit.h5"), "w", libver="earliest") as f:
        g1 = f.create_group("group1")
        g1.create_dataset("dset1", data=np.array([[7]], dtype=np.int32))
        g3 = g1.create_group("group3")
        g3["dset2"] = g1["dset1"]
        g4 = g3.create_group("group4")
        g4.create_group("group1").__setitem__("group5", g1)
        g4.create_group("group2")
        f["group2"] = g3


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_link_fixtures.py DIR")
    make(sys.argv[1])
