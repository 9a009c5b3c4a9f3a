/* Whole-or-nothing output files of the clgraph tool (out_file.h). */
#include "out_file.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *cli_file_open(cli_file *o, const char *path) {
    struct stat st;
    o->f = NULL;
    o->af.fd = -1;
    o->af.tmp = o->af.path = NULL;
    o->direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (o->direct) return o->f = fopen(path, "w");
    int e = cg_afile_open(&o->af, path);
    if (e) {
        errno = e;
        return NULL;
    }
    /* The stream writes a duplicate of the descriptor: fclose closes that
     * one, and cg_afile_commit syncs and closes its own. */
    int fd = dup(o->af.fd);
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        e = errno;
        if (fd >= 0) close(fd);
        cg_afile_abort(&o->af);
        errno = e;
        return NULL;
    }
    return o->f;
}

int cli_file_commit(cli_file *o) {
    int bad = fflush(o->f) != 0 || ferror(o->f), e = bad ? (errno ? errno : EIO) : 0;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    o->f = NULL;
    if (o->direct) return e;
    if (e) {
        cg_afile_abort(&o->af);
        return e;
    }
    return cg_afile_commit(&o->af);
}

void cli_file_abort(cli_file *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (!o->direct) cg_afile_abort(&o->af);
}
