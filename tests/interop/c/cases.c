/* Test values of alltypes.x; tests/interop/cases.py holds the same values. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

#define MAX_CASES 64

static const char TEXT_PATTERN[] = "abcdefghijklmnopqrstuvwxyz0123456789";

/* n bytes (i * 7 + 3) & 0xff, as cases.py's pattern_bytes. */
static char *pattern_bytes(size_t n)
{
    char *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (char)((i * 7 + 3) & 0xff);
    return b;
}

/* n characters cycling through TEXT_PATTERN, as cases.py's pattern_text. */
static char *pattern_text(size_t n)
{
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = TEXT_PATTERN[i % (sizeof TEXT_PATTERN - 1)];
    s[n] = '\0';
    return s;
}

/* n nodes, node i = {i * i - 50, "n<i>"}, as cases.py's make_chain. */
static chain make_chain(int n)
{
    chain head = NULL;
    for (int i = n - 1; i >= 0; i--) {
        node *nd = calloc(1, sizeof *nd);
        char label[16];
        snprintf(label, sizeof label, "n%d", i);
        nd->value = i * i - 50;
        nd->label = strdup(label);
        nd->next = head;
        head = nd;
    }
    return head;
}

static void *dup_value(const void *v, size_t size)
{
    void *p = malloc(size);
    memcpy(p, v, size);
    return p;
}

static scalars scalars_zero, scalars_max, scalars_min, scalars_nan, scalars_tiny;
static arrays arrays_empty, arrays_full, arrays_pad, arrays_large;
static optionals optionals_none, optionals_some;
static chain chain_0, chain_1, chain_3, chain_100;
static by_int by_int_i, by_int_h2, by_int_h3, by_int_s, by_int_void, by_int_default, by_int_default_min;
static by_unsigned by_unsigned_void, by_unsigned_max, by_unsigned_raw, by_unsigned_default;
static by_enum by_enum_red, by_enum_green, by_enum_blue, by_enum_black;
static by_bool by_bool_true, by_bool_false;
static many many_args, many_min;
static text text_empty, text_utf8, text_long;
static quad_t hyper_min, hyper_max, hyper_minus1;
static everything everything_all;

static void build_scalars(void)
{
    scalars_zero = (scalars){0, 0, 0, 0, 0.0f, 0.0, FALSE, RED};
    scalars_max = (scalars){INT_MAX, UINT_MAX, INT64_MAX, UINT64_MAX, FLT_MAX, DBL_MAX, TRUE, BLUE};
    scalars_min = (scalars){INT_MIN, 0, INT64_MIN, 0, -INFINITY, -DBL_MAX, FALSE, BLACK};
    scalars_nan = (scalars){-1, 1, -1, 1, NAN, NAN, TRUE, GREEN};
    scalars_tiny = (scalars){1, 0x80000000u, 1, 0x8000000000000000ull, FLT_TRUE_MIN, DBL_TRUE_MIN,
                             FALSE, WHITE};
}

static void build_arrays(void)
{
    static u_quad_t full_big[] = {0, 1, UINT64_MAX};
    static double full_some[] = {1.5, -0.0, 1e300};
    static name full_names[] = {"abcdefghijklmnop", "ABCDEFGHIJKLMNOP", "0123456789abcdef",
                                "sixteen-chars-ab"};
    static bool_t full_flags[] = {TRUE, FALSE, TRUE};
    static u_quad_t pad_big[] = {42};
    static double pad_some[] = {-1.25};
    static name pad_names[] = {"a", "bc", "def"};
    static char pad_var[] = {1, 2, 3};
    static char pad_any[] = {(char)0xab};
    static bool_t pad_flags[] = {FALSE};
    const unsigned large_big_len = 1000;
    u_quad_t *large_big = malloc(large_big_len * sizeof *large_big);

    arrays_empty = (arrays){0};
    arrays_empty.short_text = "";
    arrays_empty.long_text = "";

    arrays_full = (arrays){.fixed_ints = {INT_MIN, 0, INT_MAX},
                           .big = {3, full_big},
                           .some = {3, full_some},
                           .names = {4, full_names},
                           .fixed_blob = {0x00, 0x01, (char)0xfe, (char)0xff, (char)0x80},
                           .var_blob = {8, pattern_bytes(8)},
                           .any_blob = {1000, pattern_bytes(1000)},
                           .short_text = "0123456789ABCDEF",
                           .long_text = pattern_text(1000),
                           .colors = {BLACK, WHITE},
                           .flags = {3, full_flags}};

    arrays_pad = (arrays){.fixed_ints = {1, 2, 3},
                          .big = {1, pad_big},
                          .some = {1, pad_some},
                          .names = {3, pad_names},
                          .fixed_blob = {'h', 'e', 'l', 'l', 'o'},
                          .var_blob = {3, pad_var},
                          .any_blob = {1, pad_any},
                          .short_text = "ab",
                          .long_text = "caf\xc3\xa9",
                          .colors = {GREEN, BLUE},
                          .flags = {1, pad_flags}};

    for (unsigned i = 0; i < large_big_len; i++)
        large_big[i] = (u_quad_t)i * 0x0101010101010101ull;
    arrays_large = arrays_pad;
    arrays_large.big.big_len = large_big_len;
    arrays_large.big.big_val = large_big;
    arrays_large.any_blob.anybytes_len = 100000;
    arrays_large.any_blob.anybytes_val = pattern_bytes(100000);
    arrays_large.long_text = pattern_text(70001);
}

static void build_optionals(void)
{
    static int minus_seven = -7;
    static name opt_name = "opt-name";

    chain_0 = NULL;
    chain_1 = make_chain(1);
    chain_3 = make_chain(3);
    chain_100 = make_chain(100);
    optionals_none = (optionals){NULL, NULL, NULL, NULL};
    optionals_some = (optionals){&minus_seven, &opt_name, &scalars_max, chain_3};
}

static void build_unions(void)
{
    by_int_i = (by_int){.kind = 1, .by_int_u.i = INT_MIN};
    by_int_h2 = (by_int){.kind = 2, .by_int_u.h = INT64_MAX};
    by_int_h3 = (by_int){.kind = 3, .by_int_u.h = INT64_MIN};
    by_int_s = (by_int){.kind = NEGATIVE, .by_int_u.s = "sixteen-chars-ab"};
    by_int_void = (by_int){.kind = 0};
    by_int_default = (by_int){.kind = 99, .by_int_u.d = 2.5};
    by_int_default_min = (by_int){.kind = INT_MIN, .by_int_u.d = -0.0};

    by_unsigned_void = (by_unsigned){.tag = 0};
    by_unsigned_max = (by_unsigned){.tag = 0xFFFFFFFFu, .by_unsigned_u.uh = UINT64_MAX};
    by_unsigned_raw = (by_unsigned){.tag = 7, .by_unsigned_u.raw = {3, "\x00\xff\x10"}};
    by_unsigned_default = (by_unsigned){.tag = 12345};

    by_enum_red = (by_enum){.c = RED, .by_enum_u.s = scalars_max};
    by_enum_green = (by_enum){.c = GREEN, .by_enum_u.l = chain_3};
    by_enum_blue = (by_enum){.c = BLUE, .by_enum_u.l = NULL};
    by_enum_black = (by_enum){.c = BLACK};

    by_bool_true = (by_bool){.present = TRUE, .by_bool_u.a = arrays_pad};
    by_bool_false = (by_bool){.present = FALSE};
}

static void build_others(void)
{
    many_args = (many){INT_MAX, "sixteen-chars-ab", UINT64_MAX, chain_3, BLACK, -DBL_MAX};
    many_min = (many){INT_MIN, "", 0, NULL, WHITE, NAN};
    text_empty = "";
    text_utf8 = "gr\xc3\xbc\xc3\x9f" "e, \xe4\xb8\x96\xe7\x95\x8c";
    text_long = pattern_text(100000);
    hyper_min = INT64_MIN;
    hyper_max = INT64_MAX;
    hyper_minus1 = -1;
    everything_all = (everything){scalars_nan, arrays_full, optionals_some, by_int_s,
                                  by_unsigned_max, by_enum_green, by_bool_true, many_args};
}

size_t cases_build(struct xcase **table)
{
    static struct xcase cases[MAX_CASES];
    static size_t n;
    if (n) {
        *table = cases;
        return n;
    }
    build_scalars();
    build_arrays();
    build_optionals();
    build_unions();
    build_others();
#define CASE(var, T, xdr) cases[n++] = (struct xcase){#var, #T, (xdrproc_t)(xdr), dup_value(&var, sizeof var), sizeof var}
    CASE(scalars_zero, scalars, xdr_scalars);
    CASE(scalars_max, scalars, xdr_scalars);
    CASE(scalars_min, scalars, xdr_scalars);
    CASE(scalars_nan, scalars, xdr_scalars);
    CASE(scalars_tiny, scalars, xdr_scalars);
    CASE(arrays_empty, arrays, xdr_arrays);
    CASE(arrays_full, arrays, xdr_arrays);
    CASE(arrays_pad, arrays, xdr_arrays);
    CASE(arrays_large, arrays, xdr_arrays);
    CASE(optionals_none, optionals, xdr_optionals);
    CASE(optionals_some, optionals, xdr_optionals);
    CASE(chain_0, chain, xdr_chain);
    CASE(chain_1, chain, xdr_chain);
    CASE(chain_3, chain, xdr_chain);
    CASE(chain_100, chain, xdr_chain);
    CASE(by_int_i, by_int, xdr_by_int);
    CASE(by_int_h2, by_int, xdr_by_int);
    CASE(by_int_h3, by_int, xdr_by_int);
    CASE(by_int_s, by_int, xdr_by_int);
    CASE(by_int_void, by_int, xdr_by_int);
    CASE(by_int_default, by_int, xdr_by_int);
    CASE(by_int_default_min, by_int, xdr_by_int);
    CASE(by_unsigned_void, by_unsigned, xdr_by_unsigned);
    CASE(by_unsigned_max, by_unsigned, xdr_by_unsigned);
    CASE(by_unsigned_raw, by_unsigned, xdr_by_unsigned);
    CASE(by_unsigned_default, by_unsigned, xdr_by_unsigned);
    CASE(by_enum_red, by_enum, xdr_by_enum);
    CASE(by_enum_green, by_enum, xdr_by_enum);
    CASE(by_enum_blue, by_enum, xdr_by_enum);
    CASE(by_enum_black, by_enum, xdr_by_enum);
    CASE(by_bool_true, by_bool, xdr_by_bool);
    CASE(by_bool_false, by_bool, xdr_by_bool);
    CASE(many_args, many, xdr_many);
    CASE(many_min, many, xdr_many);
    CASE(text_empty, text, xdr_text);
    CASE(text_utf8, text, xdr_text);
    CASE(text_long, text, xdr_text);
    CASE(hyper_min, hyper, xdr_quad_t);
    CASE(hyper_max, hyper, xdr_quad_t);
    CASE(hyper_minus1, hyper, xdr_quad_t);
    CASE(everything_all, everything, xdr_everything);
#undef CASE
    *table = cases;
    return n;
}

const struct xcase *cases_find(const struct xcase *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

int xdr_encode_alloc(xdrproc_t xdr, void *value, char **buf, unsigned *len)
{
    XDR x;
    unsigned long size = xdr_sizeof(xdr, value);
    *buf = malloc(size ? size : 1);
    xdrmem_create(&x, *buf, (u_int)size, XDR_ENCODE);
    if (!xdr(&x, value)) {
        free(*buf);
        return -1;
    }
    *len = xdr_getpos(&x);
    xdr_destroy(&x);
    return 0;
}

int xdr_same(xdrproc_t xdr, void *a, void *b)
{
    char *ba, *bb;
    unsigned la, lb;
    int same;
    if (xdr_encode_alloc(xdr, a, &ba, &la) != 0)
        return 0;
    if (xdr_encode_alloc(xdr, b, &bb, &lb) != 0) {
        free(ba);
        return 0;
    }
    same = la == lb && memcmp(ba, bb, la) == 0;
    free(ba);
    free(bb);
    return same;
}
