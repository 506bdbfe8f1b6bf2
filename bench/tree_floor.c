/* tree_floor: the fastest a FUSE file system can answer a walk of a given
 * tree on this machine (lookup, getattr, readdir, readlink, listxattr,
 * getxattr from memory, nothing else), for bench/collection_index_bench.py:
 * an indexed remount of h5fs answers the same requests, so h5fs / floor is
 * what h5fs costs beyond FUSE itself. Same libfuse loop as h5fs (multi-
 * threaded, 10 idle threads), same entry and attribute timeouts (3600 s),
 * plain readdir as h5fs's dispatcher.
 *
 *   tree_floor DUMP MNT       (foreground; fusermount3 -u MNT stops it)
 *
 * DUMP, one line per entry in walk order, parents first (the bench writes
 * it from a walk of the h5fs mount):
 *   path \t mode(octal) \t size \t nlink \t target-hex \t name=hex,name=hex...
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

int main(int argc, char **argv)
{
	if (argc != 3 || load(argv[1]) != 0) {
		fprintf(stderr, "usage: tree_floor DUMP MNT\n");
		return 2;
	}
	return floor_run(argv[0], &ops, "ro,default_permissions", argv[2], NULL);
}
