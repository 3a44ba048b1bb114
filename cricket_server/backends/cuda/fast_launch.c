/* The launches of one CU_LAUNCH_KERNEL_BATCH or CU_GRAPH_LAUNCH_BATCH call, made in C
 * (cricket_server.backends.cuda.fast_launch): the server's Python resolves each function, exec
 * and stream handle once per batch into the tables below; these loops read the XDR record
 * and call the driver for each launch without the Python interpreter in between:
 * cuLaunchKernel with the packed parameters copied into the function's parameter memory, or
 * an exec's input copies ahead of its cuGraphLaunch (graph_inputs.py). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "launch_record.h"

typedef int (*cricket_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra);

static const cricket_stream *find_stream(const cricket_stream *streams, uint32_t n, uint64_t h)
{
    for (uint32_t k = 0; k < n; k++)
        if (streams[k].handle == h)
            return &streams[k];
    return NULL;
}

/* Makes launches start..count-1 of the launch_batch `body` in order. Returns the index of the
 * first launch not made (count when all were). *err is then its CUresult, or 0 when the caller
 * must take that launch: its function or stream is not in the tables, it brings fewer
 * parameter bytes than its function takes, or the record ends early. */
uint32_t cricket_launch_batch(cricket_launch_fn launch, const unsigned char *body, size_t len,
                              uint32_t start, const cricket_fn *fns, uint32_t nfns,
                              const cricket_stream *streams, uint32_t nstreams, int *err)
{
    *err = 0;
    if (len < 4)
        return start;
    uint32_t count = be32(body);
    size_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        size_t next;
        uint32_t n = entry_end(body, len, pos, LAUNCH_HEAD, &next);
        if (next == 0)
            return i;
        const unsigned char *h = body + pos;
        if (i >= start) {
            uint64_t fh = be64(h);
            const cricket_fn *fn = NULL;
            for (uint32_t k = 0; k < nfns; k++)
                if (fns[k].handle == fh) {
                    fn = &fns[k];
                    break;
                }
            const cricket_stream *st = find_stream(streams, nstreams, be64(h + 36));
            if (fn == NULL || st == NULL || n < fn->size)
                return i;
            if (fn->size)
                memcpy(fn->data, h + LAUNCH_HEAD, fn->size);
            int r = launch(fn->func, be32(h + 8), be32(h + 12), be32(h + 16), be32(h + 20),
                           be32(h + 24), be32(h + 28), be32(h + 32), st->stream, fn->params,
                           NULL);
            if (r != 0) {
                *err = r;
                return i;
            }
        }
        pos = next;
    }
    return count;
}

/* ---- graph launches ------------------------------------------------------------------- */

typedef int (*cricket_graph_launch_fn)(void *exec, void *stream);
typedef int (*cricket_copy_fn)(uint64_t dst, const void *src, size_t n, void *stream);
typedef int (*cricket_record_fn)(void *event, void *stream);
typedef int (*cricket_event_fn)(void *event);

typedef struct {
    cricket_graph_launch_fn launch;  /* cuGraphLaunch */
    cricket_copy_fn copy;            /* cuMemcpyHtoDAsync_v2 */
    cricket_record_fn record;        /* cuEventRecord */
    cricket_event_fn query;          /* cuEventQuery */
    cricket_event_fn wait;           /* cuEventSynchronize */
} cricket_graph_driver;

typedef struct { uint64_t device, size, offset; } cricket_copy;
typedef struct { unsigned char *host; void *event; uint64_t used; } cricket_slot;

/* graph_inputs.LaunchState: an exec, its input copies and the ring of their slots */
typedef struct {
    void *exec;
    uint64_t in_total;
    uint32_t ncopies, nslots, next, started;
    void *last_stream;
    cricket_copy *copies;
    cricket_slot *slots;
} cricket_ahead;

typedef struct {
    uint64_t handle;      /* the session's exec handle */
    cricket_ahead *ahead;
} cricket_graph;

#define GRAPH_HEAD 20     /* graph_launch_args up to and with host_in's length word */
#define CUDA_ERROR_NOT_READY 600

/* One launch of `a` on `stream` with `n` input bytes at `in`: 0 when made, -1 when the caller
 * must make it (its input length or stream differ from what the loop handles), else the
 * CUresult of the driver call that failed. */
static int graph_launch_one(const cricket_graph_driver *drv, cricket_ahead *a, void *stream,
                            const unsigned char *in, uint32_t n)
{
    if (n != a->in_total)
        return -1;
    if (a->nslots) {
        if (a->started && a->last_stream != stream)
            return -1;    /* the copies first wait for the other stream: Python does that */
        uint32_t i = a->next;
        cricket_slot *slot = &a->slots[i];
        a->next = (i + 1) % a->nslots;
        if (slot->used) {
            int r = drv->query(slot->event);
            if (r == CUDA_ERROR_NOT_READY)
                r = drv->wait(slot->event);    /* the oldest queued copy */
            if (r != 0)
                return r;
        }
        memcpy(slot->host, in, n);
        a->started = 1;
        a->last_stream = stream;
        for (uint32_t k = 0; k < a->ncopies; k++) {
            const cricket_copy *c = &a->copies[k];
            int r = drv->copy(c->device, slot->host + c->offset, c->size, stream);
            if (r != 0)
                return r;
        }
        int r = drv->record(slot->event, stream);
        if (r != 0)
            return r;
        slot->used = 1;
    }
    return drv->launch(a->exec, stream);
}

/* Makes graph launches start..count-1 of the graph_launch_batch `body` in order; returns and
 * reports as cricket_launch_batch does (an exec or stream not in the tables, an input length
 * other than the exec's, a change of stream: the caller's). */
uint32_t cricket_graph_launch_batch(const cricket_graph_driver *drv, const unsigned char *body,
                                    size_t len, uint32_t start, const cricket_graph *graphs,
                                    uint32_t ngraphs, const cricket_stream *streams,
                                    uint32_t nstreams, int *err)
{
    *err = 0;
    if (len < 4)
        return start;
    uint32_t count = be32(body);
    size_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        size_t next;
        uint32_t n = entry_end(body, len, pos, GRAPH_HEAD, &next);
        if (next == 0)
            return i;
        const unsigned char *h = body + pos;
        if (i >= start) {
            uint64_t gh = be64(h);
            const cricket_graph *g = NULL;
            for (uint32_t k = 0; k < ngraphs; k++)
                if (graphs[k].handle == gh) {
                    g = &graphs[k];
                    break;
                }
            const cricket_stream *st = find_stream(streams, nstreams, be64(h + 8));
            if (g == NULL || st == NULL)
                return i;
            int r = graph_launch_one(drv, g->ahead, st->stream, h + GRAPH_HEAD, n);
            if (r != 0) {
                *err = r < 0 ? 0 : r;
                return i;
            }
        }
        pos = next;
    }
    return count;
}
