#!/usr/bin/python3
"""Bash completion (contrib/h5fs.bash-completion, issue 57's first hour):
what Tab offers for h5fs, h5fs-ls and h5fs-find, run by bash with
Debian's bash-completion loaded (77 without it): options and -o values
of h5fs, h5fs-find's tests and their arguments (-type d|f|l, -dtype
names), h5fs-ls's members of a group of a real file.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

BC = "/usr/share/bash-completion/bash_completion"
SCRIPT = os.path.join(T.SRCDIR, "contrib", "h5fs.bash-completion")


def complete(words, func):
    """COMPREPLY of func for the command line words (the last one being
    completed)."""
    line = " ".join(words)
    script = ('source %s; source %s; COMP_WORDS=(%s); COMP_CWORD=%d; COMP_LINE=%s; COMP_POINT=%d; %s; '
              'printf "%%s\\n" "${COMPREPLY[@]}"' % (
                  BC, SCRIPT, " ".join("'%s'" % w for w in words), len(words) - 1, "'%s'" % line, len(line), func))
    env = dict(os.environ, PATH=T.BUILDDIR + ":" + os.environ.get("PATH", ""))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env,
                       cwd=T.BUILDDIR)
    return [w for w in r.stdout.splitlines() if w]


def expect(words, func, want, exact=False):
    got = complete(words, func)
    ok = sorted(got) == sorted(want) if exact else all(w in got for w in want)
    if not ok:
        T.fail("%s <Tab>: %s, expected %s%s" % (" ".join(words), got, "" if exact else "at least ", want))


def main():
    if not os.path.exists(BC) or not shutil.which("bash"):
        T.skip("bash-completion not installed")
    expect(["h5fs-find", "coll", "-ty"], "_h5fs_find", ["-type"], exact=True)
    expect(["h5fs-find", "coll", "-type", ""], "_h5fs_find", ["d", "f", "l"], exact=True)
    expect(["h5fs-find", "coll", "-dtype", "float8"], "_h5fs_find", ["float8_e4m3fn", "float8_e5m2"], exact=True)
    expect(["h5fs-find", "coll", "--no"], "_h5fs_find", ["--noindex"], exact=True)
    expect(["h5fs-find", "coll", "-"], "_h5fs_find", ["-name", "-path", "-attr", "-shape", "-ndim", "-print0",
                                                     "--json"])
    expect(["h5fs", "-o", "ro,cache_s"], "_h5fs", ["ro,cache_size="], exact=True)
    expect(["h5fs", "-o", "idle_c"], "_h5fs", ["idle_commit="], exact=True)
    expect(["h5fs-ls", "--js"], "_h5fs_ls", ["--json"], exact=True)
    # members of a real file's root, through h5fs-ls
    ex = os.path.join(T.SRCDIR, "examples", "example.h5")
    if os.path.exists(ex) and os.path.exists(os.path.join(T.BUILDDIR, "h5fs-ls")):
        expect(["h5fs-ls", ex, "/me"], "_h5fs_ls", ["/measurements/", "/meta/"], exact=True)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
