/* The launches of one CU_LAUNCH_KERNEL_BATCH call, made in C (cricket_server.backends.cuda.
 * fast_launch): the server's Python resolves each function and stream handle once per batch
 * into the tables below; this loop reads the XDR launch_batch record, copies each launch's
 * packed parameters into its function's parameter memory and calls cuLaunchKernel, without
 * the Python interpreter in between. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*cricket_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra);

typedef struct {
    uint64_t handle;      /* the session's function handle */
    void *func;           /* its CUfunction */
    void **params;        /* kernelParams: pointers into `data` (NULL: no parameters) */
    unsigned char *data;  /* the function's parameter memory */
    uint64_t size;        /* bytes of parameters it takes */
} cricket_fn;

typedef struct {
    uint64_t handle;      /* the session's stream handle (0: the legacy stream) */
    void *stream;         /* its CUstream */
} cricket_stream;

#define LAUNCH_HEAD 48    /* launch_args up to and with the params' length word */

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t be64(const unsigned char *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
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
        if (len - pos < LAUNCH_HEAD)
            return i;
        const unsigned char *h = body + pos;
        uint32_t n = be32(h + 44);
        size_t pad = (4 - (n & 3)) & 3;
        if ((size_t)n > len - pos - LAUNCH_HEAD || pad > len - pos - LAUNCH_HEAD - n)
            return i;
        size_t next = pos + LAUNCH_HEAD + n + pad;
        if (i >= start) {
            uint64_t fh = be64(h), sh = be64(h + 36);
            const cricket_fn *fn = NULL;
            const cricket_stream *st = NULL;
            for (uint32_t k = 0; k < nfns; k++)
                if (fns[k].handle == fh) {
                    fn = &fns[k];
                    break;
                }
            for (uint32_t k = 0; k < nstreams; k++)
                if (streams[k].handle == sh) {
                    st = &streams[k];
                    break;
                }
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
