/* An rpcgen (-N -M) server of alltypes.x on libtirpc: every procedure echoes.
 *
 *   server [PORT|unix:PATH]
 *
 * Listens on 127.0.0.1 (port 0: a free one) or on the Unix socket PATH, prints the
 * port (0 for a Unix socket) on stdout, serves forever; registers nothing with
 * rpcbind. Dies with its parent (PR_SET_PDEATHSIG).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alltypes.h"

/* Results alias their arguments, which the dispatcher frees: nothing to free here. */
int alltypes_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
    (void)transp, (void)xdr_result, (void)result;
    return 1;
}

int alltypes_prog_2_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
    return alltypes_prog_1_freeresult(transp, xdr_result, result);
}

/* Denies (AUTH_TOOWEAK) an AUTH_SYS caller whose machine name is REJECTED_MACHINE:
 * proof that libtirpc decoded the caller's AUTH_SYS body. */
#define REJECTED_MACHINE "reject-me"

bool_t ping_1_svc(void *result, struct svc_req *req)
{
    (void)result;
    if (req->rq_cred.oa_flavor == AUTH_SYS) {
        const struct authunix_parms *cred = (const struct authunix_parms *)req->rq_clntcred;
        if (strcmp(cred->aup_machname, REJECTED_MACHINE) == 0) {
            svcerr_auth(req->rq_xprt, AUTH_TOOWEAK);
            return FALSE; /* the error is the reply */
        }
    }
    return TRUE;
}

bool_t ping2_2_svc(void *result, struct svc_req *req)
{
    (void)result, (void)req;
    return TRUE;
}

bool_t sink_1_svc(scalars arg, void *result, struct svc_req *req)
{
    (void)arg, (void)result, (void)req;
    return TRUE;
}

#define ECHO(fn, T)                                        \
    bool_t fn(T arg, T *result, struct svc_req *req)       \
    {                                                      \
        (void)req;                                         \
        *result = arg;                                     \
        return TRUE;                                       \
    }

ECHO(echo_scalars_1_svc, scalars)
ECHO(echo_arrays_1_svc, arrays)
ECHO(echo_optionals_1_svc, optionals)
ECHO(echo_chain_1_svc, chain)
ECHO(echo_by_int_1_svc, by_int)
ECHO(echo_by_unsigned_1_svc, by_unsigned)
ECHO(echo_by_enum_1_svc, by_enum)
ECHO(echo_by_bool_1_svc, by_bool)
ECHO(echo_text_1_svc, text)
ECHO(echo_hyper_1_svc, quad_t)
ECHO(echo_everything_2_svc, everything)

bool_t echo_many_1_svc(int i, name n, u_quad_t uh, chain l, color c, double d, many *result,
                       struct svc_req *req)
{
    (void)req;
    *result = (many){i, n, uh, l, c, d};
    return TRUE;
}

extern void alltypes_prog_1(struct svc_req *, SVCXPRT *);
extern void alltypes_prog_2(struct svc_req *, SVCXPRT *);

/* A TCP transport on 127.0.0.1:port (0: a free port); sets *bound to the port. */
static SVCXPRT *listen_tcp(unsigned short port, unsigned short *bound)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t addrlen = sizeof addr;
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(sock, (struct sockaddr *)&addr, &addrlen) != 0 || listen(sock, 16) != 0) {
        perror("alltypes server: listen on 127.0.0.1");
        return NULL;
    }
    *bound = ntohs(addr.sin_port);
    return svctcp_create(sock, 0, 0);
}

int main(int argc, char **argv)
{
    unsigned short port = 0;
    SVCXPRT *xprt;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (argc > 1 && strncmp(argv[1], "unix:", 5) == 0)
        xprt = svcunix_create(RPC_ANYSOCK, 0, 0, argv[1] + 5);
    else
        xprt = listen_tcp(argc > 1 ? (unsigned short)atoi(argv[1]) : 0, &port);
    if (!xprt) {
        fprintf(stderr, "alltypes server: no transport on %s\n", argc > 1 ? argv[1] : "127.0.0.1");
        return 1;
    }
    /* protocol 0: do not register with rpcbind */
    if (!svc_register(xprt, ALLTYPES_PROG, ALLTYPES_V1, alltypes_prog_1, 0) ||
        !svc_register(xprt, ALLTYPES_PROG, ALLTYPES_V2, alltypes_prog_2, 0)) {
        fprintf(stderr, "alltypes server: svc_register failed\n");
        return 1;
    }
    printf("%d\n", port);
    fflush(stdout);
    svc_run();
    fprintf(stderr, "alltypes server: svc_run returned\n");
    return 1;
}
