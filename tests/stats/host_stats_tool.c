/*
 * host_stats_tool.c - helper for the stats tests: makes synthetic segment files
 * (valid, corrupt and hostile ones), and speaks raw bytes to a Unix socket
 * (for malformed HTTP).
 *
 *   host_stats_tool make OUT PID START_TICKS [RECORDS [RING]]
 *   host_stats_tool corrupt IN OUT MODE
 *       MODE: truncate magic version size threads overlap ring frames torn head utf8 ctrl
 *             nokeep
 *   host_stats_tool raw SOCKET TEXT      (\r and \n escapes; prints the status line)
 *   host_stats_tool poke-head FILE VALUE (the ring head, in place)
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "segment.h"

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror(path);
		return 1;
	}
	close(fd);
	return 0;
}

static void *read_file(const char *path, size_t *ret_len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static void put_record(struct scratch_seg_header *h, uint64_t seq)
{
	struct scratch_seg_record *r =
	        (struct scratch_seg_record *)((uint8_t *)h + h->ring_off +
	                                      ((seq - 1) & (h->ring_slots - 1)) * h->record_stride);

	r->seq = seq;
	r->time_ns = (uint64_t)time(NULL) * 1000000000u;
	r->bytes = 1 << 20;
	r->tid = h->pid;
	r->cls = 16;
	r->cpu = 0;
	r->node = 0;
	r->nframes = 2;
	r->frames[0] = 0x1000;
	r->frames[1] = 0x2000;
	r->check = scratch_seg_record_check(r, r->frames, r->nframes);
	r->seq_end = seq;
}

/* A valid segment: one live thread with known counters, records in the ring. */
static int make(const char *out, int pid, uint64_t ticks, uint64_t records, uint32_t ring)
{
	struct scratch_seg_header *h;
	struct scratch_seg_thread *t;
	size_t size;
	uint64_t off = sizeof(*h);
	int rc;

	h = calloc(1, 1 << 22);
	if (h == NULL)
		return 1;
	h->version = SCRATCH_SEG_VERSION;
	h->header_size = sizeof(*h);
	h->pid = pid;
	h->start_ticks = ticks;
	h->created_ns = (uint64_t)time(NULL) * 1000000000u;
	h->proc_off = off;
	h->proc_size = (sizeof(struct scratch__proc_counters) + 63) & ~63u;
	off += h->proc_size;
	h->threads_off = off;
	h->thread_slots = 4;
	h->thread_stride = sizeof(struct scratch_seg_thread);
	off += 4 * h->thread_stride;
	h->owners_off = off;
	h->owner_slots = 2;
	h->owner_stride = (sizeof(struct scratch_seg_owner) + 63) & ~63u;
	off += 2 * h->owner_stride;
	h->ring_off = off;
	h->ring_slots = ring;
	h->record_frames = 4;
	h->record_stride = scratch_seg_record_stride(4);
	h->flags = SCRATCH_SEG_F_TRACE | SCRATCH_SEG_F_KEEP;
	off += (uint64_t)ring * h->record_stride;
	size = (off + 4095) & ~(size_t)4095;
	h->file_size = size;
	snprintf(h->exe, sizeof(h->exe), "/synthetic/host");
	snprintf(h->cmdline, sizeof(h->cmdline), "synthetic %d", pid);
	t = (struct scratch_seg_thread *)((uint8_t *)h + h->threads_off);
	t->state = SCRATCH_SEG_LIVE;
	t->tid = pid;
	t->generation = 1;
	snprintf(t->name, sizeof(t->name), "synthetic");
	t->c.allocs = 5;
	t->c.hits = 4;
	t->c.misses = 1;
	t->c.retained = 1 << 20;
	for (uint64_t s = 1; s <= records; s++)
		put_record(h, s);
	h->ring_head = records;
	h->magic = SCRATCH_SEG_MAGIC;
	rc = write_file(out, h, size);
	free(h);
	return rc;
}

static int corrupt(const char *in, const char *out, const char *mode)
{
	size_t len;
	uint8_t *buf = read_file(in, &len);
	struct scratch_seg_header *h = (struct scratch_seg_header *)buf;
	int rc;

	if (buf == NULL || len < sizeof(*h)) {
		fprintf(stderr, "%s: not a segment\n", in);
		return 1;
	}
	if (strcmp(mode, "truncate") == 0)
		len = sizeof(*h) / 2;
	else if (strcmp(mode, "magic") == 0)
		h->magic ^= 0xff;
	else if (strcmp(mode, "version") == 0)
		h->version = 99;
	else if (strcmp(mode, "size") == 0)
		h->file_size = UINT64_C(1) << 40;
	else if (strcmp(mode, "threads") == 0)
		h->thread_slots = 60000;
	else if (strcmp(mode, "overlap") == 0)
		h->owners_off = h->threads_off;
	else if (strcmp(mode, "ring") == 0)
		h->ring_slots = 3;
	else if (strcmp(mode, "frames") == 0)
		h->record_frames = 1000;
	else if (strcmp(mode, "torn") == 0 || strcmp(mode, "head") == 0) {
		/* still a valid header: records or the head lie */
		struct scratch_seg_record *r =
		        (struct scratch_seg_record *)(buf + h->ring_off + h->record_stride);

		if (mode[0] == 't') {
			r->bytes ^= 12345; /* check no longer matches: torn */
			r->nframes = 200;
		} else {
			h->ring_head = UINT64_MAX - 5;
		}
	} else if (strcmp(mode, "ctrl") == 0) {
		/* still valid: UTF-8 names full of terminal controls (C0, DEL, C1) */
		struct scratch_seg_thread *t = (struct scratch_seg_thread *)(buf + h->threads_off);

		snprintf(h->exe, sizeof(h->exe), "/x/\x1b[2Jevil\x07");
		snprintf(h->cmdline, sizeof(h->cmdline),
		         "evil \x1b]0;title\x07 \xc2\x9b"
		         "31m");
		snprintf(t->name, sizeof(t->name), "\x1b[31mred\x7f");
	} else if (strcmp(mode, "nokeep") == 0) {
		h->flags &= ~SCRATCH_SEG_F_KEEP; /* still valid: not kept after exit */
	} else if (strcmp(mode, "utf8") == 0) {
		/* still valid: names that are not UTF-8; the newest image of its
		 * pid, the one /metrics shows of the images that share it */
		struct scratch_seg_thread *t = (struct scratch_seg_thread *)(buf + h->threads_off);

		h->created_ns++;
		snprintf(h->exe, sizeof(h->exe),
		         "/x/\xff\xfe"
		         "bad");
		memcpy(t->name, "\xc3(", 3);
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	rc = write_file(out, buf, len);
	free(buf);
	return rc;
}

static int raw(const char *path, const char *text)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static char msg[1 << 17];
	char resp[4096];
	size_t n = 0;
	ssize_t got;
	int fd;

	for (const char *p = text; *p != '\0' && n < sizeof(msg) - 1; p++) {
		if (p[0] == '\\' && (p[1] == 'r' || p[1] == 'n')) {
			msg[n++] = p[1] == 'r' ? '\r' : '\n';
			p++;
		} else {
			msg[n++] = *p;
		}
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror(path);
		return 1;
	}
	/* A server may answer a request it refuses (a huge header: 431) and
	 * close before it has read all of it; what it wrote stays readable, so
	 * a write that fails for that reason (EPIPE, SIGPIPE ignored) still
	 * goes on to the read. Whether it fails depends on timing. */
	signal(SIGPIPE, SIG_IGN);
	for (size_t off = 0; off < n;) {
		ssize_t put = write(fd, msg + off, n - off);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			if (errno != EPIPE && errno != ECONNRESET) {
				perror("write");
				close(fd);
				return 1;
			}
			break;
		}
		off += (size_t)put;
	}
	/* No half-close: a server may drop a connection whose peer stopped
	 * writing before it answers. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){.tv_sec = 10},
	           sizeof(struct timeval));
	got = read(fd, resp, sizeof(resp) - 1);
	close(fd);
	if (got <= 0) {
		printf("closed\n");
		return 0;
	}
	resp[got] = '\0';
	resp[strcspn(resp, "\r\n")] = '\0';
	printf("%s\n", resp);
	return 0;
}

/* Overwrite the ring head of a segment in place (no truncation: a live
 * process maps it), as a hostile writer would. */
static int poke_head(const char *path, uint64_t head)
{
	int fd = open(path, O_RDWR);
	ssize_t n;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	n = pwrite(fd, &head, sizeof(head), offsetof(struct scratch_seg_header, ring_head));
	close(fd);
	return n == (ssize_t)sizeof(head) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "make") == 0)
		return make(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10),
		            argc > 5 ? strtoull(argv[5], NULL, 10) : 3,
		            argc > 6 ? (uint32_t)atoi(argv[6]) : 16);
	if (argc == 5 && strcmp(argv[1], "corrupt") == 0)
		return corrupt(argv[2], argv[3], argv[4]);
	if (argc == 4 && strcmp(argv[1], "raw") == 0)
		return raw(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "poke-head") == 0)
		return poke_head(argv[2], strtoull(argv[3], NULL, 0));
	fprintf(stderr, "usage: host_stats_tool make|corrupt|raw|poke-head ...\n");
	return 2;
}
