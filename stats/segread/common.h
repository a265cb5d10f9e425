/*
 * common.h - what scratchd and scratchstat share: the run directory rules
 * (the library's), the socket's name and protocol version, clocks, and /proc
 * helpers.
 */
#ifndef SCRATCH_STATS_COMMON_H
#define SCRATCH_STATS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The protocol version: /v1's "protocol" key, the X-Scratch-Protocol
 * header of every answer, and what --version prints. A change that a
 * client could notice (a key removed or changed in meaning) raises it. */
#define STATS_PROTOCOL        1
#define STATS_STR_(x)         #x
#define STATS_STR(x)          STATS_STR_(x)
#define STATS_PROTOCOL_HEADER "X-Scratch-Protocol"
#define STATS_SOCKET_NAME     "scratchd.sock"

/*
 * The run directory into buf: dir when not NULL, else $SCRATCH_RUNTIME_DIR,
 * else $XDG_RUNTIME_DIR/scratch, else /dev/shm/scratch-$UID. With create,
 * a missing last component is made 0700. Returns 0, or -errno with a
 * human cause in err: a directory that is not ours or is open to others is
 * refused (-EPERM); one whose socket path would not fit a Unix socket
 * address (108 bytes with its NUL) is too long (-ENAMETOOLONG), checked
 * before anything is created.
 */
int stats_run_dir(const char *dir, bool create, char *buf, size_t len, char *err, size_t errlen);

/* The uid of the peer of a connected Unix socket; -errno on failure. */
int stats_peer_uid(int fd, uid_t *ret_uid);

uint64_t stats_realtime_ns(void);
uint64_t stats_mono_ns(void);

/* Replace every C0 control character, DEL and C1 control (U+0080-U+009F,
 * the two bytes 0xc2 0x80-0x9f in UTF-8) in s by one '?', in place: a line
 * for a log or a terminal that carries untrusted names. */
void stats_mask_controls(char *s);

/* Bytes in human units into buf: "512 B", "1.5 MiB" (the largest binary
 * unit that keeps the figure >= 1). Returns buf. */
const char *stats_human(uint64_t v, char *buf, size_t len);

/* A pid argument: decimal, 1 to 2^31 - 1, nothing after it. */
bool stats_parse_pid(const char *s, pid_t *ret);

/* Field 22 of /proc/PID/stat: -ENOENT when the process is gone. */
int stats_proc_start_ticks(pid_t pid, uint64_t *ret_ticks);

/* Read a whole (procfs) file into a malloc'd, NUL-terminated buffer of at
 * most max bytes. Returns NULL and sets errno on failure. */
char *stats_read_file(const char *path, size_t max, size_t *ret_len);

/* Write the reason (printf-style) into err when there is room, and return
 * -e: the locality modules' one error path. */
int stats_fail(char *err, size_t errlen, int e, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* One line "PROG: message" on stderr, every control character of the
 * message masked (stats_mask_controls): lines carry names from segments,
 * the command line and the daemon's answers. Cut at 4 KiB. */
void stats_log(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SCRATCH_STATS_COMMON_H */
