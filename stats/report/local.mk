# stats/report/: scratchstat's HTML report (`scratchstat report` renders
# with it): the page's sections, the locality section (from audit.h's
# model), the escaping and SVG primitives; a library of its own so the
# unit suite renders pages too. It draws the audit's results, so link
# libscratch_audit.la and libscratch_segread.la after it.
STATS_REPORT_CPPFLAGS = $(STATS_AUDIT_CPPFLAGS) -I$(srcdir)/stats/report

noinst_LTLIBRARIES += libscratch_report.la
libscratch_report_la_SOURCES = stats/report/report.c stats/report/report.h \
	stats/report/report_audit.c stats/report/report_svg.c stats/report/report_svg.h
libscratch_report_la_CPPFLAGS = $(STATS_REPORT_CPPFLAGS)
libscratch_report_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
