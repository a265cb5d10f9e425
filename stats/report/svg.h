/*
 * svg.h - the HTML report's inline SVG charts: a frame with a time axis
 * and a bytes or lanes axis, step lines, marks, a legend.
 *
 * Everything writes to a FILE; the caller checks ferror() once at the end.
 * Every string these functions print as text goes through html_text()
 * (html.h), so a name holding markup, controls or invalid UTF-8 can
 * neither end an element nor break the page.
 */
#ifndef SCRATCH_STATS_SVG_H
#define SCRATCH_STATS_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The i-th colour of the thread palette (wraps around). */
const char *svg_palette(size_t i);

/*
 * A chart's plot area: data x in [0, x_max] seconds maps to pixels
 * [left, left + w], data y in [0, y_max] to [top + h, top] (y grows
 * upwards). lanes > 0 makes y a set of lanes instead (lane i centred at
 * svg_lane_y(i)).
 */
struct svg_frame {
	double x_max, y_max;
	int left, top, w, h;
	unsigned lanes;
};

/* Open an <svg> of width x height with an accessible title and set up fr
 * with its margins; round x_max and y_max up to a tick. */
void svg_open(FILE *f, struct svg_frame *fr, int width, int height, const char *title, double x_max,
              double y_max, unsigned lanes);
void svg_close(FILE *f);

double svg_frame_x(const struct svg_frame *fr, double x);
double svg_frame_y(const struct svg_frame *fr, double y);
double svg_lane_y(const struct svg_frame *fr, unsigned lane);

/* Grid lines and tick labels: seconds on x, bytes on y (not for lanes). */
void svg_axes(FILE *f, const struct svg_frame *fr);
/* A lane's label at the left margin (text escaped). */
void svg_lane_label(FILE *f, const struct svg_frame *fr, unsigned lane, const char *label);

/*
 * One series as a step line (values hold until the next sample): n points
 * (x[i], y[i]); a y that is negative is a gap (the thread did not exist
 * then), which breaks the line. label becomes the line's tooltip; wide
 * draws it broad and pale, so a thin line on top of it stays visible.
 */
void svg_steps(FILE *f, const struct svg_frame *fr, const double *x, const double *y, size_t n,
               const char *color, const char *label, bool wide);

/* A legend below the charts: one swatch and (escaped) label per entry. */
void svg_legend(FILE *f, const char *const *labels, const char *const *colors, size_t n);

#endif /* SCRATCH_STATS_SVG_H */
