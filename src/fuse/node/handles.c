/* handles.c - the lists of open handles of a member root (fs->open_dirs:
 * directory snapshots, member/read.c; fs->open_wfiles: write handles,
 * behind/wfile.c),
 * under fs->lock: the idle kind, a size change and the new-file batch
 * look for a node's write handles there (idle.c), the unmount frees
 * what the kernel never released (setup.c). */
#include "node.h"

void handle_add(h5fs *fs, struct hlink *list, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev = list;
	h->next = list->next;
	list->next->prev = h;
	list->next = h;
	pthread_mutex_unlock(&fs->lock);
}

void handle_del(h5fs *fs, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	h->prev = h->next = h;
	pthread_mutex_unlock(&fs->lock);
}
