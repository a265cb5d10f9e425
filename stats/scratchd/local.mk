# stats/scratchd/: the stats daemon. Its process table (registry) and the
# documents it serves, from one field table (documents, fields), with each
# history sample's thread points (thread_points), are a library, so that
# tests/unit/check_fields.c renders the same documents; main and the HTTP side
# (serve) make the program. The systemd user units are here too.
STATS_SCRATCHD_CPPFLAGS = $(STATS_SEGREAD_CPPFLAGS) -I$(srcdir)/stats/scratchd

noinst_LTLIBRARIES += libscratch_daemon.la
libscratch_daemon_la_SOURCES = stats/scratchd/registry.c stats/scratchd/registry.h \
	stats/scratchd/documents.c stats/scratchd/documents.h \
	stats/scratchd/fields.c stats/scratchd/fields.h \
	stats/scratchd/thread_points.c stats/scratchd/thread_points.h
libscratch_daemon_la_CPPFLAGS = $(STATS_SCRATCHD_CPPFLAGS)
libscratch_daemon_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

sbin_PROGRAMS += stats/scratchd/scratchd
stats_scratchd_scratchd_SOURCES = stats/scratchd/main.c stats/scratchd/serve.c \
	stats/scratchd/serve.h
stats_scratchd_scratchd_CPPFLAGS = $(STATS_SCRATCHD_CPPFLAGS)
stats_scratchd_scratchd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS)
stats_scratchd_scratchd_LDADD = libscratch_daemon.la libscratch_segread.la $(MHD_LIBS) \
	$(JANSSON_LIBS) $(PTHREAD_LIBS)

# systemd user units: socket activation on $XDG_RUNTIME_DIR/scratch/scratchd.sock.
systemduserunitdir = $(prefix)/lib/systemd/user
systemduserunit_DATA = stats/scratchd/scratchd.service stats/scratchd/scratchd.socket
EXTRA_DIST += stats/scratchd/scratchd.service.in stats/scratchd/scratchd.socket
CLEANFILES += stats/scratchd/scratchd.service
stats/scratchd/scratchd.service: $(srcdir)/stats/scratchd/scratchd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) stats/scratchd && sed -e 's|@sbindir[@]|$(sbindir)|g' \
		$(srcdir)/stats/scratchd/scratchd.service.in >$@
