/* tr_resume.h: translate's output file and its progress record. */
#include "tr_resume.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t tr_hash(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

void tr_kill_point(FILE *flush, int window, const char *phase) {
    const char *at = getenv("CG_TEST_KILL_AT");
    char want[64];
    snprintf(want, sizeof want, "%d:%s", window, phase);
    if (!at || strcmp(at, want)) return;
    if (flush) fflush(flush);
    raise(SIGKILL);
}

/* The record's fields; 0, or -1 when it is not one. */
static int read_record(const char *path, long long *lines, long long *bytes, uint64_t *input, uint64_t *options) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    unsigned long long in = 0, op = 0;
    int done = 0;
    const int n = fscanf(f, "clgraph translate progress 1\nlines %lld\nbytes %lld\ninput %llx\noptions %llx\ndone %d",
                         lines, bytes, &in, &op, &done);
    fclose(f);
    *input = in, *options = op;
    return n == 5 && *lines >= 0 && *bytes >= 0 ? 0 : -1;
}

/* The record at o->record (or o->skip and o->want from it): cut FILE back
 * to its bytes and open it for appending. */
static int resume_from(tr_out *o) {
    long long bytes;
    uint64_t options;
    if (read_record(o->record, &o->skip, &bytes, &o->want, &options)) {
        fprintf(stderr, "clgraph translate: %s: not a progress record of clgraph translate\n", o->record);
        return -1;
    }
    if (options != o->options) {
        fprintf(stderr,
                "clgraph translate: %s: made by a run with other options (the command line differs); run "
                "without --resume to start again\n",
                o->record);
        return -1;
    }
    FILE *f = fopen(o->path, "r+");
    if (!f || fseeko(f, 0, SEEK_END) || ftello(f) < bytes) {
        fprintf(stderr, "clgraph translate: %s: %s than the %lld bytes its progress record counts\n", o->path,
                f ? "shorter" : "missing, or not readable, rather", bytes);
        if (f) fclose(f);
        return -1;
    }
    if (ftruncate(fileno(f), (off_t)bytes) || fseeko(f, (off_t)bytes, SEEK_SET)) {
        fprintf(stderr, "clgraph translate: %s: cannot cut it back to %lld bytes: %s\n", o->path, bytes,
                strerror(errno));
        fclose(f);
        return -1;
    }
    o->f = f;
    return 0;
}

int tr_out_open(tr_out *o, const char *path, int resume, uint64_t options) {
    memset(o, 0, sizeof *o);
    o->path = path;
    o->options = options;
    o->input = TR_HASH_START;
    const size_t n = strlen(path) + sizeof ".progress";
    if (!(o->record = malloc(n))) {
        fprintf(stderr, "clgraph translate: out of memory\n");
        return -1;
    }
    snprintf(o->record, n, "%s.progress", path);
    if (resume && access(o->record, F_OK) == 0) return resume_from(o);
    if (!(o->f = fopen(path, "w"))) {
        fprintf(stderr, "clgraph translate: %s: cannot write it: %s\n", path, strerror(errno));
        return -1;
    }
    return tr_out_commit(o, 0); /* a record of nothing done replaces an old one */
}

void tr_out_line(tr_out *o, const char *line, int cut) {
    const char end = cut ? '\v' : '\n'; /* a cut line is not the line of its first bytes */
    o->input = tr_hash(tr_hash(o->input, line, strlen(line)), &end, 1);
    o->lines++;
}

int tr_out_commit(tr_out *o, int done) {
    if (fflush(o->f) || ferror(o->f) || fsync(fileno(o->f))) {
        fprintf(stderr, "clgraph translate: %s: cannot write the translations of lines to %lld: %s\n", o->path,
                o->lines, strerror(errno ? errno : EIO));
        return -1;
    }
    const long long bytes = (long long)ftello(o->f);
    const size_t n = strlen(o->record) + sizeof ".tmp";
    char *tmp = malloc(n);
    FILE *f = tmp ? (snprintf(tmp, n, "%s.tmp", o->record), fopen(tmp, "w")) : NULL;
    int bad =
        !f ||
        fprintf(f, "clgraph translate progress 1\nlines %lld\nbytes %lld\ninput %016llx\noptions %016llx\ndone %d\n",
                o->lines, bytes, (unsigned long long)o->input, (unsigned long long)o->options, done) < 0;
    if (f) bad |= fflush(f) || fsync(fileno(f)) || ferror(f);
    if (f) bad |= fclose(f) != 0;
    bad = bad || rename(tmp, o->record) != 0;
    if (bad) {
        fprintf(stderr, "clgraph translate: %s: cannot write the progress record: %s\n", o->record,
                strerror(errno ? errno : EIO));
        if (tmp) remove(tmp);
    }
    free(tmp);
    return bad ? -1 : 0;
}

int tr_out_close(tr_out *o) {
    int rc = 0;
    if (o->f && fclose(o->f)) {
        fprintf(stderr, "clgraph translate: %s: %s\n", o->path, strerror(errno));
        rc = -1;
    }
    o->f = NULL;
    free(o->record);
    o->record = NULL;
    return rc;
}
