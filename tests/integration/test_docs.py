#!/usr/bin/python3
"""The documentation matches the programs:
- doc/h5fs.1, doc/h5fs-ls.1 and doc/h5fs-find.1 format without warnings
  (man --warnings; skipped when man is not installed);
- every option in the OPTIONS section of a man page is in the program's
  --help, and every option --help lists is in the man page;
- the exit statuses of the man page's EXIT STATUS section are the ones
  --help lists;
- the bash completion parses and offers every -o option --help lists;
- h5fs.1 names every filter of the engine's table (filter.c's
  filter_classes, each class's name and id) as "name (id", and no filter
  it lists as not decoded is in that table;
- README's option list holds every option of h5fs --help (but libfuse's
  generic ones), and every doc/*.md README cites is installed.
No mount is needed."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

fails = []


def man_sections(path):
    """{section name: [lines]} of a man page source."""
    out, cur = {}, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def roff_text(line):
    """A roff header line as plain text: macros, quotes, font escapes gone."""
    line = re.sub(r"^\.(B|I|BR|BI|IB|RB|IR|RI)\s+", "", line)
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\-", "-").replace("\\&", "").replace('"', "")
    return line


def option_keys(text):
    """Option names in a header such as "-d, -o debug", "-o uid=N",
    "-o xattr=text | raw", "-h, --help": {"-d", "-o debug", "-o uid",
    "-o xattr", "-h", "--help"}. Placeholders (-o OPT) are left out."""
    keys = set()
    toks = text.replace(",", " ").split()
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "-o" and i + 1 < len(toks):
            name = re.split(r"[=\[]", toks[i + 1])[0]
            if name and not name.isupper():
                keys.add("-o " + name)
            i += 2
            continue
        if re.fullmatch(r"--?[A-Za-z][A-Za-z0-9-]*", t):
            keys.add(t)
        i += 1
    return keys


def man_options(path):
    secs = man_sections(path)
    # h5fs-find's tests are options of its command line too
    lines = secs.get("OPTIONS", []) + secs.get("TESTS", [])
    keys = set()
    for i, line in enumerate(lines):
        if line.strip() == ".TP" and i + 1 < len(lines):
            keys |= option_keys(roff_text(lines[i + 1]))
    return keys, secs


def help_options(prog):
    r = subprocess.run([prog, "--help"], capture_output=True, timeout=20)
    if r.returncode != 0:
        fails.append("%s --help: exit %d" % (prog, r.returncode))
    text = r.stdout.decode("utf-8", "replace")
    keys = set()
    for line in text.splitlines():
        m = re.match(r"^\s{2,}(-\S.*?)(\s{2,}|$)", line)
        if m:
            keys |= option_keys(m.group(1))
    return keys, text


def exit_codes_in_man(secs):
    codes = set()
    lines = secs.get("EXIT STATUS", [])
    for i, line in enumerate(lines):
        if line.strip() == ".TP" and i + 1 < len(lines):
            m = re.match(r"^\.B\s+(\d+)\s*$", lines[i + 1])
            if m:
                codes.add(int(m.group(1)))
    return codes


def check_page(page, prog):
    keys_man, secs = man_options(page)
    keys_help, help_text = help_options(prog)
    name = os.path.basename(page)
    if not keys_man:
        fails.append("%s: no options found in OPTIONS" % name)
    for k in sorted(keys_man - keys_help):
        fails.append("%s lists %s, %s --help does not" % (name, k, os.path.basename(prog)))
    for k in sorted(keys_help - keys_man):
        fails.append("%s --help lists %s, %s does not" % (os.path.basename(prog), k, name))
    codes = exit_codes_in_man(secs)
    m = re.search(r"Exit status:(.*)", help_text, re.S)
    help_codes = {int(c) for c in re.findall(r"(?<![\w.])(\d)(?= [a-zA-Z])", m.group(1))} if m else set()
    if not codes:
        fails.append("%s: EXIT STATUS lists no codes" % name)
    elif help_codes and help_codes != codes:
        fails.append("%s: exit statuses %s, --help says %s" % (name, sorted(codes), sorted(help_codes)))
    print("ok   %s: %d options, exit statuses %s" % (name, len(keys_man), sorted(codes)))
    return keys_help


def check_man_warnings(page):
    if not shutil.which("man"):
        print("skip man --warnings %s: man not installed" % page)
        return
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, timeout=60, env=env)
    err = r.stderr.decode("utf-8", "replace").strip()
    if r.returncode != 0 or err:
        fails.append("man --warnings -l %s: exit %d: %s" % (page, r.returncode, err[:1000]))
    else:
        print("ok   man --warnings -l %s" % os.path.basename(page))


def check_completion(h5fs_keys):
    comp = os.path.join(T.SRCDIR, "contrib", "h5fs.bash-completion")
    if not shutil.which("bash"):
        print("skip bash completion: no bash")
        return
    r = subprocess.run(["bash", "-n", comp], capture_output=True, timeout=20)
    if r.returncode != 0:
        fails.append("bash -n %s: %s" % (comp, r.stderr.decode()[:500]))
        return
    # run the completion function with stand-ins for bash-completion's helpers
    script = r'''
_init_completion() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]};
  words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
_filedir() { COMPREPLY=("FILEDIR:$1"); }
compopt() { :; }
source "$1"
COMP_WORDS=(h5fs -o ""); COMP_CWORD=2; COMPREPLY=(); _h5fs; echo "${COMPREPLY[*]}"
COMP_WORDS=(h5fs ""); COMP_CWORD=1; COMPREPLY=(); _h5fs; echo "${COMPREPLY[*]}"
COMP_WORDS=(h5fs f.h5 ""); COMP_CWORD=2; COMPREPLY=(); _h5fs; echo "${COMPREPLY[*]}"
'''
    r = subprocess.run(["bash", "-c", script, "bash", comp], capture_output=True, timeout=20)
    out = r.stdout.decode().splitlines()
    if r.returncode != 0 or len(out) != 3:
        fails.append("bash completion did not run: %s" % r.stderr.decode()[:500])
        return
    offered = {w.split("=")[0] for w in out[0].split()}
    for k in sorted(h5fs_keys):
        if k.startswith("-o ") and k[3:] not in offered:
            fails.append("bash completion does not offer -o %s" % k[3:])
    if "FILEDIR:@(" not in out[1] or out[2] != "FILEDIR:-d":
        fails.append("bash completion: FILE/MOUNTPOINT completion wrong: %r" % out[1:])
    print("ok   bash completion offers %d -o options" % len(offered))


def check_filters(page):
    """The filters of filter.c's table against h5fs.1 (MAPPING names the
    built-in ones with their ids, LIMITATIONS the registered ones not
    decoded)."""
    core = os.path.join(T.SRCDIR, "src", "h5core")
    with open(os.path.join(core, "filter", "filter.h")) as fh:
        ids = {m.group(1): int(m.group(2)) for m in re.finditer(r"(H5_FILTER_[A-Z0-9]+) = (\d+)", fh.read())}
    with open(os.path.join(core, "filter", "filter.c")) as fh:
        table = re.search(r"filter_classes\[\] = \{(.*?)\};", fh.read(), re.S).group(1)
    built = {}
    for cls in re.findall(r"&h5_filter_(\w+)", table):
        with open(os.path.join(core, "filter", "filter_%s.c" % cls)) as fh:
            src = fh.read()
        m = re.search(r"\.id = (H5_FILTER_\w+),\s*\.name = \"([^\"]+)\"", src)
        if not m or m.group(1) not in ids:
            fails.append("filter_%s.c: no .id/.name found" % cls)
            continue
        built[ids[m.group(1)]] = m.group(2)
    if len(built) < 14:
        fails.append("filter table: only %d classes found" % len(built))
    with open(page) as fh:
        text = " ".join(roff_text(ln) for ln in fh)
    text = re.sub(r"\s+", " ", text)
    for fid, name in sorted(built.items()):
        if "%s (%d" % (name, fid) not in text:
            fails.append("h5fs.1 does not name filter %s as \"%s (%d\"" % (name, name, fid))
    m = re.search(r"registered with The HDF Group these are not decoded(.*?)\. ?(?:\.IP|$)", text)
    if not m:
        fails.append("h5fs.1: no list of registered filters not decoded")
        return
    for fid in re.findall(r"\((\d+)", m.group(1)):
        if int(fid) in built:
            fails.append("h5fs.1 lists filter %s as not decoded, but it is built in" % fid)


# libfuse's own options, which --help lists and README leaves to man h5fs
FUSE_GENERIC = {"-o allow_root", "-o auto_unmount", "-o clone_fd", "-o default_permissions",
                "-o max_idle_threads"}


def check_readme(prog):
    """README's list of h5fs's options holds every option of h5fs --help
    (but libfuse's generic ones), and every doc/*.md README cites is
    installed (Makefile.am's dist_doc_DATA)."""
    readme = open(os.path.join(T.SRCDIR, "README"), encoding="utf-8").read()
    head = "Options of h5fs (h5fs --help, man h5fs):"
    if head not in readme:
        fails.append("README: no \"%s\" section" % head)
        return
    sec = readme[readme.index(head):]
    sec = sec[:sec.index("\n\n\n")] if "\n\n\n" in sec else sec
    listed = set()
    for line in sec.splitlines():
        m = re.match(r"^\s{2,}(-\S.*?)(\s{2,}|$)", line)
        if m:
            listed |= option_keys(m.group(1))
            # "-o uid=N, gid=N": one -o for both
            listed |= {"-o " + n for n in re.findall(r",\s*([a-z_]+)=", m.group(1))}
    keys, _ = help_options(prog)
    missing = sorted(keys - listed - FUSE_GENERIC)
    if missing:
        fails.append("README's option list lacks %s (h5fs --help has them)" % ", ".join(missing))
    else:
        print("ok   README lists every option of h5fs --help (%d)" % len(keys - FUSE_GENERIC))
    am = open(os.path.join(T.SRCDIR, "Makefile.am"), encoding="utf-8").read()
    m = re.search(r"^dist_doc_DATA\s*=\s*(.*)$", am, re.M)
    installed = set(m.group(1).split()) if m else set()
    cited = sorted(set(re.findall(r"\bdoc/[A-Z]+\.md\b", readme)))
    lacking = [d for d in cited if d not in installed]
    if lacking:
        fails.append("README cites %s, not installed (Makefile.am dist_doc_DATA)" % ", ".join(lacking))
    else:
        print("ok   README's docs are installed: %s" % ", ".join(cited))


def main():
    for p in (T.H5FS, T.H5FS_LS):
        if not os.path.exists(p):
            T.skip("%s not built" % p)
    pages = [(os.path.join(T.SRCDIR, "doc", "h5fs.1"), T.H5FS),
             (os.path.join(T.SRCDIR, "doc", "h5fs-ls.1"), T.H5FS_LS)]
    find = os.path.join(T.BUILDDIR, "h5fs-find")
    if os.path.exists(find):
        pages.append((os.path.join(T.SRCDIR, "doc", "h5fs-find.1"), find))
    h5fs_keys = set()
    for page, prog in pages:
        check_man_warnings(page)
        keys = check_page(page, prog)
        if prog == T.H5FS:
            h5fs_keys = keys
    check_completion(h5fs_keys)
    check_filters(pages[0][0])
    check_readme(T.H5FS)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
