#ifndef FAVORITEME_CLIBPQ_SHIM_H
#define FAVORITEME_CLIBPQ_SHIM_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // pthread_setname_np
#endif
#include <libpq-fe.h>
#include <pthread.h>
// The driver waits for its sessions' sockets with epoll, and is woken for new work through an eventfd (Glibc's
// Swift module exports neither).
#include <sys/epoll.h>
#include <sys/eventfd.h>

/// Names the calling thread as the kernel shows it (top -H, /proc): at most 15 bytes.
static inline void favoriteme_name_current_thread(const char *name) {
    pthread_setname_np(pthread_self(), name);
}
#endif
