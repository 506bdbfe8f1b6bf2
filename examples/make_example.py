#!/usr/bin/python3
"""Create examples/example.h5, the small file the README and
contrib/quickstart.sh mount.  Deterministic: no timestamps, fixed data, so
running it again reproduces the committed file byte for byte.

    /usr/bin/python3 examples/make_example.py [OUTPUT]
"""
import os
import sys

import h5py
import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "example.h5")



def compact(group, name, data):
    """A dataset with compact layout (raw data inside the object header)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(group.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


with h5py.File(out, "w", libver="earliest", track_order=False) as f:
    f.attrs["title"] = "h5fs example file"
    f.attrs["version"] = np.int32(1)

    m = f.create_group("measurements")
    t = m.create_dataset("temperature", data=np.linspace(12.5, 24.0, 24, dtype="<f8"), track_times=False)
    t.attrs["units"] = "degC"
    m.create_dataset("counts", data=np.arange(6, dtype="<i4").reshape(2, 3), track_times=False)
    m.create_dataset("station", data=np.array([b"north", b"south", b"east"], dtype="S8"), track_times=False)

    img = f.create_group("images")
    yy, xx = np.mgrid[0:32, 0:32]
    img.create_dataset("gradient", data=((xx + yy) * 4).astype("u1"), chunks=(16, 16),
                       compression="gzip", compression_opts=6, track_times=False)
    img.create_dataset("small", data=np.arange(16, dtype="<u2"), track_times=False)

    meta = f.create_group("meta")
    compact(meta, "compact", np.arange(8, dtype="<i2"))
    # soft link: shown as a symlink into the mount
    f["latest"] = h5py.SoftLink("/measurements/temperature")
    # hard link: same object, same inode
    meta["temperature_again"] = t

print(out)
