/* cindex_tree.c - a member's tree in memory (cindex.h): built by the walk
 * that records a member, or loaded from the index, and queried by the
 * indexed root. The database side is cindex.c. */
#include "cindex.h"

#include "h5core.h"
#include "h5util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cindex_tree_new(cindex_tree **out)
{
	*out = calloc(1, sizeof(cindex_tree));
	return *out ? 0 : h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
}

void cindex_tree_free(cindex_tree *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		cindex_node *nd = &t->nodes[i];

		for (uint32_t j = 0; j < nd->nxattrs; j++) {
			free(nd->xattrs[j].name);
			free(nd->xattrs[j].value);
		}
		free(nd->xattrs);
		free(nd->name);
		free(nd->path);
		free(nd->target);
	}
	for (uint32_t i = 0; i < t->nrelated; i++) {
		free(t->related[i].path);
		free(t->related[i].etag);
	}
	free(t->related);
	free(t->nodes);
	free(t->kids);
	free(t->byname);
	free(t);
}

int cindex_tree_related(cindex_tree *t, const cindex_related *r)
{
	cindex_related *p;

	if (t->nrelated == t->rcap) {
		uint32_t cap = t->rcap ? t->rcap * 2 : 4;

		p = realloc(t->related, (size_t)cap * sizeof(*p));
		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
		t->related = p;
		t->rcap = cap;
	}
	p = &t->related[t->nrelated];
	*p = *r;
	p->path = strdup(r->path);
	p->etag = strdup(r->etag ? r->etag : "");
	if (!p->path || !p->etag) {
		free(p->path);
		free(p->etag);
		return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
	}
	t->nrelated++;
	return 0;
}

static int type_of(uint32_t mode)
{
	if (S_ISDIR(mode))
		return CINDEX_DIR;
	if (S_ISLNK(mode))
		return CINDEX_LINK;
	return CINDEX_FILE;
}

int cindex_tree_add(uint32_t *out, cindex_tree *t, uint32_t parent, const char *name,
		    const cindex_stat *st, const char *target)
{
	cindex_node *nd;

	if (t->n && parent >= t->n)
		return h5_err_set(H5_ERR_INVAL, "index tree: no node %u", parent);
	if (t->n && t->nodes[parent].type != CINDEX_DIR)
		return h5_err_set(H5_ERR_INVAL, "index tree: node %u is not a directory", parent);
	if (t->n == UINT32_MAX - 1)
		return h5_err_set(H5_ERR_LIMIT, "index tree: too many nodes");
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		cindex_node *p = realloc(t->nodes, (size_t)cap * sizeof(*p));

		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
		t->nodes = p;
		t->cap = cap;
	}
	nd = &t->nodes[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->st = *st;
	nd->type = type_of(st->mode);
	if (t->n == 0) {
		nd->parent = 0;
		nd->name = strdup("");
		nd->path = strdup("/");
	} else {
		nd->parent = parent;
		nd->name = strdup(name);
		nd->path = h5_path_join(t->nodes[parent].path, name);
		/* readdir position: how many children parent had before
		 * (nkids counts them while building; seal recounts) */
		nd->order = t->nodes[parent].nkids++;
	}
	nd->target = target ? strdup(target) : NULL;
	if (!nd->name || !nd->path || (target && !nd->target)) {
		free(nd->name);
		free(nd->path);
		free(nd->target);
		return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
	}
	t->sealed = 0;
	*out = t->n++;
	return 0;
}

int cindex_tree_add_error(uint32_t *out, cindex_tree *t, uint32_t parent, const char *name, uint32_t mode,
			  uint64_t dino, const char *why)
{
	cindex_stat st = { .mode = mode & S_IFMT };
	int rc;

	/* never the root: a member whose root cannot be read is unreadable
	 * as a whole (cindex_set_unreadable) */
	if (!t->n)
		return h5_err_set(H5_ERR_INVAL, "index tree: an error node cannot be the root");
	rc = cindex_tree_add(out, t, parent, name, &st, why ? why : "");
	if (rc < 0)
		return rc;
	t->nodes[*out].type = CINDEX_ERROR;
	t->nodes[*out].dino = dino;
	return 0;
}

int cindex_tree_xattr(cindex_tree *t, uint32_t node, const char *name, const void *value, size_t len)
{
	cindex_node *nd;
	cindex_xattr *x;

	if (node >= t->n)
		return h5_err_set(H5_ERR_INVAL, "index tree: no node %u", node);
	nd = &t->nodes[node];
	if (nd->type == CINDEX_ERROR)
		return h5_err_set(H5_ERR_INVAL, "index tree: node %u is an error", node);
	if (nd->nxattrs == nd->xcap) {
		uint32_t cap = nd->xcap ? nd->xcap * 2 : 4;
		cindex_xattr *p = realloc(nd->xattrs, (size_t)cap * sizeof(*p));

		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
		nd->xattrs = p;
		nd->xcap = cap;
	}
	x = &nd->xattrs[nd->nxattrs];
	x->name = strdup(name);
	x->value = malloc(len ? len : 1);
	x->len = len;
	if (!x->name || !x->value) {
		free(x->name);
		free(x->value);
		return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
	}
	if (len)
		memcpy(x->value, value, len);
	nd->nxattrs++;
	return 0;
}

/* qsort has no context argument: the tree being sealed, one at a time. */
static _Thread_local const cindex_tree *sort_tree;

static int by_name(const void *a, const void *b)
{
	return strcmp(sort_tree->nodes[*(const uint32_t *)a].name,
		      sort_tree->nodes[*(const uint32_t *)b].name);
}

/* Lay the children of every directory out in two arrays: in readdir order
 * (kids) and by name (byname, for lookups by binary search: a group of
 * 50,000 datasets is looked up as fast as a small one). */
int cindex_tree_seal(cindex_tree *t)
{
	uint32_t nk = t->n ? t->n - 1 : 0, off = 0;
	int rc = H5_ERR_NOMEM;

	free(t->kids);
	free(t->byname);
	t->kids = malloc(((size_t)nk + 1) * sizeof(uint32_t));
	t->byname = malloc(((size_t)nk + 1) * sizeof(uint32_t));
	if (!t->kids || !t->byname)
		goto out;
	memset(t->kids, 0xff, ((size_t)nk + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < t->n; i++)
		t->nodes[i].nkids = 0;
	/* a loaded tree comes from a file: every parent must be a directory
	 * before its child, every readdir position taken once */
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t p = t->nodes[i].parent;

		if (p >= i || t->nodes[p].type != CINDEX_DIR) {
			rc = h5_err_set(H5_ERR_FORMAT, "index tree: node %u: bad parent %u", i, p);
			goto out;
		}
		t->nodes[p].nkids++;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		t->nodes[i].kid0 = off;
		off += t->nodes[i].nkids;
	}
	for (uint32_t i = 1; i < t->n; i++) {
		const cindex_node *nd = &t->nodes[i];
		const cindex_node *p = &t->nodes[nd->parent];

		if (nd->order >= p->nkids || t->kids[p->kid0 + nd->order] != UINT32_MAX) {
			rc = h5_err_set(H5_ERR_FORMAT, "index tree: node %u: readdir position %u of %u",
					i, nd->order, p->nkids);
			goto out;
		}
		t->kids[p->kid0 + nd->order] = i;
	}
	memcpy(t->byname, t->kids, (size_t)nk * sizeof(uint32_t));
	sort_tree = t;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->nodes[i].nkids > 1)
			qsort(t->byname + t->nodes[i].kid0, t->nodes[i].nkids, sizeof(uint32_t), by_name);
	sort_tree = NULL;
	t->sealed = 1;
	rc = 0;
out:
	if (rc == H5_ERR_NOMEM)
		h5_err_set(rc, "index tree: out of memory");
	return rc;
}

int64_t cindex_tree_lookup(const cindex_tree *t, uint32_t parent, const char *name)
{
	const cindex_node *p;
	uint32_t lo, hi;

	if (!t->sealed || parent >= t->n)
		return -1;
	p = &t->nodes[parent];
	lo = 0;
	hi = p->nkids;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, k = t->byname[p->kid0 + mid];
		int c = strcmp(t->nodes[k].name, name);

		if (c == 0)
			return k;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

const cindex_xattr *cindex_tree_getxattr(const cindex_tree *t, uint32_t node, const char *name)
{
	if (node >= t->n)
		return NULL;
	for (uint32_t i = 0; i < t->nodes[node].nxattrs; i++)
		if (strcmp(t->nodes[node].xattrs[i].name, name) == 0)
			return &t->nodes[node].xattrs[i];
	return NULL;
}

int cindex_tree_listxattr(char **out, size_t *len, const cindex_tree *t, uint32_t node)
{
	const cindex_node *nd;
	size_t n = 0;
	char *p;

	*out = NULL;
	*len = 0;
	if (node >= t->n)
		return h5_err_set(H5_ERR_INVAL, "index tree: no node %u", node);
	nd = &t->nodes[node];
	for (uint32_t i = 0; i < nd->nxattrs; i++)
		n += strlen(nd->xattrs[i].name) + 1;
	if (!n)
		return 0;
	p = malloc(n);
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "index tree: out of memory");
	*out = p;
	*len = n;
	for (uint32_t i = 0; i < nd->nxattrs; i++) {
		size_t l = strlen(nd->xattrs[i].name) + 1;

		memcpy(p, nd->xattrs[i].name, l);
		p += l;
	}
	return 0;
}
