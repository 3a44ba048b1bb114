/* The reference encoder: libtirpc's xdrmem with rpcgen's xdr_* routines.
 *
 *   codec encode        prints "<case> <hex>" for every case of cases.c
 *   codec check         reads "<case> <hex>" lines, decodes each with the case's
 *                       xdr routine and prints "<case> ok" when the whole buffer
 *                       decodes to the case's value, else "<case> MISMATCH: why";
 *                       exits 1 if any line did not match.
 *   codec decode TYPE   reads hex lines, decodes each as TYPE (a type of the cases)
 *                       and prints "accepted" or "rejected" for each.
 *   codec consts        prints "<NAME> <value>" for every constant rpcgen made of
 *                       alltypes.x (consts, enum values, program, versions, procedures).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static int encode_all(void)
{
    struct xcase *cases;
    size_t n = cases_build(&cases);
    for (size_t i = 0; i < n; i++) {
        char *buf;
        unsigned len;
        if (xdr_encode_alloc(cases[i].xdr, cases[i].value, &buf, &len) != 0) {
            fprintf(stderr, "%s: xdr_%s failed to encode\n", cases[i].name, cases[i].type);
            return 1;
        }
        printf("%s ", cases[i].name);
        for (unsigned j = 0; j < len; j++)
            printf("%02x", (unsigned char)buf[j]);
        printf("\n");
        free(buf);
    }
    return 0;
}

static int hex_decode(const char *hex, char **out, unsigned *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return -1;
    *out = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            return -1;
        (*out)[i] = (char)byte;
    }
    *len = (unsigned)(n / 2);
    return 0;
}

/* Returns NULL when data decodes to c's value, else why not. */
static const char *check_one(const struct xcase *c, char *data, unsigned len)
{
    XDR x;
    void *decoded = calloc(1, c->size);
    const char *why = NULL;
    xdrmem_create(&x, data, len, XDR_DECODE);
    if (!c->xdr(&x, decoded))
        why = "libtirpc could not decode it";
    else if (xdr_getpos(&x) != len)
        why = "trailing bytes after the value";
    else if (!xdr_same(c->xdr, c->value, decoded))
        why = "decoded value differs from the case's value";
    xdr_destroy(&x);
    return why;
}

static int check_lines(void)
{
    struct xcase *cases;
    size_t n = cases_build(&cases);
    static char line[1 << 20];
    int failed = 0;
    while (fgets(line, sizeof line, stdin)) {
        char *sp = strchr(line, ' ');
        char *data;
        unsigned len;
        const struct xcase *c;
        const char *why;
        line[strcspn(line, "\n")] = '\0';
        if (!sp)
            continue;
        *sp = '\0';
        c = cases_find(cases, n, line);
        if (!c)
            why = "no such case";
        else if (hex_decode(sp + 1, &data, &len) != 0)
            why = "bad hex";
        else
            why = check_one(c, data, len);
        if (why) {
            printf("%s MISMATCH: %s\n", line, why);
            failed = 1;
        } else {
            printf("%s ok\n", line);
        }
    }
    return failed;
}

static int decode_lines(const char *type)
{
    struct xcase *cases;
    size_t n = cases_build(&cases);
    const struct xcase *c = NULL;
    static char line[1 << 20];
    for (size_t i = 0; i < n && !c; i++)
        if (strcmp(cases[i].type, type) == 0)
            c = &cases[i];
    if (!c) {
        fprintf(stderr, "codec decode: no case of type %s\n", type);
        return 2;
    }
    while (fgets(line, sizeof line, stdin)) {
        char *data;
        unsigned len;
        XDR x;
        void *decoded = calloc(1, c->size);
        line[strcspn(line, "\n")] = '\0';
        if (hex_decode(line, &data, &len) != 0) {
            fprintf(stderr, "codec decode: bad hex\n");
            return 2;
        }
        xdrmem_create(&x, data, len, XDR_DECODE);
        printf("%s\n", c->xdr(&x, decoded) && xdr_getpos(&x) == len ? "accepted" : "rejected");
        xdr_destroy(&x);
    }
    return 0;
}

static int print_consts(void)
{
#define SHOW(c) printf("%s %lld\n", #c, (long long)(c))
    SHOW(SMALL), SHOW(NAME_LEN), SHOW(PERMS), SHOW(NEGATIVE), SHOW(BLOB_LEN), SHOW(MAX_NAMES);
    SHOW(RED), SHOW(GREEN), SHOW(BLUE), SHOW(BLACK), SHOW(WHITE);
    SHOW(ALLTYPES_PROG), SHOW(ALLTYPES_V1), SHOW(ALLTYPES_V2);
    SHOW(PING), SHOW(ECHO_SCALARS), SHOW(ECHO_ARRAYS), SHOW(ECHO_OPTIONALS), SHOW(ECHO_CHAIN);
    SHOW(ECHO_BY_INT), SHOW(ECHO_BY_UNSIGNED), SHOW(ECHO_BY_ENUM), SHOW(ECHO_BY_BOOL);
    SHOW(ECHO_MANY), SHOW(SINK), SHOW(ECHO_TEXT), SHOW(ECHO_HYPER);
    SHOW(PING2), SHOW(ECHO_EVERYTHING);
#undef SHOW
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "encode") == 0)
        return encode_all();
    if (argc == 2 && strcmp(argv[1], "check") == 0)
        return check_lines();
    if (argc == 2 && strcmp(argv[1], "consts") == 0)
        return print_consts();
    if (argc == 3 && strcmp(argv[1], "decode") == 0)
        return decode_lines(argv[2]);
    fprintf(stderr, "usage: %s encode|check|decode TYPE|consts\n", argv[0]);
    return 2;
}
