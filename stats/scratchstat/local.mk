# stats/scratchstat/: the CLI. main (the command line and the table of
# commands, with the arguments read before getopt in args), the HTTP
# client that also starts scratchd (client), the views of scratchd's
# documents (views), and the two commands of their own files:
# `scratchstat audit` (cmd_audit) and `scratchstat report` (cmd_report).
# It sits on top: it includes the report, the audit and the segment
# reader, and nothing includes it.
STATS_SCRATCHSTAT_CPPFLAGS = $(STATS_REPORT_CPPFLAGS) -I$(srcdir)/stats/scratchstat

bin_PROGRAMS += stats/scratchstat/scratchstat
stats_scratchstat_scratchstat_SOURCES = stats/scratchstat/main.c \
	stats/scratchstat/args.c stats/scratchstat/args.h \
	stats/scratchstat/client.c stats/scratchstat/client.h \
	stats/scratchstat/views.c stats/scratchstat/views.h \
	stats/scratchstat/cmd_audit.c stats/scratchstat/cmd_audit.h \
	stats/scratchstat/cmd_report.c stats/scratchstat/cmd_report.h
stats_scratchstat_scratchstat_CPPFLAGS = $(STATS_SCRATCHSTAT_CPPFLAGS) \
	-DSCRATCH_SBINDIR='"$(sbindir)"' -DSCRATCH_LIBDIR='"$(libdir)"'
stats_scratchstat_scratchstat_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS)
stats_scratchstat_scratchstat_LDADD = libscratch_report.la libscratch_audit.la \
	libscratch_segread.la $(CURL_LIBS) $(JANSSON_LIBS) $(DW_LIBS) -ldl
