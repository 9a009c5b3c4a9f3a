#include "srv_watch.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

typedef struct srv_wconn {
    struct srv_wconn *prev, *next;
    int fd;
    int64_t since; /* CLOCK_MONOTONIC ns: accepted, or its last request ended */
    int busy, shut;
} srv_wconn;

struct srv_watch {
    pthread_mutex_t lock; /* the list; held while a socket is shut, so its fd is still the connection's */
    pthread_cond_t wake;
    srv_wconn *head;
    int64_t timeout_ns;
    int stop;
    pthread_t thread;
};

static int64_t srv_watch_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every quarter second: shut down the connections waiting for headers too
 * long (read and write: libmicrohttpd sees the end and closes). */
static void *srv_watch_main(void *arg) {
    srv_watch *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        const int64_t now = srv_watch_now();
        for (srv_wconn *e = w->head; e; e = e->next)
            if (!e->busy && !e->shut && now - e->since > w->timeout_ns) {
                shutdown(e->fd, SHUT_RDWR);
                e->shut = 1;
            }
        const int64_t until = now + 250000000;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        pthread_cond_timedwait(&w->wake, &w->lock, &ts);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

srv_watch *srv_watch_create(unsigned header_timeout_s) {
    srv_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->timeout_ns = (int64_t)header_timeout_s * 1000000000;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, srv_watch_main, w)) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void srv_watch_free(srv_watch *w) {
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    while (w->head) { /* connections the daemon did not report closed */
        srv_wconn *e = w->head;
        w->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

void srv_watch_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe) {
    srv_watch *w = cls;
    if (!w) return; /* no --header-timeout */
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        srv_wconn *e = ci ? calloc(1, sizeof *e) : NULL;
        *socket_context = e;
        if (!e) return; /* not watched: the idle timeout still applies */
        e->fd = ci->connect_fd;
        e->since = srv_watch_now();
        pthread_mutex_lock(&w->lock);
        e->next = w->head;
        if (w->head) w->head->prev = e;
        w->head = e;
        pthread_mutex_unlock(&w->lock);
        return;
    }
    srv_wconn *e = *socket_context; /* closed: before libmicrohttpd closes the fd */
    if (!e) return;
    pthread_mutex_lock(&w->lock);
    if (e->prev) e->prev->next = e->next;
    else w->head = e->next;
    if (e->next) e->next->prev = e->prev;
    pthread_mutex_unlock(&w->lock);
    free(e);
    *socket_context = NULL;
}

void srv_watch_busy(srv_watch *w, struct MHD_Connection *c, int busy) {
    if (!w) return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_wconn *e = ci ? ci->socket_context : NULL;
    if (!e) return;
    pthread_mutex_lock(&w->lock);
    e->busy = busy;
    e->since = srv_watch_now();
    pthread_mutex_unlock(&w->lock);
}
