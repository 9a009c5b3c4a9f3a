/* Pictures of forecasts (fc_plot.c): per series, the history and forecast
 * of every channel and the attention of each forecast step, as PNG or SVG
 * by the file's extension. */
#ifndef CG_TOOLS_FC_PLOT_H
#define CG_TOOLS_FC_PLOT_H

typedef struct fc_plot_series {
    const char *name;           /* NULL: no series column */
    const char *const *columns; /* channel names */
    int channels, length, horizon;
    const double *history;     /* length x channels */
    const char *const *times;  /* the history's times, or NULL: steps are numbered */
    const char *const *ftimes; /* the forecast's times (horizon), with times */
    const double *forecast;    /* horizon x channels */
    const float *attention;    /* horizon x window, or NULL: no attention panel */
    const int *att_first, *att_count;
    int window;
} fc_plot_series;

/* Writes one image per series: `path` for series 0, "-<i>" before the
 * extension for series i (.svg: SVG, else PNG). Returns non-zero after
 * printing a message naming the file. */
int fc_plot_write(const char *path, const fc_plot_series *series, int n);

#endif
