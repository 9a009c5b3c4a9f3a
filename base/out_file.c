/* Output files written whole or not at all (clgraph.h cg_out_file_*): a
 * stdio stream over base/atomic_file.h's temporary file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "error.h"

struct cg_out_file {
    cg_afile af;
    int direct; /* written in place (not a regular file) */
    FILE *f;
    char *path;
};

static cg_status io_error(const char *path, const char *what, int e) {
    cg_status st = cg_error(CG_ERR_IO, "%s: cannot %s: %s", path, what, strerror(e));
    errno = e;
    return st;
}

cg_status cg_out_file_open(const char *path, cg_out_file **out) {
    if (!path || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_out_file_open: NULL argument");
    *out = NULL;
    cg_out_file *o = calloc(1, sizeof *o);
    if (!o || !(o->path = cg_strdup(path))) {
        free(o);
        return io_error(path, "write", ENOMEM);
    }
    o->af.fd = -1;
    struct stat st;
    o->direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    int e = 0;
    if (o->direct) {
        if (!(o->f = fopen(path, "w"))) e = errno;
    } else if (!(e = cg_afile_open(&o->af, path))) {
        /* The stream writes a duplicate of the descriptor: fclose closes
         * that one, and cg_afile_commit syncs and closes its own. */
        int fd = dup(o->af.fd);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            e = errno;
            if (fd >= 0) close(fd);
            cg_afile_abort(&o->af);
        }
    } else {
        o->af.fd = -1;
    }
    if (e) {
        free(o->path);
        free(o);
        return io_error(path, "write", e);
    }
    *out = o;
    return CG_OK;
}

FILE *cg_out_file_stream(cg_out_file *f) { return f ? f->f : NULL; }

cg_status cg_out_file_commit(cg_out_file *o) {
    if (!o) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_out_file_commit: NULL file");
    int bad = fflush(o->f) != 0 || ferror(o->f), e = bad ? (errno ? errno : EIO) : 0;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    if (!o->direct) {
        if (e) cg_afile_abort(&o->af);
        else e = cg_afile_commit(&o->af);
    }
    cg_status st = e ? io_error(o->path, "write", e) : CG_OK;
    free(o->path);
    free(o);
    if (e) errno = e;
    return st;
}

void cg_out_file_abort(cg_out_file *o) {
    if (!o) return;
    if (o->f) fclose(o->f);
    if (!o->direct) cg_afile_abort(&o->af);
    free(o->path);
    free(o);
}
