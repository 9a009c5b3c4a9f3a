/* `clgraph translate --output FILE [--resume]`: the translations go to
 * FILE, and after every window of lines the file is flushed to disk and a
 * progress record FILE.progress replaced atomically (the lines done, the
 * bytes of FILE they made, a hash of those input lines and of the command
 * line). --resume reads the record: FILE is cut back to its bytes (a run
 * killed mid-window leaves more), the input's first lines are read again
 * and must hash the same, and the run goes on from the next window, so a
 * run killed at any moment and started again writes the same bytes as one
 * that was never stopped. */
#ifndef CG_TOOLS_TR_RESUME_H
#define CG_TOOLS_TR_RESUME_H

#include <stdint.h>
#include <stdio.h>

typedef struct tr_out {
    const char *path;
    char *record; /* FILE.progress */
    FILE *f;
    uint64_t options; /* hash of the command line */
    uint64_t input;   /* hash of the input lines read so far */
    long long lines;  /* input lines read so far */
    long long skip;   /* --resume: lines the record says are done */
    uint64_t want;    /* ... and their hash */
} tr_out;

/* Opens FILE for a run whose command line hashes to `options`: fresh, or
 * with `resume` and a record there, cut back to the record and open for
 * appending (o->skip lines already done). 0, or -1 after one line on
 * stderr naming the file. */
int tr_out_open(tr_out *o, const char *path, int resume, uint64_t options);

/* Takes the next input line (as translate holds it, `cut` when only its
 * start was kept) into the input hash. */
void tr_out_line(tr_out *o, const char *line, int cut);

/* After a window's translations are written: FILE flushed to disk, then
 * the record replaced (done: the input ended). 0, or -1 after one line on
 * stderr. */
int tr_out_commit(tr_out *o, int done);

/* Closes FILE (the record stays). 0, or -1 after one line on stderr. */
int tr_out_close(tr_out *o);

/* FNV-1a of n bytes, continuing from h (start: TR_HASH_START). */
#define TR_HASH_START 0xcbf29ce484222325ull
uint64_t tr_hash(uint64_t h, const void *p, size_t n);

/* Tests only: CG_TEST_KILL_AT="W:PHASE" kills the process (SIGKILL) in its
 * W-th window at PHASE: "mid" (half its lines written), "out" (all written
 * and flushed, the record not yet), "rec" (the record replaced); `flush`
 * (NULL: none) is flushed first, and only then: the writes of a run that
 * is not killed stay as they are. */
void tr_kill_point(FILE *flush, int window, const char *phase);

#endif
