/*
 * birthtag.c - h5fs's birth tag of an object header (birthtag.h): a NIL
 * message whose 8-byte body is the magic "h5fT" and a random nonzero tag.
 * NIL messages are otherwise free space whose bytes mean nothing (a
 * removed message's old body, zeros), so the magic is what tells a tag
 * from them; another program that reuses the NIL's space for a message
 * of its own ends the tag (the object's handles go stale, never the
 * other way round).
 */
#include "base.h"
#include "rd.h"
#include "ohdr.h"
#include "birthtag.h"

#include <sys/random.h>
#include <time.h>

static const uint8_t MAGIC[4] = { 'h', '5', 'f', 'T' };

uint32_t h5_birthtag_new(void)
{
	uint32_t t = 0;
	struct timespec ts;

	/* no entropy (a very early boot, a sandbox refusing the call): the
	 * clock's nanoseconds mixed (xorshift), still unlikely to repeat at
	 * one address */
	if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != (ssize_t)sizeof(t)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		t = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u;
		t ^= t << 13;
		t ^= t >> 17;
		t ^= t << 5;
	}
	return t ? t : 1;
}

void h5_birthtag_encode(uint8_t *b, uint32_t tag)
{
	memcpy(b, MAGIC, sizeof(MAGIC));
	h5_le_encode(b + 4, tag, 4);
}

uint32_t h5_birthtag_decode(const uint8_t *b, size_t len)
{
	if (len < H5_BIRTHTAG_LEN || memcmp(b, MAGIC, sizeof(MAGIC)) != 0)
		return 0;
	return (uint32_t)h5_le_decode(b + 4, 4);
}

bool h5_msg_is_birthtag(const h5_msg *m)
{
	return m->type == H5_MSG_NIL && m->data && h5_birthtag_decode(m->data, m->size) != 0;
}

uint32_t h5_ohdr_birthtag(const h5_ohdr *oh)
{
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (h5_msg_is_birthtag(&oh->msgs[i]))
			return h5_birthtag_decode(oh->msgs[i].data, oh->msgs[i].size);
	return 0;
}
