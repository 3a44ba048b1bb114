/* Test values of alltypes.x, shared by the C client and the codec program.
 * tests/interop/cases.py holds the same values for the Python side. */
#ifndef ALLTYPES_CASES_H
#define ALLTYPES_CASES_H

#include <stddef.h>
#include "alltypes.h"

struct xcase {
    const char *name;   /* case name, as in cases.py */
    const char *type;   /* the .x type name (or "hyper" for ECHO_HYPER's argument) */
    xdrproc_t xdr;      /* rpcgen's (or libtirpc's) xdr routine for the type */
    void *value;
    size_t size;        /* sizeof the C type, to decode into */
};

/* Builds the table once; returns the number of cases. */
size_t cases_build(struct xcase **table);
/* Finds a case by name, or NULL. */
const struct xcase *cases_find(const struct xcase *table, size_t n, const char *name);
/* Encodes value with xdr into a malloc'ed buffer; returns 0 and sets *buf, *len on success. */
int xdr_encode_alloc(xdrproc_t xdr, void *value, char **buf, unsigned *len);
/* 1 when both values encode to the same bytes: XDR is canonical, so equal values. */
int xdr_same(xdrproc_t xdr, void *a, void *b);

#endif
