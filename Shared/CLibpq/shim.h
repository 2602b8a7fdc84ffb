#ifndef FAVORITEME_CLIBPQ_SHIM_H
#define FAVORITEME_CLIBPQ_SHIM_H
#include <libpq-fe.h>
// The driver waits for its sessions' sockets with epoll (Glibc's Swift module does not export it).
#include <sys/epoll.h>
#endif
