# stats/scratchstat/: the CLI. main (the command line and the table of
# commands), the HTTP client that also starts scratchd (client), the
# views of scratchd's documents (views), and the two commands of their own
# files: `scratchstat audit` (audit_cli) and `scratchstat report`
# (report_cli). It sits on top: it includes the report, the audit and the
# segment reader, and nothing includes it.
STATS_SCRATCHSTAT_CPPFLAGS = $(STATS_REPORT_CPPFLAGS) -I$(srcdir)/stats/scratchstat

bin_PROGRAMS += stats/scratchstat/scratchstat
stats_scratchstat_scratchstat_SOURCES = stats/scratchstat/main.c \
	stats/scratchstat/client.c stats/scratchstat/client.h \
	stats/scratchstat/views.c stats/scratchstat/views.h \
	stats/scratchstat/audit_cli.c stats/scratchstat/audit_cli.h \
	stats/scratchstat/report_cli.c stats/scratchstat/report_cli.h
stats_scratchstat_scratchstat_CPPFLAGS = $(STATS_SCRATCHSTAT_CPPFLAGS) \
	-DSCRATCH_SBINDIR='"$(sbindir)"' -DSCRATCH_LIBDIR='"$(libdir)"'
stats_scratchstat_scratchstat_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS)
stats_scratchstat_scratchstat_LDADD = libscratch_report.la libscratch_audit.la \
	libscratch_segread.la $(CURL_LIBS) $(JANSSON_LIBS) $(DW_LIBS) -ldl
