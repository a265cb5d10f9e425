/*
 * protocol.h - how scratchd and scratchstat meet: the name of scratchd's
 * socket in the run directory (rundir.h), and the version of the protocol
 * spoken on it.
 */
#ifndef SCRATCH_STATS_PROTOCOL_H
#define SCRATCH_STATS_PROTOCOL_H

/* The protocol version: /v1's "protocol" key, the X-Scratch-Protocol
 * header of every answer, and what --version prints. A change that a
 * client could notice (a key removed or changed in meaning) raises it. */
#define PROTOCOL_VERSION     1
#define PROTOCOL_STR_(x)     #x
#define PROTOCOL_STR(x)      PROTOCOL_STR_(x)
#define PROTOCOL_HEADER      "X-Scratch-Protocol"
#define PROTOCOL_SOCKET_NAME "scratchd.sock"

#endif /* SCRATCH_STATS_PROTOCOL_H */
