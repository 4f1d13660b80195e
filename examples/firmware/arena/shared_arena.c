/* shared_arena.c: the arena of shared_arena.h. */
#include <stdint.h>

#include "shared_arena.h"

uint8_t shared_arena[SHARED_ARENA_BYTES] __attribute__((aligned(SHARED_ARENA_ALIGN)));
