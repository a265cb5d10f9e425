/*
 * svg.c - the HTML report's inline SVG charts (svg.h): frames, ticks and
 * axes, step lines, the thread palette and the legend below a chart.
 *
 * The charts are plain SVG elements inside the HTML (no xmlns needed: the
 * HTML parser puts <svg> in its namespace), with a <title> per line or mark
 * for the tooltip, so the page needs no script and loads nothing.
 */
#include "config.h"

#include "html.h"
#include "svg.h"

const char *svg_palette(size_t i)
{
	/* distinct on white and for the common colour blindnesses in order */
	static const char *const colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
	                                     "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
	                                     "#ff9da7", "#bab0ac", "#1f4e79", "#8c564b"};

	return colors[i % (sizeof(colors) / sizeof(colors[0]))];
}

/* ---------------------------------------------------------------------- */
/* Ticks                                                                   */
/* ---------------------------------------------------------------------- */

/* A step of 1, 2 or 5 times a power of ten that cuts range (> 0) into at
 * most about n parts. */
static double nice_step(double range, int n)
{
	double raw = range / n, mag = 1.0;

	while (mag * 10.0 <= raw)
		mag *= 10.0;
	while (mag > raw)
		mag /= 10.0;
	if (raw <= mag)
		return mag;
	if (raw <= 2.0 * mag)
		return 2.0 * mag;
	if (raw <= 5.0 * mag)
		return 5.0 * mag;
	return 10.0 * mag;
}

/* The binary unit that keeps bytes >= 1 in it, and its name. */
static double byte_unit(double bytes, const char **name)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double unit = 1.0;
	unsigned u = 0;

	while (bytes >= unit * 1024.0 && u < 4) {
		unit *= 1024.0;
		u++;
	}
	*name = names[u];
	return unit;
}

static double seconds_step(double x_max)
{
	return nice_step(x_max > 0 ? x_max : 1.0, 8);
}

static double bytes_step(double y_max)
{
	const char *name;
	double unit = byte_unit(y_max, &name);

	return nice_step(y_max / unit, 4) * unit;
}

/* Round v up to a whole number of steps (at least one). */
static double round_up(double v, double step)
{
	double r = step;

	while (r < v)
		r += step;
	return r;
}

/* ---------------------------------------------------------------------- */
/* Charts                                                                  */
/* ---------------------------------------------------------------------- */

void svg_open(FILE *f, struct svg_frame *fr, int width, int height, const char *title, double x_max,
              double y_max, unsigned lanes)
{
	*fr = (struct svg_frame){.lanes = lanes, .top = 8};
	fr->left = lanes > 0 ? 190 : 72;
	fr->w = width - fr->left - 16;
	fr->h = height - fr->top - 34;
	fr->x_max = round_up(x_max, seconds_step(x_max));
	fr->y_max = lanes > 0 ? (double)lanes
	                      : round_up(y_max > 0 ? y_max : 1024.0,
	                                 bytes_step(y_max > 0 ? y_max : 1024.0));
	fprintf(f,
	        "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
	        "role=\"img\"><title>",
	        width, height, width, height);
	html_text(f, title, (size_t)-1);
	fputs("</title>\n", f);
}

void svg_close(FILE *f)
{
	fputs("</svg>\n", f);
}

double svg_frame_x(const struct svg_frame *fr, double x)
{
	return fr->left + (fr->x_max > 0 ? x / fr->x_max : 0) * fr->w;
}

double svg_frame_y(const struct svg_frame *fr, double y)
{
	return fr->top + fr->h - (fr->y_max > 0 ? y / fr->y_max : 0) * fr->h;
}

double svg_lane_y(const struct svg_frame *fr, unsigned lane)
{
	return fr->top + ((double)lane + 0.5) * fr->h / (fr->lanes ? fr->lanes : 1);
}

static void x_axis(FILE *f, const struct svg_frame *fr)
{
	double step = seconds_step(fr->x_max);

	for (double t = 0; t <= fr->x_max + step / 2; t += step) {
		double x = svg_frame_x(fr, t);

		fprintf(f,
		        "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
		        "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g "
		        "s</text>\n",
		        x, fr->top, x, fr->top + fr->h, x, fr->top + fr->h + 16, t);
	}
}

static void y_axis(FILE *f, const struct svg_frame *fr)
{
	const char *name;
	double step = bytes_step(fr->y_max), unit = byte_unit(fr->y_max, &name);

	for (double v = 0; v <= fr->y_max + step / 2; v += step) {
		double y = svg_frame_y(fr, v);

		fprintf(f,
		        "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
		        "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g "
		        "%s</text>\n",
		        fr->left, y, fr->left + fr->w, y, fr->left - 6, y + 4, v / unit, name);
	}
}

void svg_axes(FILE *f, const struct svg_frame *fr)
{
	x_axis(f, fr);
	if (fr->lanes == 0)
		y_axis(f, fr);
	fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
	        fr->left, fr->top, fr->w, fr->h);
}

void svg_lane_label(FILE *f, const struct svg_frame *fr, unsigned lane, const char *label)
{
	double y = svg_lane_y(fr, lane);

	fprintf(f,
	        "<line class=\"lane\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
	        "<text class=\"lanelabel\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
	        fr->left, y, fr->left + fr->w, y, fr->left - 6, y + 4);
	html_text(f, label, (size_t)-1);
	fputs("</text>\n", f);
}

void svg_steps(FILE *f, const struct svg_frame *fr, const double *x, const double *y, size_t n,
               const char *color, const char *label, bool wide)
{
	bool open = false;
	double held = 0; /* the value the open run holds */

	fprintf(f, "<path class=\"series%s\" d=\"", wide ? " wide" : "");
	for (size_t i = 0; i < n; i++) {
		bool run_ends = i + 1 == n || y[i + 1] < 0;

		if (y[i] < 0) {
			open = false;
			continue;
		}
		/* a point that changes nothing is left out, so a long flat
		 * series is a short path; a run still reaches its last x */
		if (!open)
			fprintf(f, "M%.1f %.1f", svg_frame_x(fr, x[i]), svg_frame_y(fr, y[i]));
		else if (y[i] != held) /* the held value lasted until this sample */
			fprintf(f, "H%.1fV%.1f", svg_frame_x(fr, x[i]), svg_frame_y(fr, y[i]));
		else if (run_ends)
			fprintf(f, "H%.1f", svg_frame_x(fr, x[i]));
		held = y[i];
		open = true;
	}
	fprintf(f, "\" stroke=\"%s\"><title>", color);
	html_text(f, label, (size_t)-1);
	fputs("</title></path>\n", f);
}

void svg_legend(FILE *f, const char *const *labels, const char *const *colors, size_t n)
{
	fputs("<ul class=\"legend\">", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>", colors[i]);
		html_text(f, labels[i], (size_t)-1);
		fputs("</li>", f);
	}
	fputs("</ul>\n", f);
}
