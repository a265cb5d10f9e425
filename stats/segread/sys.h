/*
 * sys.h - what scratchd and scratchstat read from the system: the clocks,
 * procfs files, a process's start time, the uid of a socket's peer.
 */
#ifndef SCRATCH_STATS_SYS_H
#define SCRATCH_STATS_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The uid of the peer of a connected Unix socket; -errno on failure. */
int sys_peer_uid(int fd, uid_t *ret_uid);

uint64_t sys_realtime_ns(void);
uint64_t sys_mono_ns(void);

/* Field 22 of /proc/PID/stat: -ENOENT when the process is gone. */
int sys_proc_start_ticks(pid_t pid, uint64_t *ret_ticks);

/* Read a whole (procfs) file into a malloc'd, NUL-terminated buffer of at
 * most max bytes. Returns NULL and sets errno on failure. */
char *sys_read_file(const char *path, size_t max, size_t *ret_len);

#endif /* SCRATCH_STATS_SYS_H */
