#ifndef FAVORITEME_CLIBPQ_SHIM_H
#define FAVORITEME_CLIBPQ_SHIM_H
#include <libpq-fe.h>
// A session's thread sleeps in poll and is woken for new work through an eventfd (Glibc's Swift module does not
// export it).
#include <sys/eventfd.h>
#include <sys/prctl.h>

// OpenSSL's count of decrypted bytes it holds that the caller has not read yet. libpq reads through OpenSSL on TLS
// sessions, and a TLS record larger than libpq's free buffer is only partly taken: the rest waits here, where polling
// the socket cannot see it. Declared rather than included: <openssl/ssl.h> would bring all of OpenSSL into Swift.
struct ssl_st;
int SSL_pending(const struct ssl_st *ssl);

/// Names the calling thread as the kernel shows it (top -H, /proc): at most 15 bytes. prctl rather than
/// pthread_setname_np, which would need _GNU_SOURCE here and so clash with other modules' view of libc's headers.
static inline void favoriteme_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
#endif
