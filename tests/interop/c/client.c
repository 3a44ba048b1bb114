/* An rpcgen (-N -M) client of alltypes.x on libtirpc.
 *
 *   client [-s] PORT|unix:PATH [CASE...]
 *
 * Connects to 127.0.0.1:PORT or to the Unix socket PATH (no rpcbind), calls the echo procedure of each case
 * of cases.c (all of them when none is named; "ping", "ping2" and "sink" call the
 * void procedures) and prints "<case> ok" when the reply equals what was sent,
 * else "<case> MISMATCH: why". Exits 1 if any case failed.
 * -s: send AUTH_SYS credentials (machine AUTH_MACHINE, uid AUTH_UID, gid AUTH_GID,
 * groups AUTH_GIDS) instead of AUTH_NONE.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "cases.h"

#define AUTH_MACHINE "interop-host"
#define AUTH_UID 4242
#define AUTH_GID 777
static gid_t AUTH_GIDS[] = {1, 2, 3};

static CLIENT *connect_version(const char *where, unsigned long version, int auth_sys)
{
    int sock = RPC_ANYSOCK;
    CLIENT *clnt;
    if (strncmp(where, "unix:", 5) == 0) {
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s", where + 5);
        clnt = clntunix_create(&addr, ALLTYPES_PROG, version, &sock, 0, 0);
    } else {
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(where))};
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        clnt = clnttcp_create(&addr, ALLTYPES_PROG, version, &sock, 0, 0);
    }
    if (!clnt) {
        clnt_pcreateerror(where);
        exit(2);
    }
    if (auth_sys) {
        auth_destroy(clnt->cl_auth);
        clnt->cl_auth = authunix_create(AUTH_MACHINE, AUTH_UID, AUTH_GID, 3, AUTH_GIDS);
        if (!clnt->cl_auth) {
            fprintf(stderr, "alltypes client: authunix_create failed\n");
            exit(2);
        }
    }
    return clnt;
}

#define ECHO(T, fn, clnt)                                   \
    do {                                                    \
        T res;                                              \
        memset(&res, 0, sizeof res);                        \
        st = fn(*(T *)c->value, &res, clnt);                \
        if (st == RPC_SUCCESS)                              \
            same = xdr_same(c->xdr, c->value, &res);        \
    } while (0)

/* Calls the case's procedure; returns NULL on success, else why not. */
static const char *run_case(const struct xcase *c, CLIENT *v1, CLIENT *v2)
{
    enum clnt_stat st = RPC_SUCCESS;
    int same = 1;
    static char why[512];

    if (strcmp(c->type, "scalars") == 0)
        ECHO(scalars, echo_scalars_1, v1);
    else if (strcmp(c->type, "arrays") == 0)
        ECHO(arrays, echo_arrays_1, v1);
    else if (strcmp(c->type, "optionals") == 0)
        ECHO(optionals, echo_optionals_1, v1);
    else if (strcmp(c->type, "chain") == 0)
        ECHO(chain, echo_chain_1, v1);
    else if (strcmp(c->type, "by_int") == 0)
        ECHO(by_int, echo_by_int_1, v1);
    else if (strcmp(c->type, "by_unsigned") == 0)
        ECHO(by_unsigned, echo_by_unsigned_1, v1);
    else if (strcmp(c->type, "by_enum") == 0)
        ECHO(by_enum, echo_by_enum_1, v1);
    else if (strcmp(c->type, "by_bool") == 0)
        ECHO(by_bool, echo_by_bool_1, v1);
    else if (strcmp(c->type, "text") == 0)
        ECHO(text, echo_text_1, v1);
    else if (strcmp(c->type, "hyper") == 0)
        ECHO(quad_t, echo_hyper_1, v1);
    else if (strcmp(c->type, "everything") == 0)
        ECHO(everything, echo_everything_2, v2);
    else if (strcmp(c->type, "many") == 0) {
        const many *m = c->value;
        many res;
        memset(&res, 0, sizeof res);
        st = echo_many_1(m->i, m->n, m->uh, m->l, m->c, m->d, &res, v1);
        if (st == RPC_SUCCESS)
            same = xdr_same(c->xdr, c->value, &res);
    } else {
        snprintf(why, sizeof why, "no procedure echoes type %s", c->type);
        return why;
    }
    if (st != RPC_SUCCESS) {
        snprintf(why, sizeof why, "call failed: %s", clnt_sperrno(st));
        return why;
    }
    return same ? NULL : "reply differs from the value sent";
}

static const char *run_void(const char *name, struct xcase *cases, size_t n, CLIENT *v1,
                            CLIENT *v2)
{
    enum clnt_stat st;
    static char why[512];
    if (strcmp(name, "ping") == 0)
        st = ping_1(NULL, v1);
    else if (strcmp(name, "ping2") == 0)
        st = ping2_2(NULL, v2);
    else if (strcmp(name, "sink") == 0)
        st = sink_1(*(scalars *)cases_find(cases, n, "scalars_max")->value, NULL, v1);
    else
        return "no such case";
    if (st != RPC_SUCCESS) {
        snprintf(why, sizeof why, "call failed: %s", clnt_sperrno(st));
        return why;
    }
    return NULL;
}

static int report(const char *name, const char *why)
{
    if (why) {
        printf("%s MISMATCH: %s\n", name, why);
        return 1;
    }
    printf("%s ok\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *void_cases[] = {"ping", "ping2", "sink"};
    struct xcase *cases;
    size_t n = cases_build(&cases);
    CLIENT *v1, *v2;
    int failed = 0;
    int auth_sys = argc > 1 && strcmp(argv[1], "-s") == 0;

    if (auth_sys) {
        argv++;
        argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s [-s] PORT|unix:PATH [CASE...]\n", argv[0]);
        return 2;
    }
    v1 = connect_version(argv[1], ALLTYPES_V1, auth_sys);
    v2 = connect_version(argv[1], ALLTYPES_V2, auth_sys);
    if (argc == 2) {
        for (size_t i = 0; i < 3; i++)
            failed |= report(void_cases[i], run_void(void_cases[i], cases, n, v1, v2));
        for (size_t i = 0; i < n; i++)
            failed |= report(cases[i].name, run_case(&cases[i], v1, v2));
    }
    for (int a = 2; a < argc; a++) {
        const struct xcase *c = cases_find(cases, n, argv[a]);
        failed |= report(argv[a], c ? run_case(c, v1, v2) : run_void(argv[a], cases, n, v1, v2));
    }
    clnt_destroy(v1);
    clnt_destroy(v2);
    return failed;
}
