# Manual pages (mdoc), linted by tests/tree/man.test.
dist_man_MANS += man/libscratch.3
dist_man_MANS += man/libscratch-preload.7
dist_man_MANS += man/scratchd.8 man/scratchstat.1
