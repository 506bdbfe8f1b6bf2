/* tree_floor: the fastest a FUSE file system can answer a walk of a given
 * tree on this machine (lookup, getattr, readdir, readlink, listxattr,
 * getxattr from memory, nothing else), for bench/collection_index_bench.py:
 * an indexed remount of h5fs answers the same requests, so h5fs / floor is
 * what h5fs costs beyond FUSE itself. Same libfuse loop as h5fs (multi-
 * threaded, 10 idle threads), same entry and attribute timeouts (3600 s),
 * plain readdir (what collection_index_bench.py has compared since).
 *
 *   tree_floor DUMP MNT       (foreground; fusermount3 -u MNT stops it)
 *   tree_floor --synth N MNT  (the same, a synthetic tree: below)
 *   tree_floor --rw ...       (either, mounted read-write: h5fs's -o rw)
 *
 * DUMP, one line per entry in walk order, parents first (the bench writes
 * it from a walk of the h5fs mount):
 *   path \t mode(octal) \t size \t nlink \t target-hex \t name=hex,name=hex...
 *
 * --synth N (issue 64, bench/scale_bench.py --floor): make_many's tree of N
 * objects without a dump or any memory per object: ceil(N/1000) directories
 * g000000... of 1,000 files d000... (the last one the rest), 4-byte files,
 * each name's entry and stat computed from its inode number. Answered as
 * h5fs answers a single FILE's `-o ro` mount: directories opened with
 * keep_cache and cache_readdir, READDIRPLUS (libfuse enables it, adaptive,
 * when the op is there: dispatch_tree.c op_readdirplus) and plain READDIR,
 * entries and attributes kept 3600 s; getxattr of any name ENODATA (the
 * floor of ls -l's two xattr misses a name), listxattr empty.
 * Built by the bench: cc -O2 tree_floor.c floor_common.c $(pkg-config --cflags --libs fuse3)
 */
#include "floor_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct xa {
	char *name;
	char *val;
	size_t len;
};

struct node {
	char *name;
	size_t parent;
	mode_t mode;
	off_t size;
	nlink_t nlink;
	char *target;
	struct xa *x;
	size_t nx;
	size_t *kids, nkids, kcap;
	char *xnames;           /* listxattr answer */
	size_t xnames_len;
};

static struct node *nodes;
static size_t nn, ncap;

static char *unhex(const char *h, size_t *len)
{
	size_t n = strlen(h) / 2;
	char *p = malloc(n + 1);

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		sscanf(h + 2 * i, "%2x", &v);
		p[i] = (char)v;
	}
	p[n] = 0;
	*len = n;
	return p;
}

static size_t add(size_t parent, const char *name)
{
	struct node *p;

	if (nn == ncap) {
		ncap = ncap ? ncap * 2 : 1024;
		nodes = realloc(nodes, ncap * sizeof(*nodes));
	}
	memset(&nodes[nn], 0, sizeof(nodes[nn]));
	nodes[nn].name = strdup(name);
	nodes[nn].parent = parent;
	if (nn) {
		p = &nodes[parent];
		if (p->nkids == p->kcap) {
			p->kcap = p->kcap ? p->kcap * 2 : 8;
			p->kids = realloc(p->kids, p->kcap * sizeof(size_t));
		}
		p->kids[p->nkids++] = nn;
	}
	return nn++;
}

/* path -> node index: a linear search of the parent's children (the dump
 * is read once, before mounting) */
static size_t find_path(char *path)
{
	size_t cur = 0;
	char *save = NULL;

	for (char *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		size_t i;

		for (i = 0; i < nodes[cur].nkids && strcmp(nodes[nodes[cur].kids[i]].name, c) != 0; i++)
			;
		if (i == nodes[cur].nkids)
			return (size_t)-1;
		cur = nodes[cur].kids[i];
	}
	return cur;
}

static int load(const char *dump)
{
	FILE *f = fopen(dump, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -1;
	add(0, "");
	nodes[0].mode = S_IFDIR | 0555;
	nodes[0].nlink = 2;
	while (getline(&line, &cap, f) > 0) {
		char *fld[6] = { 0 }, *save = NULL, *slash, *dir;
		size_t p, k, n;
		int i = 0;

		line[strcspn(line, "\n")] = 0;
		for (char *s = line; i < 6; i++) {
			fld[i] = s;
			s = strchr(s, '\t');
			if (!s)
				break;
			*s++ = 0;
		}
		slash = strrchr(fld[0], '/');
		dir = strdup(fld[0]);
		if (slash) {
			dir[slash - fld[0]] = 0;
			p = find_path(dir);
		} else {
			p = 0;
		}
		free(dir);
		if (p == (size_t)-1)
			continue;
		k = add(p, slash ? slash + 1 : fld[0]);
		nodes[k].mode = (mode_t)strtoul(fld[1], NULL, 8);
		nodes[k].size = fld[2] ? strtoll(fld[2], NULL, 10) : 0;
		nodes[k].nlink = fld[3] ? strtoul(fld[3], NULL, 10) : 1;
		if (fld[4] && *fld[4])
			nodes[k].target = unhex(fld[4], &n);
		if (fld[5] && *fld[5]) {
			for (char *x = strtok_r(fld[5], ",", &save); x; x = strtok_r(NULL, ",", &save)) {
				char *eq = strchr(x, '=');
				struct node *nd = &nodes[k];

				if (!eq)
					continue;
				*eq = 0;
				nd->x = realloc(nd->x, (nd->nx + 1) * sizeof(*nd->x));
				nd->x[nd->nx].name = unhex(x, &n);
				nd->x[nd->nx].val = unhex(eq + 1, &nd->x[nd->nx].len);
				nd->xnames = realloc(nd->xnames, nd->xnames_len + n + 1);
				memcpy(nd->xnames + nd->xnames_len, nd->x[nd->nx].name, n + 1);
				nd->xnames_len += n + 1;
				nd->nx++;
			}
		}
	}
	free(line);
	fclose(f);
	return 0;
}

/* node index k is inode k + 1 */
static void stat_of(size_t k, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = k + 1;
	st->st_mode = nodes[k].mode;
	st->st_size = nodes[k].size;
	st->st_nlink = nodes[k].nlink;
	st->st_blksize = 131072;
}

static struct node *node_of(fuse_ino_t ino)
{
	return ino >= 1 && ino <= nn ? &nodes[ino - 1] : NULL;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_of(parent);
	struct fuse_entry_param e;

	if (!p) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	for (size_t i = 0; i < p->nkids; i++)
		if (strcmp(nodes[p->kids[i]].name, name) == 0) {
			memset(&e, 0, sizeof(e));
			e.ino = p->kids[i] + 1;
			e.attr_timeout = e.entry_timeout = 3600.0;
			stat_of(p->kids[i], &e.attr);
			fuse_reply_entry(req, &e);
			return;
		}
	fuse_reply_err(req, ENOENT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (!node_of(ino)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	stat_of(ino - 1, &st);
	fuse_reply_attr(req, &st, 3600.0);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(ino);

	if (n && n->target)
		fuse_reply_readlink(req, n->target);
	else
		fuse_reply_err(req, EINVAL);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	char *buf;
	size_t used = 0;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	buf = malloc(size);
	for (size_t i = (size_t)off; i < n->nkids + 2; i++) {
		struct stat st;
		const char *name = i == 0 ? "." : i == 1 ? ".." : nodes[n->kids[i - 2]].name;
		size_t k;

		memset(&st, 0, sizeof(st));
		if (i >= 2) {
			stat_of(n->kids[i - 2], &st);
		} else {
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
		}
		k = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)i + 1);
		if (k > size - used)
			break;
		used += k;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct node *n = node_of(ino);

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	floor_reply_xattr(req, n->xnames, n->xnames_len, size);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct node *n = node_of(ino);

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	for (size_t i = 0; i < n->nx; i++)
		if (strcmp(n->x[i].name, name) == 0) {
			floor_reply_xattr(req, n->x[i].val, n->x[i].len, size);
			return;
		}
	fuse_reply_err(req, ENODATA);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.readdir = op_readdir,
	.listxattr = op_listxattr,
	.getxattr = op_getxattr,
};

/* ---- --synth N: make_many's tree, computed ------------------------------ */

#define SYN_PER 1000ULL
#define SYN_TIMEOUT 3600.0

static unsigned long long syn_n, syn_groups;

/* inodes: 1 the root; group g is 2 + g * 1001, its file j the next j + 1 */
static fuse_ino_t syn_ino(unsigned long long g, long long j)
{
	return 2 + g * (SYN_PER + 1) + (fuse_ino_t)(j + 1);
}

/* ino -> group and file (j -1: the group itself); false: no such object */
static int syn_of(fuse_ino_t ino, unsigned long long *g, long long *j)
{
	unsigned long long x;

	if (ino < 2)
		return 0;
	x = ino - 2;
	*g = x / (SYN_PER + 1);
	*j = (long long)(x % (SYN_PER + 1)) - 1;
	return *g < syn_groups && (*j < 0 || *g * SYN_PER + (unsigned long long)*j < syn_n);
}

static unsigned long long syn_kids(fuse_ino_t ino)
{
	unsigned long long g;
	long long j;

	if (ino == FUSE_ROOT_ID)
		return syn_groups;
	if (!syn_of(ino, &g, &j) || j >= 0)
		return 0;
	return g + 1 < syn_groups || syn_n % SYN_PER == 0 ? SYN_PER : syn_n % SYN_PER;
}

static void syn_stat(fuse_ino_t ino, struct stat *st)
{
	unsigned long long g;
	long long j;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = 131072;
	if (ino == FUSE_ROOT_ID || (syn_of(ino, &g, &j) && j < 0)) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = 4;
		st->st_blocks = 1;
	}
}

/* child k of directory ino: its inode and name */
static fuse_ino_t syn_child(fuse_ino_t ino, unsigned long long k, char *name, size_t cap)
{
	unsigned long long g = 0;
	long long j = 0;

	if (ino == FUSE_ROOT_ID) {
		snprintf(name, cap, "g%06llu", k);
		return syn_ino(k, -1);
	}
	syn_of(ino, &g, &j);
	snprintf(name, cap, "d%03llu", k);
	return syn_ino(g, (long long)k);
}

/* name -> child index (the names make_many writes, nothing else) */
static int syn_index(fuse_ino_t parent, const char *name, unsigned long long *k)
{
	char c = parent == FUSE_ROOT_ID ? 'g' : 'd';
	size_t digits = parent == FUSE_ROOT_ID ? 6 : 3;
	char *end;

	if (name[0] != c || strlen(name) != digits + 1)
		return 0;
	*k = strtoull(name + 1, &end, 10);
	return *end == 0 && *k < syn_kids(parent);
}

static void syn_entry(struct fuse_entry_param *e, fuse_ino_t ino)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = e->entry_timeout = SYN_TIMEOUT;
	syn_stat(ino, &e->attr);
}

static void syn_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	unsigned long long k;
	char nm[32];

	if (!syn_index(parent, name, &k)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	syn_entry(&e, syn_child(parent, k, nm, sizeof(nm)));
	fuse_reply_entry(req, &e);
}

static void syn_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	unsigned long long g;
	long long j;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && !syn_of(ino, &g, &j)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	syn_stat(ino, &st);
	fuse_reply_attr(req, &st, SYN_TIMEOUT);
}

/* as h5fs's member_opendir on a FILE that is not live */
static void syn_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

/* READDIR and READDIRPLUS (plus: each entry with its lookup, as h5fs's
 * op_readdirplus; "." and ".." without) */
static void syn_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	unsigned long long n = syn_kids(ino);
	char *buf = malloc(size ? size : 1);
	size_t used = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (unsigned long long i = off < 0 ? 0 : (unsigned long long)off; i < n + 2; i++) {
		struct fuse_entry_param e;
		char nm[32];
		size_t k;

		memset(&e, 0, sizeof(e));
		if (i < 2) {
			snprintf(nm, sizeof(nm), "%s", i == 0 ? "." : "..");
			e.attr.st_ino = i == 0 ? ino : FUSE_ROOT_ID;
			e.attr.st_mode = S_IFDIR;
		} else {
			syn_entry(&e, syn_child(ino, i - 2, nm, sizeof(nm)));
		}
		if (plus) {
			k = fuse_add_direntry_plus(req, buf + used, size - used, nm, &e, (off_t)i + 1);
		} else {
			e.attr.st_ino = e.ino ? e.ino : e.attr.st_ino;
			k = fuse_add_direntry(req, buf + used, size - used, nm, &e.attr, (off_t)i + 1);
		}
		if (k > size - used)
			break;
		used += k;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void syn_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	syn_list(req, ino, size, off, 0);
}

static void syn_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	syn_list(req, ino, size, off, 1);
}

/* no names: as an h5fs object without one (ENODATA, which the kernel
 * does not remember: ls -l asks each name's security.selinux and
 * system.posix_acl_access every time) */
static void syn_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void syn_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	floor_reply_xattr(req, "", 0, size);
}

static const struct fuse_lowlevel_ops syn_ops = {
	.lookup = syn_lookup,
	.getattr = syn_getattr,
	.opendir = syn_opendir,
	.readdir = syn_readdir,
	.readdirplus = syn_readdirplus,
	.getxattr = syn_getxattr,
	.listxattr = syn_listxattr,
};

int main(int argc, char **argv)
{
	/* --rw: mounted read-write, the floor of h5fs's -o rw (the kernel
	 * marks a directory's atime stale after each readdir it sends on a
	 * writable mount, so the next stat of it is a GETATTR: fuse's
	 * fuse_invalidate_atime) */
	const char *opts = "ro,default_permissions";

	if (argc > 1 && strcmp(argv[1], "--rw") == 0) {
		opts = "rw,default_permissions";
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	if (argc == 4 && strcmp(argv[1], "--synth") == 0) {
		syn_n = strtoull(argv[2], NULL, 10);
		syn_groups = (syn_n + SYN_PER - 1) / SYN_PER;
		return floor_run(argv[0], &syn_ops, opts, argv[3], NULL);
	}
	if (argc != 3 || load(argv[1]) != 0) {
		fprintf(stderr, "usage: tree_floor [--rw] DUMP MNT | tree_floor [--rw] --synth N MNT\n");
		return 2;
	}
	return floor_run(argv[0], &ops, opts, argv[2], NULL);
}
