/* Measurement logs (measure_log.h). */
#include "measure_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "read_file.h"

void cg_mlog_read(const char *path, size_t max_line, cg_mlog_line_fn fn, void *ctx) {
    char *text;
    size_t len;
    if (cg_read_file_quiet(path, CG_MAX_CACHE_FILE, &text, &len) != 0) return;
    for (char *line = text; line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        char *end = nl ? nl : text + len;
        size_t n = (size_t)(end - line);
        *end = '\0';
        while (n && line[n - 1] == '\r') line[--n] = '\0';
        if (!max_line || n <= max_line) fn(line, ctx);
        line = nl ? nl + 1 : text + len;
    }
    free(text);
}

int cg_mlog_append(const char *path, const char *line, size_t len) {
    FILE *f = cg_cache_append(path, CG_MAX_CACHE_FILE);
    if (!f) return -1;
    /* Lines are far shorter than stdio's buffer: fclose writes once. */
    size_t put = fwrite(line, 1, len, f);
    return fclose(f) == 0 && put == len ? 0 : -1;
}
