/* The header watchdog: a connection that takes longer than a timeout to
 * send a request's headers (a client trickling a byte now and then stays
 * clear of the idle timeout) has its socket shut down by a thread of ours,
 * and libmicrohttpd, which calls us only once headers are complete, then
 * closes it. */
#ifndef CG_SERVE_SRV_WATCH_H
#define CG_SERVE_SRV_WATCH_H

#include <microhttpd.h>

typedef struct srv_watch srv_watch;

/* A watchdog for header_timeout_s seconds; NULL when out of memory or
 * threads. */
srv_watch *srv_watch_create(unsigned header_timeout_s);

/* Stops the thread and frees the watchdog (after the daemon stopped). */
void srv_watch_free(srv_watch *w);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the watchdog). */
void srv_watch_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);

/* A request's headers are complete (busy 1: not watched) or the request
 * ended (busy 0: the next one's headers are timed from now). */
void srv_watch_busy(srv_watch *w, struct MHD_Connection *c, int busy);

#endif
