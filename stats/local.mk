# stats/: scratchd (the stats daemon), scratchstat (the CLI), the segment
# reader they share, its fuzz target, the systemd units and `make demo`.
sbin_PROGRAMS += stats/scratchd
bin_PROGRAMS += stats/scratchstat

noinst_LTLIBRARIES += libscratch_segread.la
libscratch_segread_la_SOURCES = stats/segread.c stats/segread.h stats/common.c stats/common.h \
	src/segment.h src/internal.h src/scratch.h
libscratch_segread_la_CFLAGS = $(AM_CFLAGS)

stats_scratchd_SOURCES = stats/scratchd.c stats/scratchd.h stats/serve.c
stats_scratchd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS)
stats_scratchd_LDADD = libscratch_segread.la $(MHD_LIBS) $(JANSSON_LIBS) $(PTHREAD_LIBS)

stats_scratchstat_SOURCES = stats/scratchstat.c stats/symbols.c stats/symbols.h
stats_scratchstat_CPPFLAGS = $(AM_CPPFLAGS) -DSCRATCH_SBINDIR='"$(sbindir)"'
stats_scratchstat_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) $(DW_CFLAGS)
stats_scratchstat_LDADD = libscratch_segread.la $(CURL_LIBS) $(JANSSON_LIBS) $(DW_LIBS)
