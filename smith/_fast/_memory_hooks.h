/* Memory accounting by lifetime scope: allocator hooks and the scope table.

   Every CPython allocator domain (raw, mem, object) is wrapped with PyMem_SetAllocator.
   Each block gets a 16-byte header in front of what the caller sees:

       word 0: requested size << 16 | owning scope slot
       word 1: check = mix(word 0, the caller's pointer, a per-process random key)

   so a block is charged to the scope that allocated it for its whole life: a free or a
   resize in any scope, on any thread, finds its owner and size in the header, with no
   lookup table. 16 bytes keep the 16-byte alignment every allocator here returns.

   Blocks allocated before the hooks were installed have no header. They are recognised
   because the 16 bytes before them do not hold a valid check for their own address:
   - a valid check for address p is only ever written for a block we return at p, and it
     is wiped (word 1 zeroed) before that block is freed or moved, so no stale valid
     header exists anywhere in the heap;
   - a block that predates the hooks was live at p before any header was written, and
     no block of ours can be returned at p while it lives (the two would overlap);
   - so the bytes before a foreign block hold a valid check only if memory that is not a
     header happens to equal mix(word 0, p, key) for a secret key (never 0, so a wiped
     header never passes): 1 in 2^63 per free of a foreign block. That is the residual
     risk, documented in docs/memory.md.
   A foreign block is freed by the previous allocator; resized, it is moved into a block
   with a header (charged to the current scope), so the foreign population only shrinks.
   Reading the 16 bytes before a foreign block is safe for the allocators CPython 3.11
   ships (pymalloc pools and glibc chunks both keep a header there).

   The hooks are installed once and never removed: removing them would leave blocks with
   headers for allocators that do not know about them.

   Nested calls: pymalloc hands large requests to PyMem_RawMalloc, which is our raw hook
   again. A thread-local depth marks calls made from inside a hook; they pass straight
   through (no header, no accounting), as tracemalloc does, so each block is counted
   once, at the API the caller used.

   Accounting never allocates, never locks and never aborts: a fixed table of slots, a
   thread-local stack of scopes, and ceilings that only count crossings. Each slot has
   two groups of counters. The raw domain is called without the GIL, from any thread:
   its group is updated with atomic read-modify-writes. The mem and object domains are
   only ever called with the GIL held (the C API requires it, and pymalloc beneath them
   is not thread-safe either), so the GIL already serialises every update of their
   group: plain loads and stores (relaxed atomics, which compile to plain moves) keep
   them exact at a fraction of the cost. Reports add the two groups. Opening and closing
   scopes (slot management) happens with the GIL held. */

#ifndef SMITH_MEMORY_HOOKS_H
#define SMITH_MEMORY_HOOKS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SM_SLOTS 4096
#define SM_KINDS 6 /* process, session, turn, kernel, frame, io: slots 0..5 are theirs */
#define SM_DEPTH 64
#define SM_HEADER 16
#define SM_NAME 48
#define SM_MAX_SIZE ((((uint64_t)1) << 48) - 1 - SM_HEADER)

#define SM_FREE 0
#define SM_OPEN 1
#define SM_CLOSED 2

#define SM_ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
#define SM_SUB(x, v) __atomic_fetch_sub(&(x), (v), __ATOMIC_RELAXED)
#define SM_LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define SM_PEEK(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
/* An update only ever made with the GIL held: a plain load, add and store. */
#define SM_BUMP(x, v) __atomic_store_n(&(x), SM_PEEK(x) + (v), __ATOMIC_RELAXED)
/* Add to a counter of group `gil` (0: raw, atomic; 1: under the GIL) and return it. */
#define SM_COUNT(gil, x, v) \
    ((gil) ? (SM_BUMP(x, v), SM_PEEK(x)) : __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED))

typedef struct {
    uint64_t count;     /* blocks allocated (malloc, calloc, adopted foreign blocks) */
    uint64_t frees;     /* of those, freed (so live blocks = count - frees) */
    uint64_t allocated; /* bytes requested, resizes counting their growth */
    uint64_t live;      /* bytes in live blocks */
    uint64_t hits;      /* times live bytes crossed the kind's ceiling upwards */
} sm_group;

/* Two cache lines per slot, so threads in different scopes do not share lines. */
typedef struct {
    sm_group g[2];    /* [0] the raw domain (atomic), [1] mem and object (under the GIL) */
    uint64_t peak;    /* the most live bytes (both groups) have been */
    uint64_t entered; /* threads (or coroutine steps) inside it now */
    uint32_t state;
    uint32_t kind;
} __attribute__((aligned(64))) sm_slot;

typedef struct {
    int nested;
    int depth; /* may exceed SM_DEPTH: scopes past it are not recorded, only counted */
    uint64_t count, bytes; /* this thread's allocations, whatever the scope */
    uint16_t stack[SM_DEPTH];
} sm_thread;

static sm_slot sm_slots[SM_SLOTS];
static char sm_names[SM_SLOTS][SM_NAME];
static uint32_t sm_gens[SM_SLOTS]; /* bumped each time a slot is given out */
static uint64_t sm_ceiling[SM_KINDS];
static uint64_t sm_key;
static uint64_t sm_foreign_frees, sm_adopted;
static int sm_installed;
static unsigned sm_cursor = SM_KINDS;
static PyMemAllocatorEx sm_prev[3];
static __thread sm_thread sm_tls;

static inline uint64_t sm_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t sm_check(const void *p, uint64_t w0) {
    return sm_mix(w0 ^ sm_key ^ ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL)) | 1;
}

static inline uint16_t sm_current(sm_thread *t) {
    int d = t->depth;
    if (d <= 0) return 0;
    return t->stack[(d < SM_DEPTH ? d : SM_DEPTH) - 1];
}

/* Whether `p` carries our header; if so its owner and size. */
static inline int sm_ours(const void *p, uint16_t *slot, uint64_t *size) {
    uint64_t w[2];
    memcpy(w, (const char *)p - SM_HEADER, sizeof w);
    if (w[1] != sm_check(p, w[0]) || (w[0] & 0xffff) >= SM_SLOTS) return 0;
    *slot = (uint16_t)(w[0] & 0xffff);
    *size = w[0] >> 16;
    return 1;
}

static inline void *sm_stamp(char *q, uint16_t slot, uint64_t size) {
    char *p = q + SM_HEADER;
    uint64_t w[2];
    w[0] = size << 16 | slot;
    w[1] = sm_check(p, w[0]);
    memcpy(q, w, sizeof w);
    return p;
}

static inline void sm_wipe(void *p) {
    uint64_t zero = 0;
    memcpy((char *)p - 8, &zero, 8);
}

/* Live bytes of a slot grew by `by` in group `gil`: raise the peak, count a crossing. */
static inline void sm_grow(sm_slot *s, int gil, uint64_t by) {
    uint64_t live = SM_COUNT(gil, s->g[gil].live, by) + SM_PEEK(s->g[!gil].live);
    uint64_t peak = SM_PEEK(s->peak);
    while (live > peak &&
           !__atomic_compare_exchange_n(&s->peak, &peak, live, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    uint64_t ceiling = SM_PEEK(sm_ceiling[s->kind]);
    if (ceiling && live > ceiling && live - by <= ceiling) SM_COUNT(gil, s->g[gil].hits, 1);
}

static inline void sm_charge(sm_thread *t, int gil, uint16_t slot, uint64_t size) {
    sm_slot *s = &sm_slots[slot];
    SM_COUNT(gil, s->g[gil].count, 1);
    SM_COUNT(gil, s->g[gil].allocated, size);
    sm_grow(s, gil, size);
    t->count++;
    t->bytes += size;
}

/* The last thing a free does to its owner's slot, with release order: a slot is
   recycled only once it sees every block freed (sm_open). */
static inline void sm_discharge(int gil, uint16_t slot, uint64_t size) {
    sm_group *g = &sm_slots[slot].g[gil];
    if (gil) {
        SM_BUMP(g->live, -size);
        __atomic_store_n(&g->frees, SM_PEEK(g->frees) + 1, __ATOMIC_RELEASE);
    } else {
        SM_SUB(g->live, size);
        __atomic_fetch_add(&g->frees, 1, __ATOMIC_RELEASE);
    }
}

static inline void *sm_alloc(int d, size_t nelem, size_t elsize, int zero) {
    PyMemAllocatorEx *prev = &sm_prev[d];
    sm_thread *t = &sm_tls;
    if (t->nested) {
        return zero ? prev->calloc(prev->ctx, nelem, elsize) : prev->malloc(prev->ctx, nelem);
    }
    uint64_t n = nelem;
    if (zero) {
        if (elsize && nelem > SM_MAX_SIZE / elsize) return NULL;
        n = (uint64_t)nelem * elsize;
    }
    if (n > SM_MAX_SIZE) return NULL;
    t->nested++;
    char *q = zero ? prev->calloc(prev->ctx, 1, n + SM_HEADER)
                   : prev->malloc(prev->ctx, n + SM_HEADER);
    t->nested--;
    if (q == NULL) return NULL;
    uint16_t slot = sm_current(t);
    sm_charge(t, d != 0, slot, n);
    return sm_stamp(q, slot, n);
}

static inline void sm_free(int d, void *p) {
    PyMemAllocatorEx *prev = &sm_prev[d];
    sm_thread *t = &sm_tls;
    uint16_t slot;
    uint64_t size;
    if (p == NULL) return;
    if (t->nested) {
        prev->free(prev->ctx, p);
        return;
    }
    t->nested++;
    if (sm_ours(p, &slot, &size)) {
        sm_wipe(p);
        sm_discharge(d != 0, slot, size);
        prev->free(prev->ctx, (char *)p - SM_HEADER);
    } else {
        SM_ADD(sm_foreign_frees, 1);
        prev->free(prev->ctx, p);
    }
    t->nested--;
}

static inline void *sm_realloc(int d, void *p, size_t n) {
    PyMemAllocatorEx *prev = &sm_prev[d];
    sm_thread *t = &sm_tls;
    uint16_t slot;
    uint64_t size;
    if (t->nested) return prev->realloc(prev->ctx, p, n);
    if (p == NULL) return sm_alloc(d, n, 0, 0);
    if (n > SM_MAX_SIZE) return NULL;
    t->nested++;
    if (!sm_ours(p, &slot, &size)) {
        /* A block from before the hooks: the previous allocator resizes it (it alone
           knows its size), then it moves into a block with a header. */
        char *r = prev->realloc(prev->ctx, p, n);
        char *q = r ? prev->malloc(prev->ctx, n + SM_HEADER) : NULL;
        if (q != NULL) {
            memcpy(q + SM_HEADER, r, n);
            prev->free(prev->ctx, r);
        }
        t->nested--;
        if (q == NULL) return r; /* still foreign, still correct */
        SM_ADD(sm_adopted, 1);
        slot = sm_current(t);
        sm_charge(t, d != 0, slot, n);
        return sm_stamp(q, slot, n);
    }
    uint64_t saved;
    memcpy(&saved, (char *)p - 8, 8);
    sm_wipe(p); /* a moved block leaves no valid header behind */
    char *q = prev->realloc(prev->ctx, (char *)p - SM_HEADER, n + SM_HEADER);
    t->nested--;
    if (q == NULL) {
        memcpy((char *)p - 8, &saved, 8);
        return NULL;
    }
    sm_slot *s = &sm_slots[slot];
    int gil = d != 0;
    if (n >= size) {
        SM_COUNT(gil, s->g[gil].allocated, n - size);
        sm_grow(s, gil, n - size);
        t->bytes += n - size;
    } else {
        SM_COUNT(gil, s->g[gil].live, -(size - n));
    }
    return sm_stamp(q, slot, n);
}

#define SM_DOMAIN(NAME, D)                                                                   \
    static void *sm_##NAME##_malloc(void *ctx, size_t n) {                                \
        (void)ctx;                                                                         \
        return sm_alloc(D, n, 0, 0);                                                       \
    }                                                                                      \
    static void *sm_##NAME##_calloc(void *ctx, size_t nelem, size_t elsize) {             \
        (void)ctx;                                                                         \
        return sm_alloc(D, nelem, elsize, 1);                                              \
    }                                                                                      \
    static void *sm_##NAME##_realloc(void *ctx, void *p, size_t n) {                      \
        (void)ctx;                                                                         \
        return sm_realloc(D, p, n);                                                        \
    }                                                                                      \
    static void sm_##NAME##_free(void *ctx, void *p) {                                    \
        (void)ctx;                                                                         \
        sm_free(D, p);                                                                     \
    }

SM_DOMAIN(raw, 0)
SM_DOMAIN(mem, 1)
SM_DOMAIN(obj, 2)

/* Install the hooks (with the GIL held); once per process. Our functions ignore their
   context and take the previous allocator from sm_prev, so a thread that reads the
   allocator struct while it is being replaced calls a consistent pair either way. */
static int sm_install(uint64_t key) {
    static const PyMemAllocatorDomain domains[3] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM,
                                                    PYMEM_DOMAIN_OBJ};
    if (sm_installed) return 0;
    sm_key = key;
    sm_slots[0].state = SM_OPEN;
    for (int k = 0; k < SM_KINDS; k++) {
        sm_slots[k].state = SM_OPEN;
        sm_slots[k].kind = (uint32_t)k;
    }
    for (int i = 0; i < 3; i++) PyMem_GetAllocator(domains[i], &sm_prev[i]);
    PyMemAllocatorEx ours[3] = {
        {sm_prev[0].ctx, sm_raw_malloc, sm_raw_calloc, sm_raw_realloc, sm_raw_free},
        {sm_prev[1].ctx, sm_mem_malloc, sm_mem_calloc, sm_mem_realloc, sm_mem_free},
        {sm_prev[2].ctx, sm_obj_malloc, sm_obj_calloc, sm_obj_realloc, sm_obj_free},
    };
    __atomic_store_n(&sm_installed, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) PyMem_SetAllocator(domains[i], &ours[i]);
    return 1;
}

/* -- scopes on this thread (any thread, GIL or not) ------------------------------- */

static inline void sm_enter(uint16_t slot) {
    sm_thread *t = &sm_tls;
    if (t->depth < SM_DEPTH) t->stack[t->depth] = slot;
    t->depth++;
    __atomic_fetch_add(&sm_slots[slot].entered, 1, __ATOMIC_RELAXED);
}

/* Leaves `slot`: the innermost entry of it, so an interleaved leave (two coroutines on
   one thread) cannot pop someone else's scope. */
static inline void sm_leave(uint16_t slot) {
    sm_thread *t = &sm_tls;
    int d = t->depth;
    if (d <= 0) return;
    if (d <= SM_DEPTH) {
        int i = d - 1;
        while (i >= 0 && t->stack[i] != slot) i--;
        if (i < 0) return; /* not entered on this thread */
        memmove(&t->stack[i], &t->stack[i + 1], (size_t)(d - 1 - i) * sizeof t->stack[0]);
    }
    t->depth = d - 1;
    __atomic_fetch_sub(&sm_slots[slot].entered, 1, __ATOMIC_RELEASE);
}

/* -- the table (GIL held) ---------------------------------------------------------- */

/* Adds a recycled slot's figures to its kind's slot (the kind's row then stands for
   every scope of that kind no longer listed on its own). */
static void sm_fold(sm_slot *into, const sm_slot *s) {
    for (int gil = 0; gil < 2; gil++) { /* into the raw group: atomic either way */
        SM_ADD(into->g[0].count, s->g[gil].count);
        SM_ADD(into->g[0].frees, s->g[gil].frees);
        SM_ADD(into->g[0].allocated, s->g[gil].allocated);
        SM_ADD(into->g[0].hits, s->g[gil].hits);
    }
    uint64_t peak = SM_PEEK(into->peak);
    while (s->peak > peak &&
           !__atomic_compare_exchange_n(&into->peak, &peak, s->peak, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
}

/* A slot for a new scope: the next one from a rotating cursor that is free, or closed
   with no thread in it and no block of it live (its figures are added to its kind's
   slot first: the oldest scopes go first); failing all, the kind's own slot, so opening
   a scope never fails. */
static uint16_t sm_open(uint32_t kind, const char *name, size_t len) {
    if (kind >= SM_KINDS) kind = 0;
    uint16_t found = 0;
    for (unsigned k = 0; k < SM_SLOTS - SM_KINDS; k++) {
        unsigned i = SM_KINDS + (sm_cursor - SM_KINDS + k) % (SM_SLOTS - SM_KINDS);
        sm_slot *s = &sm_slots[i];
        if (s->state == SM_FREE) {
            found = (uint16_t)i;
            break;
        }
        if (s->state == SM_CLOSED && SM_LOAD(s->entered) == 0 &&
            SM_LOAD(s->g[0].frees) + SM_LOAD(s->g[1].frees) ==
                SM_LOAD(s->g[0].count) + SM_LOAD(s->g[1].count)) {
            sm_fold(&sm_slots[s->kind], s);
            found = (uint16_t)i;
            break;
        }
    }
    if (!found) return (uint16_t)kind;
    sm_cursor = found + 1u;
    sm_slot *s = &sm_slots[found];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    if (len >= SM_NAME) len = SM_NAME - 1;
    memcpy(sm_names[found], name, len);
    sm_names[found][len] = 0;
    sm_gens[found]++;
    __atomic_store_n(&s->state, SM_OPEN, __ATOMIC_RELEASE);
    return found;
}

static void sm_close(uint16_t slot) {
    if (slot >= SM_KINDS && sm_slots[slot].state == SM_OPEN) sm_slots[slot].state = SM_CLOSED;
}

/* count, frees, allocated, live, peak, hits: both groups added */
static void sm_read(uint16_t slot, uint64_t out[6]) {
    sm_slot *s = &sm_slots[slot];
    out[0] = SM_PEEK(s->g[0].count) + SM_PEEK(s->g[1].count);
    out[1] = SM_PEEK(s->g[0].frees) + SM_PEEK(s->g[1].frees);
    out[2] = SM_PEEK(s->g[0].allocated) + SM_PEEK(s->g[1].allocated);
    out[3] = SM_PEEK(s->g[0].live) + SM_PEEK(s->g[1].live);
    out[4] = SM_PEEK(s->peak);
    out[5] = SM_PEEK(s->g[0].hits) + SM_PEEK(s->g[1].hits);
}

#endif
