/*
 * html.c - the HTML report's escaping of untrusted text (html.h): every
 * name from a watched process reaches the page through html_text().
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "html.h"

/* Length of the well-formed UTF-8 sequence at s (n bytes left), its code
 * point in *cp; 0 when the bytes there are not one (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len;
	uint32_t v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, v = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, v = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, v = s[0] & 0x07u;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Code points shown as U+FFFD: controls, and the bidirectional formatting
 * characters that could make a name read as something else. */
static bool hidden(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

void html_text(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	if (s == NULL)
		return;
	if (len == (size_t)-1)
		len = strlen(s);
	while (len > 0) {
		uint32_t cp = 0;
		size_t n = utf8_seq(p, len, &cp);

		if (n == 0 || hidden(cp))
			fputs("\xef\xbf\xbd", f); /* U+FFFD */
		else if (cp == '&')
			fputs("&amp;", f);
		else if (cp == '<')
			fputs("&lt;", f);
		else if (cp == '>')
			fputs("&gt;", f);
		else if (cp == '"')
			fputs("&quot;", f);
		else if (cp == '\'')
			fputs("&#39;", f);
		else
			fwrite(p, 1, n, f);
		/* a bad byte is replaced alone: the next one may start a character */
		n = n == 0 ? 1 : n;
		p += n;
		len -= n;
	}
}
