/* Repeated launch batches replayed as CUDA graphs (cricket_server.backends.cuda.launch_replay).
 * A CU_LAUNCH_KERNEL_BATCH record whose launches repeat an earlier batch's (the same functions,
 * dimensions, shared memory, stream and parameter lengths: the record's bytes but the
 * parameters) is made by one cuGraphLaunch of a graph built from that earlier batch, a chain
 * of kernel nodes, after each node whose parameters changed got them
 * (cuGraphExecKernelNodeSetParams). One driver call in place of one per launch.
 * Compiled into the same library as fast_launch.c, whose tables of functions and streams
 * (launch_record.h) it reads when it builds a graph. */
#include <string.h>

#include "launch_record.h"

typedef struct {           /* CUDA_KERNEL_NODE_PARAMS (the _v2 layout, CUDA 12 and later) */
    void *func;
    unsigned gx, gy, gz, bx, by, bz, shared;
    void **params;
    void **extra;
    void *kern;
    void *ctx;
} cricket_kernel_node;

typedef struct {
    int (*is_capturing)(void *stream, int *status);                       /* cuStreamIsCapturing */
    int (*create)(void **graph, unsigned flags);                          /* cuGraphCreate */
    int (*add_kernel)(void **node, void *graph, void *const *deps, size_t ndeps,
                      const cricket_kernel_node *p);                       /* cuGraphAddKernelNode_v2 */
    int (*instantiate)(void **exec, void *graph, unsigned long long flags); /* ...WithFlags */
    int (*set_kernel)(void *exec, void *node,
                      const cricket_kernel_node *p);        /* cuGraphExecKernelNodeSetParams_v2 */
    int (*launch)(void *exec, void *stream);                              /* cuGraphLaunch */
    int (*destroy_exec)(void *exec);                                      /* cuGraphExecDestroy */
    int (*destroy_graph)(void *graph);                                    /* cuGraphDestroy */
} cricket_replay_driver;

/* One replayable batch: the record whose parameters its nodes hold, its graph and exec, the
 * stream every launch went to, and per launch its node and function (arrays of `count` the
 * caller allocates, as `record` of `len` bytes). */
typedef struct {
    unsigned char *record;
    size_t len;
    uint32_t count;
    void *graph;
    void *exec;
    void *stream;
    void **nodes;
    cricket_fn *fns;
} cricket_replay;

/* Where the entry at `pos` ends (the next one starts), 0 when the record ends inside it; its
 * parameter length in *n. */
static size_t entry_next(const unsigned char *body, size_t len, size_t pos, uint32_t *n)
{
    size_t next;
    *n = entry_end(body, len, pos, LAUNCH_HEAD, &next);
    return next;
}

static void node_params(cricket_kernel_node *p, const cricket_fn *fn, const unsigned char *h)
{
    memset(p, 0, sizeof *p);
    p->func = fn->func;
    p->gx = be32(h + 8);
    p->gy = be32(h + 12);
    p->gz = be32(h + 16);
    p->bx = be32(h + 20);
    p->by = be32(h + 24);
    p->bz = be32(h + 28);
    p->shared = be32(h + 32);
    p->params = fn->params;
}

/* 1 when records `a` and `b` (each `len` bytes) hold launches of one shape: equal but for
 * the parameter bytes; 0 otherwise, or when either is not a whole record. */
int cricket_batch_same_shape(const unsigned char *a, const unsigned char *b, size_t len)
{
    if (len < 4 || memcmp(a, b, 4) != 0)
        return 0;
    uint32_t count = be32(a);
    size_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t na, nb;
        size_t next = entry_next(a, len, pos, &na);
        if (next == 0 || entry_next(b, len, pos, &nb) != next)
            return 0;
        if (memcmp(a + pos, b + pos, LAUNCH_HEAD) != 0)
            return 0;
        pos = next;
    }
    return pos == len;
}

static void drop(const cricket_replay_driver *drv, cricket_replay *r)
{
    if (r->exec)
        drv->destroy_exec(r->exec);
    if (r->graph)
        drv->destroy_graph(r->graph);
    r->exec = r->graph = NULL;
}

/* Builds `r` from the batch `body` (`len` == r->len bytes, r->count launches) with the
 * functions and streams of the tables fast_launch.c's loop just made it with. 0 when built;
 * -1 when the batch cannot be one graph (a launch on another stream, a function or stream
 * not in the tables, a malformed record); else the CUresult of the driver call that failed.
 * Nothing is left built on failure. */
int cricket_replay_build(const cricket_replay_driver *drv, cricket_replay *r,
                         const unsigned char *body, size_t len, const cricket_fn *fns,
                         uint32_t nfns, const cricket_stream *streams, uint32_t nstreams)
{
    r->graph = r->exec = NULL;
    if (len != r->len || len < 4 || be32(body) != r->count || r->count == 0)
        return -1;
    size_t pos = 4;
    const cricket_stream *st = NULL;
    for (uint32_t i = 0; i < r->count; i++) {     /* check every launch before building */
        uint32_t n;
        size_t next = entry_next(body, len, pos, &n);
        if (next == 0)
            return -1;
        const unsigned char *h = body + pos;
        const cricket_fn *fn = NULL;
        for (uint32_t k = 0; k < nfns && fn == NULL; k++)
            if (fns[k].handle == be64(h))
                fn = &fns[k];
        uint64_t sh = be64(h + 36);
        if (st == NULL)
            for (uint32_t k = 0; k < nstreams && st == NULL; k++)
                if (streams[k].handle == sh)
                    st = &streams[k];
        if (fn == NULL || st == NULL || st->handle != sh || n < fn->size)
            return -1;
        r->fns[i] = *fn;
        pos = next;
    }
    if (pos != len)
        return -1;
    int e = drv->create(&r->graph, 0);
    if (e != 0) {
        r->graph = NULL;
        return e;
    }
    pos = 4;
    for (uint32_t i = 0; i < r->count; i++) {
        uint32_t n;
        size_t next = entry_next(body, len, pos, &n);
        const cricket_fn *fn = &r->fns[i];
        if (fn->size)
            memcpy(fn->data, body + pos + LAUNCH_HEAD, fn->size);
        cricket_kernel_node p;
        node_params(&p, fn, body + pos);
        e = drv->add_kernel(&r->nodes[i], r->graph, i ? &r->nodes[i - 1] : NULL, i ? 1 : 0, &p);
        if (e != 0) {
            drop(drv, r);
            return e;
        }
        pos = next;
    }
    e = drv->instantiate(&r->exec, r->graph, 0);
    if (e != 0) {
        r->exec = NULL;
        drop(drv, r);
        return e;
    }
    memcpy(r->record, body, len);
    r->stream = st->stream;
    return 0;
}

/* Makes the batch `body` by `r`'s graph: 1 when launched; 0 when the batch is not of r's
 * shape or its stream is capturing (the caller makes it otherwise); else -(the CUresult) of
 * the driver call that failed, nothing launched (the caller drops r and makes the batch
 * otherwise: the launches then report their own errors). */
int cricket_replay_launch(const cricket_replay_driver *drv, cricket_replay *r,
                          const unsigned char *body, size_t len)
{
    if (len != r->len || r->exec == NULL)
        return 0;
    int same = memcmp(body, r->record, len) == 0;
    if (!same && !cricket_batch_same_shape(body, r->record, len))
        return 0;
    int status = 0;
    int e = drv->is_capturing(r->stream, &status);
    if (e != 0 || status != 0)
        return 0;    /* captured launches belong to the capture, as made one by one */
    if (!same) {
        size_t pos = 4;
        for (uint32_t i = 0; i < r->count; i++) {
            uint32_t n;
            size_t next = entry_next(body, len, pos, &n);
            const cricket_fn *fn = &r->fns[i];
            const unsigned char *at = body + pos + LAUNCH_HEAD;
            if (fn->size && memcmp(at, r->record + pos + LAUNCH_HEAD, fn->size) != 0) {
                memcpy(fn->data, at, fn->size);
                cricket_kernel_node p;
                node_params(&p, fn, body + pos);
                e = drv->set_kernel(r->exec, r->nodes[i], &p);
                if (e != 0)
                    return -e;
                memcpy(r->record + pos + LAUNCH_HEAD, at, fn->size);
            }
            pos = next;
        }
    }
    e = drv->launch(r->exec, r->stream);
    return e != 0 ? -e : 1;
}

/* Destroys r's exec and graph (its context still alive). */
void cricket_replay_free(const cricket_replay_driver *drv, cricket_replay *r)
{
    drop(drv, r);
}
