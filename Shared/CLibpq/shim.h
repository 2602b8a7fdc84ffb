#ifndef FAVORITEME_CLIBPQ_SHIM_H
#define FAVORITEME_CLIBPQ_SHIM_H
#include <libpq-fe.h>
// The driver waits for its sessions' sockets with epoll, and is woken for new work through an eventfd (Glibc's
// Swift module exports neither).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// Names the calling thread as the kernel shows it (top -H, /proc): at most 15 bytes. prctl rather than
/// pthread_setname_np, which would need _GNU_SOURCE here and so clash with other modules' view of libc's headers.
static inline void favoriteme_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
#endif
