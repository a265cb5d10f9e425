# stats/report/: scratchstat's HTML report (`scratchstat report` renders
# with it): the page's sections (report), the locality section from
# audit.h's model (locality), the escaping of untrusted text (html) and the
# SVG charts (svg); a library of its own so the unit suite renders pages
# too. It draws the audit's results, so link libscratch_audit.la and
# libscratch_segread.la after it.
STATS_REPORT_CPPFLAGS = $(STATS_AUDIT_CPPFLAGS) -I$(srcdir)/stats/report

noinst_LTLIBRARIES += libscratch_report.la
libscratch_report_la_SOURCES = stats/report/report.c stats/report/report.h \
	stats/report/report_int.h stats/report/locality.c \
	stats/report/html.c stats/report/html.h stats/report/svg.c stats/report/svg.h
libscratch_report_la_CPPFLAGS = $(STATS_REPORT_CPPFLAGS)
libscratch_report_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
