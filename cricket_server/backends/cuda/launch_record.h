/* What fast_launch.c and launch_replay.c share: their tables of functions and streams (filled
 * by the server's Python, cricket_server.backends.cuda.fast_launch) and the reading of a
 * launch_batch record (rpc_spec/cricket.x: a count, then each launch_args entry). */
#ifndef CRICKET_LAUNCH_RECORD_H
#define CRICKET_LAUNCH_RECORD_H
#include <stddef.h>
#include <stdint.h>

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

static inline uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t be64(const unsigned char *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

/* The length of the opaque whose length word is at `at` (`head` bytes into an entry at `pos`
 * of `len`), and in *next where the entry after it starts; 0 with *next 0 when the record
 * ends inside the entry. */
static inline uint32_t entry_end(const unsigned char *body, size_t len, size_t pos,
                                 size_t head, size_t *next)
{
    *next = 0;
    if (len - pos < head)
        return 0;
    uint32_t n = be32(body + pos + head - 4);
    size_t pad = (4 - (n & 3)) & 3;
    if ((size_t)n > len - pos - head || pad > len - pos - head - n)
        return 0;
    *next = pos + head + n + pad;
    return n;
}

#endif
