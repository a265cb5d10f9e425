/*
 * serve.h - scratchd's HTTP side: routes requests on the Unix socket (and
 * /metrics on --listen) to documents of the registry's processes.
 */
#ifndef SCRATCH_STATS_SERVE_H
#define SCRATCH_STATS_SERVE_H

#include <stddef.h>

struct sockaddr_in;

/*
 * Serve HTTP on the listening Unix socket unix_fd (socket_path names it in
 * messages) and, when listen_on is not NULL, "/metrics" only on
 * 127.x.y.z:PORT. Starts the server's threads; they take the registry's
 * lock per request. Returns 0 or -errno with a cause in err (then call
 * serve_stop).
 */
int serve_start(int unix_fd, const char *socket_path, const char *listen_on, char *err,
                size_t errlen);

/*
 * Stop serving. Call after registry_stop(): trace followers were told and
 * send their end marker; they get up to two seconds to finish before the
 * server closes what is left, so a client sees a complete stream.
 */
void serve_stop(void);

/* Parse a --listen address, 127.x.y.z:PORT, into sa; -EINVAL with a
 * message in err. */
int serve_parse_listen(const char *s, struct sockaddr_in *sa, char *err, size_t errlen);

#endif /* SCRATCH_STATS_SERVE_H */
