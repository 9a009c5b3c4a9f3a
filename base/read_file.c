/* Whole-file reads (read_file.h). */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

cg_status cg_read_file(const char *path, size_t max, char **out, size_t *len) {
    *out = NULL;
    if (len) *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return cg_error(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    cg_status st = s ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "%s: out of memory reading it", path);
    while (!st) {
        size_t r = fread(s + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
        if (n > max) {
            st = cg_error(CG_ERR_IO, "%s: larger than %zu bytes", path, max);
        } else if (n + 1 >= cap) {
            char *ns = realloc(s, cap * 2);
            if (!ns) st = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory reading it", path);
            else s = ns, cap *= 2;
        }
    }
    int err = errno;
    if (!st && ferror(f)) st = cg_error(CG_ERR_IO, "%s: cannot read: %s", path, strerror(err ? err : EIO));
    fclose(f);
    if (st) {
        free(s);
        return st;
    }
    s[n] = 0;
    *out = s;
    if (len) *len = n;
    return CG_OK;
}
