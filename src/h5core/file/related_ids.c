/* related_ids.c - the numbers of the files reached from one FILE
 * (h5_file_id: their objects' inode numbers add it << 48) and the list of
 * every file reached (h5_file_related_reached).
 *
 * A file's number is its path's own (a hash of its real path, or URL),
 * not the order the files were reached in: a collection's index records a
 * member's tree in the order its walk reaches files, and serves it to
 * mounts that reach them in another order (or open the member to read one
 * dataset), which must number every object alike. Two paths of one
 * table hashing alike make the second take the next free number; it is
 * then marked not home, and a caller needing numbers independent of
 * order (the index) does not rely on it. A file keeps its number while
 * FILE is open, also when closed while idle and opened again.
 *
 * The caller (related.c) holds its table's lock around every call.
 */
#include "base.h"
#include "related.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RELATED_MAX_FILES 4096
/* File numbers are 1..RELATED_ID_MAX: st_ino's bits 48..61 (node/names.c;
 * bit 62 is a collection index's own node numbers, bit 63 synthetic). */
#define RELATED_ID_MAX 0x3fff

struct rel_id {
	dev_t dev;
	ino_t ino;
	char *url;              /* remote files: their URL (else NULL) */
	char *path;             /* the real path, or the URL */
	uint32_t id;
	bool home;              /* id is the path's own */
	uint64_t size;          /* local files: as stat gave them when last opened */
	int64_t mtime_ns;
};

/* A path's own number, 1..RELATED_ID_MAX (FNV-1a). */
static uint32_t home_number(const char *path)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (uint32_t)(h % RELATED_ID_MAX) + 1;
}

static bool number_taken(const struct rel_ids *t, uint32_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].id == id)
			return true;
	return false;
}

int rel_ids_number(uint32_t *out, struct rel_ids *t, const struct stat *st, const char *path, const char *url)
{
	struct rel_id *p;
	uint32_t id;

	for (size_t i = 0; i < t->n; i++) {
		p = &t->v[i];
		if (url ? p->url && strcmp(p->url, url) == 0 : !p->url && p->dev == st->st_dev && p->ino == st->st_ino)
			goto found;
	}
	if (t->n >= RELATED_MAX_FILES)
		return h5_err_set(H5_ERR_LIMIT, "more than %d other files reached", RELATED_MAX_FILES);
	p = realloc(t->v, (t->n + 1) * sizeof(*p));
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	t->v = p;
	p = &t->v[t->n];
	memset(p, 0, sizeof(*p));
	p->path = strdup(url ? url : path);
	if (!p->path || (url && !(p->url = strdup(url)))) {
		free(p->path);
		free(p->url);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	id = home_number(p->path);
	p->home = true;
	while (number_taken(t, id)) {
		id = id % RELATED_ID_MAX + 1;
		p->home = false;
	}
	p->id = id;
	if (!url) {
		p->dev = st->st_dev;
		p->ino = st->st_ino;
	}
	t->n++;
found:
	/* the stamp of this opening: what the file was when its objects
	 * were read (a record compares it with a stat after its walk) */
	if (!url) {
		p->size = (uint64_t)st->st_size;
		p->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	}
	*out = p->id;
	return 0;
}

int rel_ids_each(const struct rel_ids *t, int (*fn)(void *arg, const h5_related_info *ri), void *arg)
{
	int rc = 0;

	for (size_t i = 0; i < t->n && rc == 0; i++) {
		const struct rel_id *p = &t->v[i];
		h5_related_info ri = { .path = p->path, .id = p->id, .home = p->home, .remote = p->url != NULL,
				       .size = p->size, .mtime_ns = p->mtime_ns, .ino = (uint64_t)p->ino };

		rc = fn(arg, &ri);
	}
	return rc;
}

void rel_ids_free(struct rel_ids *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].url);
		free(t->v[i].path);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
