/*
 * html.h - the HTML report's escaping of untrusted text: names from the
 * watched process (exe, command line, thread names, symbols) can neither
 * end an element nor break the page.
 *
 * Writes to a FILE; the caller checks ferror() once at the end.
 */
#ifndef SCRATCH_STATS_HTML_H
#define SCRATCH_STATS_HTML_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write len bytes of s (or up to its NUL when len is (size_t)-1) as HTML
 * text, fit for an element's content and for a double- or single-quoted
 * attribute: & < > " ' as character references; invalid UTF-8 (each bad
 * byte), overlong forms, surrogates, C0 controls, DEL, C1 controls and
 * the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069,
 * which would reorder the text around them) as U+FFFD.
 */
void html_text(FILE *f, const char *s, size_t len);

#endif /* SCRATCH_STATS_HTML_H */
