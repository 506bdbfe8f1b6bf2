#!/usr/bin/python3
"""mkdir's groups written into room taken ahead (write/gslot.c) and linked
by a batch committed without the batch's lock (behind/lbatch.c; issue 70
item 3), on an h5py-default file (symbol-table groups) and a
libver="latest" one (compact, then dense storage):

- crash states: bursts of mkdir in one group, with pauses that let the
  timer link some batches, then kill -9 (at once, or while the next
  batch's commit may be running); each time h5py opens FILE, the groups
  there are the first k made (batches linked in order, each whole or not
  at all: never a name without its group, never a gap), every one made
  before a pause among them, each an empty group whose header carries its
  own birth tag (the NIL "h5fT" message: distinct tags, so none was
  written twice or copied); FILE mounted again takes more mkdirs and an
  attribute in a group made before the kill, and h5py reads all of it;
- concurrency: 4 threads making groups in one group, one in another
  group (its batch commits the first's), one listing and one removing
  its own groups, for 4 s: every answered mkdir is a group after the
  unmount and every answered rmdir gone (the rmdir, which commits the
  pending names first, is not starved by the makers' names joining the
  batch while it commits); then 3 threads remove 300 groups beside a
  lister (removals joining a batch whose commit runs): none is left;
- space: after a burst of 300 mkdir and the unmount, FILE's unreferenced
  bytes (h5fs-ls --space) stay below 64 KiB: the slots not used are freed
  (gslot.h).
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402


def birthtags(path, names):
    """name -> the 4 tag bytes after "h5fT" in its header (None: none)."""
    out = {}
    with h5py.File(path, "r") as f, open(path, "rb") as raw:
        for n in names:
            addr = h5py.h5o.get_info(f[n].id).addr
            raw.seek(addr)
            hdr = raw.read(512)
            k = hdr.find(b"h5fT")
            out[n] = hdr[k + 4:k + 8] if k >= 0 else None
    return out


def crash_states(work, libver):
    path = os.path.join(work, "c-%s.h5" % libver)
    mnt = os.path.join(work, "mnt")
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
    # (burst sizes, pause after which burst: its groups must survive)
    # (the last: a kill from another thread 0.4 s into a stream of mkdir,
    # likely while a batch's commit runs beside the mkdirs)
    plans = [(300,), (120, 200), (40, 40, 300), (9, 1, 150), (60, 5000)]
    for t, plan in enumerate(plans):
        made, must = [], 0
        with T.Mount(path, mnt) as m:
            g = os.path.join(mnt, "g")
            killer = None
            for b, count in enumerate(plan):
                if b == 1 and count >= 1000:
                    killer = threading.Timer(0.4, lambda: m.proc.send_signal(signal.SIGKILL))
                    killer.start()
                for i in range(count):
                    name = "t%d_%04d" % (t, len(made))
                    try:
                        os.mkdir(os.path.join(g, name))
                    except OSError:
                        if killer is None:
                            raise
                        break   # the daemon is gone
                    made.append(name)
                if b < len(plan) - 1:
                    time.sleep(0.5)     # the timer links this burst
                    must = len(made)
            if killer:
                killer.join()
            else:
                m.proc.send_signal(signal.SIGKILL)
            m.proc.wait(timeout=10)
        try:
            with h5py.File(path, "r") as f:
                there = sorted(k for k in f["g"] if k.startswith("t%d_" % t))
                notgroup = [k for k in there if not isinstance(f["g"][k], h5py.Group) or len(f["g"][k])]
        except Exception as e:  # noqa: BLE001 - any failure to open is a crash-safety bug
            T.fail("%s plan %s: h5py cannot read FILE after kill -9: %s" % (libver, plan, e))
            return
        # (one more than answered: the mkdir the kill cut off before its
        # answer reached us)
        order = made + ["t%d_%04d" % (t, len(made))]
        if there != order[:len(there)]:
            T.fail("%s plan %s: after kill -9 the groups are not the first %d made: %s..." %
                   (libver, plan, len(there), [k for k in there if k not in order[:len(there)]][:5]))
        if len(there) < must:
            T.fail("%s plan %s: after kill -9, %d groups linked before the last pause, %d there" %
                   (libver, plan, must, len(there)))
        if notgroup:
            T.fail("%s plan %s: not empty groups after kill -9: %s" % (libver, plan, notgroup[:5]))
        tags = birthtags(path, ["g/" + k for k in there])
        untagged = [k for k, v in tags.items() if v is None]
        if untagged:
            T.fail("%s plan %s: groups without a birth tag: %s" % (libver, plan, untagged[:5]))
        vals = [v for v in tags.values() if v is not None]
        if len(set(vals)) != len(vals):
            T.fail("%s plan %s: %d groups share birth tags (%d distinct)" % (libver, plan, len(vals), len(set(vals))))
        print("%s plan %s: kill -9 left %d of %d groups (%d linked before the last pause), tags distinct"
              % (libver, plan, len(there), len(made), must))
        # FILE written again after the crash
        with T.Mount(path, mnt):
            g = os.path.join(mnt, "g")
            for i in range(30):
                os.mkdir(os.path.join(g, "after%d_%02d" % (t, i)))
            if there:
                os.setxattr(os.path.join(g, there[0]), "user.note", b"after kill")
        with h5py.File(path, "r") as f:
            if any(not isinstance(f["g"].get("after%d_%02d" % (t, i)), h5py.Group) for i in range(30)):
                T.fail("%s plan %s: groups made after the crash are missing" % (libver, plan))
            if there and f["g"][there[0]].attrs.get("note") not in (b"after kill", "after kill"):
                T.fail("%s plan %s: the attribute set after the crash: %r" %
                       (libver, plan, f["g"][there[0]].attrs.get("note")))


def rm_third(mnt, k, errors):
    for i in range(k, 300, 3):
        try:
            os.rmdir(os.path.join(mnt, "h", "r%03d" % i))
        except OSError as e:
            errors.append("rmdir h/r%03d: %s" % (i, e))


def concurrency(work, libver):
    path = os.path.join(work, "p-%s.h5" % libver)
    mnt = os.path.join(work, "mnt")
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
        f.create_group("h")
    stop = time.monotonic() + 4
    answered = {}
    removed = set()
    errors = []

    def maker(tag, grp):
        names = answered.setdefault(tag, [])
        i = 0
        while time.monotonic() < stop:
            name = "%s%05d" % (tag, i)
            try:
                os.mkdir(os.path.join(mnt, grp, name))
                names.append((grp, name))
            except OSError as e:
                errors.append("mkdir %s/%s: %s" % (grp, name, e))
            i += 1

    def remover():
        i = 0
        while time.monotonic() < stop:
            name = "rm%05d" % i
            try:
                os.mkdir(os.path.join(mnt, "g", name))
                os.rmdir(os.path.join(mnt, "g", name))
                removed.add(name)
            except OSError as e:
                errors.append("mkdir/rmdir g/%s: %s" % (name, e))
            i += 1

    def lister():
        while time.monotonic() < stop:
            try:
                os.listdir(os.path.join(mnt, "g"))
            except OSError as e:
                errors.append("listdir: %s" % e)

    with T.Mount(path, mnt) as m:
        ts = [threading.Thread(target=maker, args=("m%d_" % k, "g")) for k in range(4)]
        ts += [threading.Thread(target=maker, args=("o_", "h")), threading.Thread(target=remover),
               threading.Thread(target=lister)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        # removals joining a batch whose commit runs without its lock:
        # three threads rmdir their thirds of 300 groups beside a lister
        for i in range(300):
            os.mkdir(os.path.join(mnt, "h", "r%03d" % i))
        os.listdir(os.path.join(mnt, "h"))      # (linked)
        rts = [threading.Thread(target=rm_third, args=(mnt, k, errors)) for k in range(3)]
        lt = threading.Thread(target=lister)
        stop = time.monotonic() + 30
        for th in rts + [lt]:
            th.start()
        for th in rts:
            th.join()
        stop = 0
        lt.join()
    if m.returncode not in (0, None):
        T.fail("%s concurrency: the unmount exits %s: %s" % (libver, m.returncode, m.output()[-500:]))
    if errors:
        T.fail("%s concurrency: %d calls failed, first %s" % (libver, len(errors), errors[:3]))
    total = sum(len(v) for v in answered.values())
    with h5py.File(path, "r") as f:
        left = [k for k in f["h"] if k.startswith("r")]
        if left:
            T.fail("%s concurrency: %d of 300 groups removed by 3 threads are there: %s" % (libver, len(left), left[:5]))
        missing = [(gr, n) for v in answered.values() for gr, n in v
                   if not isinstance(f[gr].get(n), h5py.Group)]
        back = [n for n in removed if n in f["g"]]
    if missing:
        T.fail("%s concurrency: %d answered mkdirs missing after the unmount: %s" % (libver, len(missing), missing[:5]))
    if back:
        T.fail("%s concurrency: answered rmdirs back after the unmount: %s" % (libver, back[:5]))
    if len(removed) < 5:        # (starved: 1-2 beside 25,000 mkdir; TSan: 14)
        T.fail("%s concurrency: %d mkdir+rmdir in 4 s beside the makers (starved)" % (libver, len(removed)))
    print("%s concurrency: %d mkdir and %d mkdir+rmdir answered, all in FILE" % (libver, total, len(removed)))


def unreferenced(path):
    out = subprocess.run([T.H5FS_LS, "--space", path], capture_output=True, text=True, timeout=60).stdout
    for ln in out.splitlines():
        if ln.strip().startswith("unreferenced:"):
            return int(ln.split()[1])
    T.fail("h5fs-ls --space %s: no unreferenced line: %s" % (path, out[-300:]))
    return 0


def space(work, libver):
    """Slots taken and not used come back: after a burst of 300 mkdir and
    the unmount, FILE's unreferenced bytes stay below 64 KiB (main: 13-20
    KB; slots each placed by h5_space_take_page at the end left 400 KB,
    a page per slot)."""
    path = os.path.join(work, "s-%s.h5" % libver)
    mnt = os.path.join(work, "mnt")
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
    with T.Mount(path, mnt):
        for i in range(300):
            os.mkdir(os.path.join(mnt, "g", "s%03d" % i))
    u = unreferenced(path)
    if u > (64 << 10):
        T.fail("%s space: %d bytes unreferenced after 300 mkdir (FILE %d bytes)" % (libver, u, os.path.getsize(path)))
    print("%s space: 300 mkdir, FILE %d bytes, %d unreferenced" % (libver, os.path.getsize(path), u))


def main():
    work = T.workdir("mkdir_slots")
    for libver in ("earliest", "latest"):
        crash_states(work, libver)
        concurrency(work, libver)
        space(work, libver)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
