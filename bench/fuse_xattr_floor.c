/* fuse_xattr_floor: the fastest a FUSE file system can take `getfattr -R -d`
 * on this machine, for the xattr walk benchmark (bench/xattr_bench.py,
 * bench/README.md "xattr walk floor"). It loads a tree - names, modes,
 * sizes, link counts, xattr names and values - from a dump written by
 * xattr_bench.py (a walk of an h5fs mount of the same FILE, so every stat
 * field and xattr is what h5fs shows) and answers lookup, getattr,
 * opendir/readdir, readlink, listxattr and getxattr from memory, set up
 * as h5fs is: the same multithreaded low-level loop (10 idle threads, one
 * /dev/fuse descriptor), default_permissions, max_read, max_write, entry
 * and attribute timeouts of TIMEOUT seconds (h5fs's -o refresh, 1 by
 * default), plain readdir (h5fs has no readdirplus), directory snapshots
 * kept by the kernel only when TIMEOUT is long (h5fs: frozen mounts).
 * Whatever h5fs does per request costs on top of this.
 *
 *   fuse_xattr_floor DUMP MNT [TIMEOUT]     (foreground; fusermount3 -u MNT)
 *
 * The dump, one record per line, parents before children, fields separated
 * by one space, names and values in hex (any byte):
 *   E parent type mode size nlink name target   (type d, f or l; the root
 *                                                is the first E, parent 0)
 *   X name value                                (an xattr of the last E)
 * Inode numbers are the record's position, the root's 1.
 *
 * Built by bench/xattr_bench.py: cc -O2 fuse_xattr_floor.c $(pkg-config
 * --cflags --libs fuse3)
 */
#include "floor_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct xat {
	char *name;
	char *val;
	size_t vlen;
};

struct fnode {
	uint64_t parent;
	char *name, *target;
	mode_t mode;
	off_t size;
	nlink_t nlink;
	struct xat *x;
	size_t nx;
	char *xlist;            /* the NUL-separated names, as listxattr answers */
	size_t xlist_len;
	uint64_t *kids;         /* directories: children in dump order */
	size_t nkids, kids_cap;
};

static struct fnode *nodes;     /* [0] unused: ino = index */
static size_t nnodes;
static uint64_t *table;         /* (parent, name) -> ino, open addressing */
static size_t table_cap;
static double timeout = 1.0;
static uid_t uid;
static gid_t gid;

static uint64_t hash_of(uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ULL;
	return h;
}

static uint64_t find(uint64_t parent, const char *name)
{
	for (size_t i = hash_of(parent, name) & (table_cap - 1);; i = (i + 1) & (table_cap - 1)) {
		uint64_t ino = table[i];

		if (!ino)
			return 0;
		if (nodes[ino].parent == parent && strcmp(nodes[ino].name, name) == 0)
			return ino;
	}
}

static char *unhex(const char *s, size_t *len)
{
	size_t n = strlen(s) / 2;
	char *out = malloc(n + 1);

	for (size_t i = 0; out && i < n; i++) {
		unsigned v;

		sscanf(s + 2 * i, "%2x", &v);
		out[i] = (char)v;
	}
	if (out)
		out[n] = '\0';
	if (len)
		*len = n;
	return out;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	if (*cap < need)
		*cap = need;
	p = realloc(p, *cap * elem);
	if (!p) {
		perror("fuse_xattr_floor");
		exit(1);
	}
	return p;
}

static int load(const char *path)
{
	FILE *fp = fopen(path, "r");
	size_t cap = 0, linecap = 0;
	char *line = NULL;

	if (!fp) {
		perror(path);
		return -1;
	}
	nnodes = 1;
	while (getline(&line, &linecap, fp) > 0) {
		char a[8], *f1 = malloc(strlen(line)), *f2 = malloc(strlen(line));
		unsigned long long parent, size, nlink;
		unsigned mode;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'E' && sscanf(line, "E %llu %7s %o %llu %llu %s %s", &parent, a, &mode, &size, &nlink,
					     f1, f2) == 7) {
			struct fnode *n;

			nodes = grow(nodes, &cap, nnodes + 1, sizeof(*nodes));
			n = &nodes[nnodes];
			memset(n, 0, sizeof(*n));
			n->parent = parent;
			n->mode = (mode_t)mode;
			n->size = (off_t)size;
			n->nlink = (nlink_t)nlink;
			n->name = unhex(strcmp(f1, "-") ? f1 : "", NULL);
			n->target = strcmp(f2, "-") ? unhex(f2, NULL) : NULL;
			if (parent) {
				struct fnode *p = &nodes[parent];

				p->kids = grow(p->kids, &p->kids_cap, p->nkids + 1, sizeof(*p->kids));
				p->kids[p->nkids++] = nnodes;
			}
			nnodes++;
		} else if (line[0] == 'X' && nnodes > 1 && sscanf(line, "X %s %s", f1, f2) >= 1) {
			struct fnode *n = &nodes[nnodes - 1];
			struct xat *x;
			size_t nl;

			n->x = realloc(n->x, (n->nx + 1) * sizeof(*n->x));
			x = &n->x[n->nx++];
			x->name = unhex(f1, &nl);
			x->val = unhex(strcmp(f2, "-") ? f2 : "", &x->vlen);
			n->xlist = realloc(n->xlist, n->xlist_len + nl + 1);
			memcpy(n->xlist + n->xlist_len, x->name, nl + 1);
			n->xlist_len += nl + 1;
		} else if (line[0]) {
			fprintf(stderr, "%s: bad line: %.80s\n", path, line);
			return -1;
		}
		free(f1);
		free(f2);
	}
	free(line);
	fclose(fp);
	if (nnodes < 2) {
		fprintf(stderr, "%s: no root record\n", path);
		return -1;
	}
	for (table_cap = 16; table_cap < nnodes * 2; table_cap *= 2)
		;
	table = calloc(table_cap, sizeof(*table));
	for (uint64_t ino = 2; ino < nnodes; ino++) {
		size_t i = hash_of(nodes[ino].parent, nodes[ino].name) & (table_cap - 1);

		while (table[i])
			i = (i + 1) & (table_cap - 1);
		table[i] = ino;
	}
	return 0;
}

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	const struct fnode *n = &nodes[ino];

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_size = n->size;
	st->st_uid = uid;
	st->st_gid = gid;
	st->st_blksize = 131072;
	st->st_blocks = (n->size + 511) / 512;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = 1U << 20;
	conn->max_read = 1024000;     /* libfuse wants -o max_read repeated */
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	uint64_t ino = find(parent, name);

	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	fill_stat(ino, &e.attr);
	e.attr_timeout = timeout;
	e.entry_timeout = timeout;
	fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static int bad_ino(fuse_ino_t ino)
{
	return ino < 1 || ino >= nnodes;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (bad_ino(ino)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (bad_ino(ino) || !nodes[ino].target)
		fuse_reply_err(req, EINVAL);
	else
		fuse_reply_readlink(req, nodes[ino].target);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (bad_ino(ino) || !S_ISDIR(nodes[ino].mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	/* as h5fs: the kernel keeps listings of a frozen mount only */
	fi->keep_cache = timeout > 1000;
	fi->cache_readdir = timeout > 1000;
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	const struct fnode *d = &nodes[ino];
	char *buf = malloc(size);
	size_t used = 0;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", 2 + i the i-th child */
	for (off_t i = off; i < (off_t)d->nkids + 2; i++) {
		struct stat st;
		const char *name = i == 0 ? "." : i == 1 ? ".." : nodes[d->kids[i - 2]].name;
		size_t need;

		memset(&st, 0, sizeof(st));
		st.st_ino = i == 0 ? ino : i == 1 ? (d->parent ? d->parent : ino) : d->kids[i - 2];
		st.st_mode = nodes[st.st_ino].mode;
		need = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (bad_ino(ino)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	floor_reply_xattr(req, nodes[ino].xlist ? nodes[ino].xlist : "", nodes[ino].xlist_len, size);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	const struct fnode *n;

	if (bad_ino(ino)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	n = &nodes[ino];
	for (size_t i = 0; i < n->nx; i++)
		if (strcmp(n->x[i].name, name) == 0) {
			floor_reply_xattr(req, n->x[i].val, n->x[i].vlen, size);
			return;
		}
	fuse_reply_err(req, ENODATA);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.listxattr = op_listxattr,
	.getxattr = op_getxattr,
};

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s DUMP MOUNTPOINT [TIMEOUT]\n", argv[0]);
		return 2;
	}
	if (argc == 4)
		timeout = atof(argv[3]);
	uid = getuid();
	gid = getgid();
	if (load(argv[1]) != 0)
		return 1;
	return floor_run(argv[0], &ops, "max_read=1024000,fsname=fuse_xattr_floor,default_permissions", argv[2],
			 NULL);
}
