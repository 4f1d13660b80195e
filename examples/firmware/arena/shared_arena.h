/* shared_arena.h: one arena for kws and the autoencoder, which never run at the same time,
 * as large as the larger of their arenas and aligned for both. (With SCons, onnxcc writes
 * this file itself: env.OnnxSharedArena('shared_arena', [kws, autoencoder]).) */
#ifndef SHARED_ARENA_H
#define SHARED_ARENA_H

#include <stdint.h>

#include "autoencoder.h"
#include "kws.h"

#define SHARED_ARENA_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SHARED_ARENA_BYTES SHARED_ARENA_MAX(KWS_ARENA_BYTES, AUTOENCODER_ARENA_BYTES)
#define SHARED_ARENA_ALIGN SHARED_ARENA_MAX(KWS_ARENA_ALIGN, AUTOENCODER_ARENA_ALIGN)

extern uint8_t shared_arena[SHARED_ARENA_BYTES];

#endif /* SHARED_ARENA_H */
