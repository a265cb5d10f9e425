# stats/: scratchd (the stats daemon), scratchstat (the CLI), the segment
# reader they share, its fuzz target, the systemd units and `make demo`.
sbin_PROGRAMS += stats/scratchd
bin_PROGRAMS += stats/scratchstat

# Each folder's targets see their own headers and those of the folders
# below them, and nothing else: not src/ (the segment format is the one
# header of the library the stats code includes, by its path).
STATS_SEGREAD_CPPFLAGS = -I$(top_builddir) -I$(srcdir)/stats/segread
include $(srcdir)/stats/segread/local.mk
include $(srcdir)/stats/audit/local.mk
include $(srcdir)/stats/report/local.mk

STATS_FLAT_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/stats/segread -I$(srcdir)/stats/audit \
	-I$(srcdir)/stats/report

# The daemon's process table (registry) and the documents it serves, from
# one field table (docs, fields): a library, so that tests/check_fields.c
# renders the same documents.
noinst_LTLIBRARIES += libscratch_daemon.la
libscratch_daemon_la_SOURCES = stats/registry.c stats/registry.h \
	stats/docs.c stats/docs.h stats/fields.c stats/fields.h stats/thread_history.c \
	stats/thread_history.h
libscratch_daemon_la_CPPFLAGS = $(STATS_FLAT_CPPFLAGS)
libscratch_daemon_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

stats_scratchd_SOURCES = stats/scratchd.c stats/serve.c stats/serve.h
stats_scratchd_CPPFLAGS = $(STATS_FLAT_CPPFLAGS)
stats_scratchd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS)
stats_scratchd_LDADD = libscratch_daemon.la libscratch_segread.la $(MHD_LIBS) $(JANSSON_LIBS) \
	$(PTHREAD_LIBS)

stats_scratchstat_SOURCES = stats/scratchstat.c stats/client.c stats/client.h \
	stats/views.c stats/views.h stats/audit_cli.c stats/audit_cli.h
stats_scratchstat_SOURCES += stats/report_cli.c stats/report_cli.h
stats_scratchstat_CPPFLAGS = $(STATS_FLAT_CPPFLAGS) -DSCRATCH_SBINDIR='"$(sbindir)"' \
	-DSCRATCH_LIBDIR='"$(libdir)"'
stats_scratchstat_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) $(DW_CFLAGS)
stats_scratchstat_LDADD = libscratch_report.la libscratch_audit.la libscratch_segread.la \
	$(CURL_LIBS) $(JANSSON_LIBS) $(DW_LIBS) -ldl

# make demo: the README's first command ends here (stats/demo.sh).
EXTRA_DIST += stats/demo.sh
demo: all
	@if test "x$(SANITIZER)" != xnone; then \
	  echo "make demo: this build uses --enable-sanitizers=$(SANITIZER), which interposes malloc itself; run the demo from a plain build" >&2; \
	  exit 1; fi; \
	SCRATCH_TOP_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(srcdir)/stats/demo.sh

# systemd user units: socket activation on $XDG_RUNTIME_DIR/scratch/scratchd.sock.
systemduserunitdir = $(prefix)/lib/systemd/user
systemduserunit_DATA = stats/scratchd.service stats/scratchd.socket
EXTRA_DIST += stats/scratchd.service.in stats/scratchd.socket
CLEANFILES += stats/scratchd.service
stats/scratchd.service: $(srcdir)/stats/scratchd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) stats && sed -e 's|@sbindir[@]|$(sbindir)|g' $(srcdir)/stats/scratchd.service.in >$@
