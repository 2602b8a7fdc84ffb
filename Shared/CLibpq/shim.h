#ifndef FAVORITEME_CLIBPQ_SHIM_H
#define FAVORITEME_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
