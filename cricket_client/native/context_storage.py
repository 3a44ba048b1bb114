"""The CUDA runtime's context-local storage (its private table's put, delete and get), kept in C.

The runtime looks its per-context state up with the table's get before nearly every call
(CuPy, PyTorch and nvcc-built programs: several times a step), mostly for the current
context (a NULL context). The entries live in a C table the library's Python side fills
(export_slots.cls_put and cls_delete, which keep their own copy), so a get is answered in C
when its context is known there: given, or the calling thread's current one while the C
copy of the context answers holds (known_context; after the interpreter's exit as noted at
the exit: at_exit). Otherwise, and when more entries were stored than the table
holds, the get goes to Python as every slot does.
"""

from __future__ import annotations

from .known_context import CONTEXT

__all__ = ["STORAGE_C", "STORAGE_CDEF", "STORAGE_SIZE", "storage_get_line"]

STORAGE_SIZE = 1024  # entries held in C; beyond that gets go to Python

STORAGE_C = rf"""
static pthread_mutex_t cricket_storage_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {{ uintptr_t ctx, key, value; }} cricket_storage[{STORAGE_SIZE}];
static int cricket_stored = 0, cricket_storage_overflow = 0;
static void cricket_storage_after_fork(void) {{  /* the child: a lock held by a parent's thread */
    pthread_mutex_init(&cricket_storage_lock, NULL);
}}
static void cricket_storage_put(uintptr_t ctx, uintptr_t key, uintptr_t value) {{
    pthread_mutex_lock(&cricket_storage_lock);
    int i = 0;
    while (i < cricket_stored && !(cricket_storage[i].ctx == ctx && cricket_storage[i].key == key)) i++;
    if (i == cricket_stored) {{
        if (i == {STORAGE_SIZE}) cricket_storage_overflow = 1;
        else {{ cricket_storage[i].ctx = ctx; cricket_storage[i].key = key; cricket_stored++; }}
    }}
    if (i < {STORAGE_SIZE}) cricket_storage[i].value = value;
    pthread_mutex_unlock(&cricket_storage_lock);
}}
static void cricket_storage_delete(uintptr_t ctx, uintptr_t key) {{
    pthread_mutex_lock(&cricket_storage_lock);
    for (int i = 0; i < cricket_stored; i++)
        if (cricket_storage[i].ctx == ctx && cricket_storage[i].key == key) {{
            cricket_storage[i] = cricket_storage[--cricket_stored];
            break;
        }}
    pthread_mutex_unlock(&cricket_storage_lock);
}}
/* 1: found (*value set), 0: not stored, -1: not known here (the table overflowed) */
static int cricket_storage_find(uintptr_t ctx, uintptr_t key, uintptr_t *value) {{
    int found = 0;
    pthread_mutex_lock(&cricket_storage_lock);
    for (int i = 0; i < cricket_stored; i++)
        if (cricket_storage[i].ctx == ctx && cricket_storage[i].key == key) {{
            *value = cricket_storage[i].value; found = 1; break;
        }}
    if (!found && cricket_storage_overflow) found = -1;
    pthread_mutex_unlock(&cricket_storage_lock);
    return found;
}}
"""
STORAGE_CDEF = """
void cricket_storage_put(uintptr_t ctx, uintptr_t key, uintptr_t value);
void cricket_storage_delete(uintptr_t ctx, uintptr_t key);
"""


def storage_get_line(table: int, slot: int) -> str:
    """The first lines of cricket_export_call: the storage's get (table `table`, slot `slot`:
    void **value, CUcontext ctx, void *key) answered in C where it can be."""
    return (
        f"    if (t == {table} && s == {slot} && n == 3 && a[0] && !cricket_forked && !cricket_other_python) {{\n"
        "        uintptr_t ctx = a[1], value = 0;\n"
        f"        if (!ctx && !cricket_known({CONTEXT}, &ctx)) ctx = 0;\n"
        "        int found = ctx ? cricket_storage_find(ctx, a[2], &value) : -1;\n"
        "        if (found >= 0) {\n"
        "            if (found) *(uintptr_t *)a[0] = value;\n"
        "            CUresult r = found ? 0 : 400;  /* CUDA_ERROR_INVALID_HANDLE: none stored */\n"
        "            return cricket_finalized ? cricket_after_exit(\"context-local storage get\", r) : r;\n"
        "        }\n"
        "    }"
    )
