/* The CPU fast path of the encoders in bgtrain/encoding.py and bgtrain/gnubg_inputs.py: one pass over
 * the int8 board rows, integer work on point bit masks and small tables, float32 rows out.
 *
 * The torch code stays the reference (it is what the ONNX and TorchScript exports and CUDA run); this
 * kernel must give the same float32 values bit for bit (tests/test_fast_encoders.py). So every unit is
 * computed as the reference computes it: the same integer counts (exact in float32 there too), then the
 * same float32 operations in the same order (a division by 167.0f, 1.0f - x / 36.0f, x * x for a
 * square). Built with -ffp-contract=off so that no multiply-add is fused.
 *
 * Board layout (engine/board.py): column 0 the opponent's bar (<= 0), 1..24 the points from the mover's
 * side (> 0 the mover's, < 0 the opponent's), 25 the mover's bar, 26 and 27 checkers in hand (mover >= 0,
 * opponent <= 0).
 *
 * Python entry point: encode(kind, board, rows, checkers_per_side, out, threads[, skip]), with ``board`` and
 * ``out`` objects exposing a C-contiguous buffer (numpy views of the tensors): int8[rows, 28] in,
 * float32[rows, width(kind)] out. The GIL is released while it runs; ``threads`` > 1 splits the rows.
 * phases(board, rows, out): each position's phase (engine.position_kinds.position_phases, the phase model's
 * routing) into int64[rows].
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum {
    WIDTH = 28,
    OPPONENT_BAR = 0,
    MOVER_BAR = 25,
    MOVER_IN_HAND = 26,
    OPPONENT_IN_HAND = 27,
    HALF = 25,             /* gnubg_inputs.FEATURES per side */
    TESAURO = 198,
    RACE_OFF_UNITS = 14,
    POINTS_MASK = (1 << 24) - 1,
    MASK25 = (1 << 25) - 1,
};

/* The kinds: each encoder's whole row ("encode") or its non-separable units ("extra_units"). */
enum {
    KIND_CONTACT, KIND_CONTACT_EXTRA, KIND_PLUS, KIND_PLUS_EXTRA, KIND_RACE, KIND_RACE_EXTRA, KIND_TESAURO,
    KIND_COUNT
};
static const int KIND_WIDTH[KIND_COUNT] = {248, 50, 207, 7, 230, 28, 198};

/* ------------------------------------------------------------------------------------------------ */
/* Tables, built once at import. */

/* Escapes (GNU's anEscapes and anEscapes1, our own construction; gnubg_inputs.escape_tables): indexed by
 * a 12-bit pattern whose bit k is set when the point k + 1 pips ahead of a checker is blocked. */
static uint8_t escapes[4096], escapes_past_first[4096];
/* ``escapes`` indexed by the bit-reversed pattern (bit 11 - k for k pips ahead). */
static uint8_t escapes_reversed[4096];

/* Tesauro's four units of a point holding n of a side's checkers (n <= 0: none of that side's). */
static float point_units[16][4];

static uint8_t byte_reversed[256];

static void build_tables(void) {
    for (int pattern = 0; pattern < 4096; pattern++) {
        int nearest = -1;
        for (int k = 0; k < 12 && nearest < 0; k++)
            if (pattern >> k & 1) nearest = k;
        int count = 0, past = 0;
        for (int high = 0; high < 6; high++) {
            for (int low = 0; low <= high; low++) {
                int weight = high == low ? 1 : 2;
                int lands_free = !(pattern >> (high + low + 1) & 1);
                int path_free = !((pattern >> high & 1) && (pattern >> low & 1));
                if (lands_free && path_free) {
                    count += weight;
                    if (nearest >= 0 && high + low + 1 > nearest) past += weight;
                }
            }
        }
        escapes[pattern] = (uint8_t)count;
        escapes_past_first[pattern] = (uint8_t)past;
    }
    for (int pattern = 0; pattern < 4096; pattern++) {
        int reversed = 0;
        for (int bit = 0; bit < 12; bit++) reversed |= (pattern >> bit & 1) << (11 - bit);
        escapes_reversed[pattern] = escapes[reversed];
    }
    for (int byte = 0; byte < 256; byte++) {
        int reversed = 0;
        for (int bit = 0; bit < 8; bit++) reversed |= (byte >> bit & 1) << (7 - bit);
        byte_reversed[byte] = (uint8_t)reversed;
    }
    for (int n = 0; n < 16; n++) {
        float count = (float)n;
        point_units[n][0] = count >= 1.0f;
        point_units[n][1] = count >= 2.0f;
        point_units[n][2] = count >= 3.0f;
        point_units[n][3] = (count > 3.0f ? count - 3.0f : 0.0f) * 0.5f;
    }
}

static inline int highest_bit(uint32_t mask) { return mask ? 31 - __builtin_clz(mask) : -1; }
/* Without -mpopcnt __builtin_popcount is a library call; these masks have few bits. */
static inline int popcount(uint32_t mask) {
    int count = 0;
    for (; mask; mask &= mask - 1) count++;
    return count;
}
static inline int max_int(int a, int b) { return a > b ? a : b; }
static inline int min_int(int a, int b) { return a < b ? a : b; }

/* ------------------------------------------------------------------------------------------------ */
/* gnubg_inputs.half_features: the 25 features of one side ("us") against the other ("them"), both in
 * GNU's half-board view (gnubg_inputs.side_counts): index i is the side's own point i + 1, index 24 its
 * bar. The point masks of each side are built once per position and read by both halves. */

typedef struct {
    int count[25];
    uint32_t occupied;    /* bit i: count[i] > 0, for i in 0..24 (the bar too) */
    uint32_t made;        /* bits 0..23: count[i] >= 2 */
    uint32_t made_seen;   /* ``made`` in the other side's indices: its index 23 - i */
    uint32_t blot_seen;   /* bits 0..23 in the other side's indices: count == 1 */
} Side;

/* Our hitters (``reachable``) with a target d pips in front: shifting a mask up by d moves every point d
 * pips back, so bit s of (targets << d) is a target d pips in front of index s. */
#define AHEAD_TARGET(d) ((targets << (d)) & reachable)

/* ``shots`` of a side with none on the bar (the common case), without a branch on the board: each die
 * hits from its rearmost hitter, the second die again unless it is the same lone checker as the first's
 * (a double's single step twice when several checkers hit); a way using both dice, or two to four steps
 * of a double, with one checker counts one hit, two with a blot on its way; a roll's pips are the
 * farthest point number of a blot it hits. */
static void shots_none_on_bar(const int *single_source, const int *single_several, uint32_t targets,
                              uint32_t reachable, uint32_t blocked, uint32_t blot, const int *ours, int *pip_loss,
                              int *one, int *two) {
    int single_pips[7], single_stacked[7];
    for (int die = 1; die <= 6; die++) {
        int source = single_source[die], hits = source >= 0;
        single_pips[die] = hits * (source - die + 1);
        single_stacked[die] = hits && ours[source] > 1;
    }
    int total_pips = 0, rolls_one = 0, rolls_two = 0;
#pragma GCC unroll 16
    for (int high = 2; high <= 6; high++) {
#pragma GCC unroll 8
        for (int low = 1; low < high; low++) {
            int first = single_source[high], second = single_source[low];
            int hits = (first >= 0) + ((second >= 0) & ((second != first) | single_stacked[low]));
            int pips = max_int(single_pips[high], single_pips[low]);
            uint32_t both = AHEAD_TARGET(high + low) & ~(blocked << high & blocked << low);
            int has = both != 0, source = 31 - __builtin_clz(both | 1);
            int on_path = (int)(((blot << high | blot << low) >> source) & 1);
            hits += (has & (hits == 0)) + (has & on_path);
            pips = max_int(pips, has * (source - high - low + 1));
            total_pips += 2 * pips;
            rolls_one += 2 * (hits > 0);
            rolls_two += 2 * (hits > 1);
        }
    }
#pragma GCC unroll 8
    for (int die = 1; die <= 6; die++) {
        int hits = (single_source[die] >= 0) * (1 + single_several[die]);
        int pips = single_pips[die];
        uint32_t stopped = 0, passed_blots = 0;
#pragma GCC unroll 4
        for (int steps = 2; steps <= 4; steps++) {
            stopped |= blocked << (die * (steps - 1));
            passed_blots |= blot << (die * (steps - 1));
            uint32_t hitting = AHEAD_TARGET(die * steps) & ~stopped;
            int has = hitting != 0, source = 31 - __builtin_clz(hitting | 1);
            hits += (has & (hits == 0)) + (has & (int)(passed_blots >> source & 1));
            pips = max_int(pips, has * (source - die * steps + 1));
        }
        total_pips += pips;
        rolls_one += hits > 0;
        rolls_two += hits > 1;
    }
    *pip_loss = total_pips, *one = rolls_one, *two = rolls_two;
}

/* _shots: (pip loss, rolls with a hit, rolls with two hits), each summed over the 36 rolls (the
 * reference's float sums before their division). ``blocked`` and ``blot``: the other side's made points
 * and blots, in our indices.
 *
 * The reference loops over each roll's ways to hit (its "slots": the two dice and their sum, or the one
 * to four steps of a double) with masks over every (roll, slot); here the same rules are written out per
 * kind of roll, with the hitters of each way found on point bit masks (``AHEAD_TARGET``; bit s of
 * (blocked << p) is a blocked point p pips in front of index s). */
static void shots(const int *ours, uint32_t occupied, uint32_t blocked, uint32_t blot, int *pip_loss,
                  int *one, int *two) {
    *pip_loss = *one = *two = 0;
    /* Blots on our 1- and 2-points are no targets with fewer than three home points. */
    uint32_t targets = popcount(occupied & 0x3F) > 2 ? blot : blot & ~3u;
    /* Hitters: our checkers, but not from a home point of exactly two. */
    uint32_t hitter = occupied;
    for (int i = 0; i < 6; i++) hitter &= ~((uint32_t)(ours[i] == 2) << i);
    if (!targets || !hitter) return; /* no way hits: every roll counts 0 */

    uint32_t reachable = hitter & MASK25;
    int on_bar = ours[24];
    int total_pips = 0, rolls_one = 0, rolls_two = 0;

    /* Each single die: its rearmost hitter (the bar included, -1 for none), whether several hit, its
     * rearmost hitter on a point, whether the checker on the bar hits. */
    int single_source[7], single_several[7], single_point[7], single_bar[7];
    for (int die = 1; die <= 6; die++) {
        uint32_t hits = AHEAD_TARGET(die);
        single_source[die] = highest_bit(hits);
        single_several[die] = (hits & (hits - 1)) != 0;
        single_point[die] = highest_bit(hits & POINTS_MASK);
        single_bar[die] = hits >> 24 & 1;
    }

    if (on_bar == 0) {
        shots_none_on_bar(single_source, single_several, targets, reachable, blocked, blot, ours, pip_loss, one, two);
        return;
    }
    for (int high = 2; high <= 6; high++) {
        for (int low = 1; low < high; low++) {
            /* Both dice with one checker: one of the two landing points must be open. */
            uint32_t both = AHEAD_TARGET(high + low) & ~(blocked << high & blocked << low);
            int hits, pips;
            if (on_bar == 1) {
                /* Hits from the bar count; a hit from a point with one die counts once, when the other
                 * die enters (the higher die's hit first). */
                int extra_high = single_point[high] >= 0 && !(blocked >> (24 - low) & 1);
                int extra_low = single_point[low] >= 0 && !extra_high && !(blocked >> (24 - high) & 1);
                hits = single_bar[high] + extra_high + single_bar[low] + extra_low;
                pips = max_int(single_bar[high] ? 25 - high : 0, extra_high ? single_point[high] - high + 1 : 0);
                pips = max_int(pips, single_bar[low] ? 25 - low : 0);
                pips = max_int(pips, extra_low ? single_point[low] - low + 1 : 0);
                if (both >> 24 & 1) {
                    hits = (hits == 0 ? 1 : hits) + (int)(((blot << high | blot << low) >> 24) & 1);
                    pips = max_int(pips, 25 - high - low);
                }
            } else {
                /* Two or more on the bar: single dice from the bar only. */
                hits = single_bar[high] + single_bar[low];
                pips = max_int(single_bar[high] ? 25 - high : 0, single_bar[low] ? 25 - low : 0);
            }
            total_pips += 2 * pips;
            rolls_one += 2 * (hits > 0);
            rolls_two += 2 * (hits > 1);
        }
    }

    for (int die = 1; die <= 6; die++) {
        int hits, pips;
        if (on_bar == 1) {
            int extra = single_point[die] >= 0 && !(blocked >> (24 - die) & 1);
            hits = single_bar[die] + extra;
            pips = max_int(single_bar[die] ? 25 - die : 0, extra ? single_point[die] - die + 1 : 0);
        } else {
            hits = single_bar[die];
            pips = single_bar[die] ? 25 - die : 0;
        }
        if (on_bar == 1) {
            /* Two, three and four steps from the bar: every landing point on the way must be open; each
             * counts one hit, two with a blot on the way. */
            uint32_t stopped = 0, passed_blots = 0;
            for (int steps = 2; steps <= 4; steps++) {
                stopped |= blocked << (die * (steps - 1));
                passed_blots |= blot << (die * (steps - 1));
                if ((AHEAD_TARGET(die * steps) & ~stopped) >> 24 & 1) {
                    hits = (hits == 0 ? 1 : hits) + (int)(passed_blots >> 24 & 1);
                    pips = max_int(pips, 25 - die * steps);
                }
            }
        }
        total_pips += pips;
        rolls_one += hits > 0;
        rolls_two += hits > 1;
    }
    *pip_loss = total_pips, *one = rolls_one, *two = rolls_two;
}

/* GNU's I_TIMING recipe (gnubg_inputs._timing), before the / 100. */
static int timing_pips(const Side *us, int their_back_ours) {
    const int *ours = us->count;
    int limit = max_int(their_back_ours, 11);
    int pips = ours[24] * 24, free_checkers = ours[24];
    for (uint32_t points = us->occupied & 0xFFFFC0; points; points &= points - 1) { /* indices 6..23 */
        int i = __builtin_ctz(points), here = ours[i];
        int counted = i > limit ? (here > 2 ? here - 2 : here == 1) : here;
        pips += counted * i;
        free_checkers += counted;
    }
    for (int point = 5; point >= 0; point--) {
        int here = ours[point];
        int spare = max_int(here - 2, 0), lack = max_int(2 - here, 0);
        int fills = lack > 0 && free_checkers >= lack;
        pips += point * spare - (fills ? point * lack : 0);
        free_checkers += spare - (fills ? lack : 0);
    }
    return max_int(pips, 0);
}

/* The mask of bits low..high (none when high < low). */
static inline uint32_t bits_between(int low, int high) {
    if (high < low) return 0;
    return (uint32_t)(((uint64_t)2 << high) - ((uint64_t)1 << low));
}

/* Feature groups a benchmark may leave out (``skip``), to say where the time goes; they read 0 then. */
enum { SKIP_SHOTS = 1, SKIP_ESCAPES = 2, SKIP_TIMING = 4, SKIP_ENTERING_BACKBONE = 8 };

static void half_features(const Side *us, const Side *them, int checkers_per_side, int skip, float *out) {
    const int *ours = us->count;
    uint32_t made = us->made, blocked = them->made_seen, blot = them->blot_seen;
    int their_back = highest_bit(them->occupied);  /* in their indices; -1 when none is left */
    int their_back_ours = 23 - their_back;        /* 24 when none is left, -1 with one on their bar */
    int back = highest_bit(us->occupied);

    /* Sums over our checkers; the bar (index 24) by its count, whatever it holds. */
    int count = ours[24], index_sum = 24 * ours[24], break_contact = 0, free_pip = 0;
    if (24 > their_back_ours) break_contact += ours[24] * (25 - their_back_ours);
    if (24 < their_back_ours) free_pip += ours[24] * 25;
    for (uint32_t points = us->occupied & POINTS_MASK; points; points &= points - 1) {
        int i = __builtin_ctz(points), here = ours[i];
        count += here;
        index_sum += here * i;
        if (i > their_back_ours) break_contact += here * (i + 1 - their_back_ours);
        if (i < their_back_ours) free_pip += here * (i + 1);
    }
    int off = max_int(checkers_per_side - count, 0);

    int anchor_limit = min_int(back, 23);
    int back_anchor = highest_bit(made & bits_between(0, anchor_limit));
    uint32_t home = made & bits_between(18, back_anchor);
    int home_anchor = home ? __builtin_ctz(home) : 99;
    int outer_anchor = highest_bit(made & bits_between(12, 17));
    int forward = home_anchor < 99 ? 24 - home_anchor : outer_anchor >= 0 ? 24 - outer_anchor : 0;

    int pip_loss = 0, one = 0, two = 0;
    if (!(skip & SKIP_SHOTS)) shots(ours, us->occupied, blocked, blot, &pip_loss, &one, &two);

    /* The opponent's escapes through our made points, by its index n: bit k of the pattern is its index
     * n - 1 - k, our index 24 - n + k. */
    int back_escapes = 36, back_rescapes = 0, fewest_all = 36, fewest_behind = 36, mobility = 0;
    if (!(skip & SKIP_ESCAPES)) {
        if (their_back >= 0) {
            int pattern = (made >> (24 - their_back)) & 0xFFF;
            back_escapes = escapes[pattern];
            back_rescapes = escapes_past_first[pattern];
        }
        for (int n = 15; n <= 23; n++) {
            int escaping = escapes[(made >> (24 - n)) & 0xFFF];
            fewest_all = min_int(fewest_all, escaping);
            if (n <= their_back) fewest_behind = min_int(fewest_behind, escaping);
        }

        /* Our checkers' escapes through the opponent's points: bit 11 - k of the window is our index
         * i - 1 - k. */
        uint64_t shifted = (uint64_t)blocked << 12;
        for (uint32_t points = us->occupied & 0x1FFFFC0; points; points &= points - 1) { /* indices 6..24 */
            int i = __builtin_ctz(points);
            mobility += ours[i] * (i - 5) * escapes_reversed[(shifted >> i) & 0xFFF];
        }
        if (ours[24] < 0) mobility += ours[24] * 19 * escapes_reversed[(shifted >> 24) & 0xFFF];
    }

    float mean = ceilf((float)index_sum / (float)max_int(count, 1));
    int ahead_count = 0, spread = 0;
    int mean_index = (int)mean; /* an integer: the ceiling */
    for (uint32_t points = us->occupied & POINTS_MASK; points; points &= points - 1) {
        int i = __builtin_ctz(points), distance = i - mean_index;
        if (distance > 0) ahead_count += ours[i], spread += ours[i] * distance * distance;
    }
    if (24 > mean_index) ahead_count += ours[24], spread += ours[24] * (24 - mean_index) * (24 - mean_index);
    float moment2 = ceilf((float)spread / (float)max_int(ahead_count, 1)) / 400.0f;

    /* Entering: their home points, where we enter with die d + 1 (our indices 23 - d). */
    int closed_pattern = blocked >> 18 & 0x3F; /* bit 5 - d */
    int closed_count = popcount(closed_pattern);
    int enter_loss = 0;
    if (ours[24] > 0 && !(skip & SKIP_ENTERING_BACKBONE)) {
        int doubles = 0, both = 0, single = 0;
        for (int i = 0; i < 6; i++) {
            int closed_i = closed_pattern >> (5 - i) & 1;
            doubles += closed_i * 4 * (i + 1);
            for (int j = i + 1; j < 6; j++) {
                int closed_j = closed_pattern >> (5 - j) & 1;
                both += closed_i * closed_j * (i + j + 2);
                single += closed_i * !closed_j * (i + 1) + !closed_i * closed_j * (j + 1);
            }
        }
        enter_loss = doubles + 2 * both + (ours[24] > 1 ? 2 * single : 0);
    }

    /* Backbone: made points on indices 1..22 behind the rearmost made point of 1..23. */
    uint32_t candidates = made & 0xFFFFFE; /* indices 1..23 */
    int top = highest_bit(candidates);
    int pairs = 0, closeness = 0;
    if (skip & SKIP_ENTERING_BACKBONE) candidates = 0;
    for (uint32_t behind = candidates & bits_between(0, top - 1); behind; behind &= behind - 1) {
        int gap = top - __builtin_ctz(behind);
        pairs += 1;
        closeness += gap <= 6 ? 11 : gap <= 11 ? 13 - gap : 0;
    }
    float backbone = pairs > 0 ? 1.0f - (float)closeness / ((float)pairs * 11.0f) : 0.0f;

    int anchors = popcount(made & 0xFC0000); /* indices 18..23 */
    int back_game_checkers = 0;
    for (int i = 18; i < 25; i++) back_game_checkers += ours[i];

    float acontain = 1.0f - (float)fewest_behind / 36.0f;
    float contain = 1.0f - (float)fewest_all / 36.0f;
    out[0] = (float)min_int(off, 5) / 5.0f;
    out[1] = (float)min_int(max_int(off - 5, 0), 5) / 5.0f;
    out[2] = (float)max_int(off - 10, 0) / 5.0f;
    out[3] = (float)break_contact / 167.0f;
    out[4] = (float)back / 24.0f;
    out[5] = (float)back_anchor / 24.0f;
    out[6] = forward > 0 ? (float)forward / 6.0f : 2.0f;
    out[7] = (float)pip_loss / 432.0f;
    out[8] = (float)one / 36.0f;
    out[9] = (float)two / 36.0f;
    out[10] = (float)back_escapes / 36.0f;
    out[11] = acontain;
    out[12] = acontain * acontain;
    out[13] = contain;
    out[14] = contain * contain;
    out[15] = (float)mobility / 3600.0f;
    out[16] = moment2;
    out[17] = (float)enter_loss / 294.0f;
    out[18] = (float)(36 - (closed_count - 6) * (closed_count - 6)) / 36.0f;
    out[19] = skip & SKIP_TIMING ? 0.0f : (float)timing_pips(us, their_back_ours) / 100.0f;
    out[20] = backbone;
    out[21] = anchors > 1 ? (float)(back_game_checkers - 3) / 4.0f : 0.0f;
    out[22] = anchors == 1 ? (float)back_game_checkers / 8.0f : 0.0f;
    out[23] = (float)free_pip / 100.0f;
    out[24] = (float)back_rescapes / 36.0f;
}

/* ------------------------------------------------------------------------------------------------ */
/* The encoders' units. */

static inline int positive(int value) { return value > 0 ? value : 0; }

/* Borne-off counts (engine.board.borne_off). */
static void borne_off(const int8_t *board, int checkers_per_side, int *mover_off, int *opponent_off) {
    int mover = 0, opponent = 0;
    for (int c = 1; c <= MOVER_IN_HAND; c++) mover += positive(board[c]);
    for (int c = 0; c <= 24; c++) opponent += positive(-board[c]);
    opponent -= board[OPPONENT_IN_HAND];
    *mover_off = checkers_per_side - mover;
    *opponent_off = checkers_per_side - opponent;
}

/* Tesauro198.encode: 198 units. */
static void tesauro(const int8_t *board, int checkers_per_side, float *out) {
    for (int p = 1; p <= 24; p++) {
        /* At most 15 checkers a side (engine.position_facts.MAX_CHECKERS): the clamp only guards memory. */
        memcpy(out + 4 * (p - 1), point_units[min_int(positive(board[p]), 15)], sizeof(point_units[0]));
        memcpy(out + 96 + 4 * (p - 1), point_units[min_int(positive(-board[25 - p]), 15)], sizeof(point_units[0]));
    }
    int mover_off, opponent_off;
    borne_off(board, checkers_per_side, &mover_off, &opponent_off);
    /* As the reference: float(bar) + in hand, times 0.5 (-0.5 for the opponent: -0.0 when none wait). */
    out[192] = ((float)board[MOVER_BAR] + (float)board[MOVER_IN_HAND]) * 0.5f;
    out[193] = ((float)board[OPPONENT_BAR] + (float)board[OPPONENT_IN_HAND]) * -0.5f;
    out[194] = (float)mover_off / 15.0f;
    out[195] = (float)opponent_off / 15.0f;
    out[196] = 1.0f;
    out[197] = 0.0f;
}

/* engine.board.pip_counts / 100. */
static void pips(const int8_t *board, float *out) {
    int mover = 25 * board[MOVER_IN_HAND], opponent = -25 * board[OPPONENT_IN_HAND];
    for (int c = 1; c <= 25; c++) mover += positive(board[c]) * c;
    for (int c = 0; c <= 24; c++) opponent += positive(-board[c]) * (25 - c);
    out[0] = (float)mover / 100.0f;
    out[1] = (float)opponent / 100.0f;
}

static int longest_run(uint32_t mask) {
    int run = 0;
    while (mask) mask &= mask << 1, run++;
    return run;
}

/* TesauroPlus.extra_units: 7 units. */
static void tesauro_plus_extra(const int8_t *board, float *out) {
    uint32_t mover_occupied = 0, mover_made = 0, opponent_occupied = 0, opponent_made = 0;
    for (int p = 1; p <= 24; p++) {
        int count = board[p];
        mover_occupied |= (uint32_t)(count >= 1) << (p - 1);
        mover_made |= (uint32_t)(count >= 2) << (p - 1);
        opponent_occupied |= (uint32_t)(count <= -1) << (p - 1);
        opponent_made |= (uint32_t)(count <= -2) << (p - 1);
    }
    int mover_waiting = positive(board[MOVER_BAR]) + positive(board[MOVER_IN_HAND]) > 0;
    int opponent_waiting = positive(-board[OPPONENT_BAR]) + positive(-board[OPPONENT_IN_HAND]) > 0;
    int mover_back = mover_waiting ? 25 : highest_bit(mover_occupied) + 1;
    int opponent_front = opponent_waiting ? 0
                         : opponent_occupied == 0 ? 25
                                                  : __builtin_ctz(opponent_occupied) + 1;
    int mover_escapes = 0;
    if (mover_back > 0) {
        uint64_t window = (((uint64_t)opponent_made << 12) >> max_int(mover_back - 1, 0)) & 0xFFF;
        mover_escapes = escapes_reversed[window];
    }
    int opponent_escapes = 0;
    if (opponent_occupied != 0 || opponent_waiting) opponent_escapes = escapes[(mover_made >> opponent_front) & 0xFFF];
    out[0] = mover_back < opponent_front ? 1.0f : 0.0f;
    out[1] = (float)mover_back / 25.0f;
    out[2] = (float)(25 - opponent_front) / 25.0f;
    out[3] = (float)mover_escapes / 36.0f;
    out[4] = (float)opponent_escapes / 36.0f;
    out[5] = (float)longest_run(mover_made) / 6.0f;
    out[6] = (float)longest_run(opponent_made) / 6.0f;
}

/* GnubgRace.extra_units: the one-hot borne-off counts, 28 units. */
static void race_extra(const int8_t *board, int checkers_per_side, float *out) {
    int mover_off, opponent_off;
    borne_off(board, checkers_per_side, &mover_off, &opponent_off);
    for (int k = 1; k <= RACE_OFF_UNITS; k++) {
        out[k - 1] = mover_off == k ? 1.0f : 0.0f;
        out[RACE_OFF_UNITS + k - 1] = opponent_off == k ? 1.0f : 0.0f;
    }
}

/* engine's _crossings / 10: quadrant crossings still to make. */
static void crossings(const int8_t *board, float *out) {
    int mover = 4 * positive(board[MOVER_BAR]), opponent = 4 * positive(-board[OPPONENT_BAR]);
    for (int p = 1; p <= 24; p++) {
        mover += positive(board[p]) * ((p - 1) / 6);
        opponent += positive(-board[p]) * ((24 - p) / 6);
    }
    out[0] = (float)mover / 10.0f;
    out[1] = (float)opponent / 10.0f;
}

/* Bits 0..23 of ``mask`` in reverse order: a mask by one side's indices seen from the other side. */
static inline uint32_t reverse24(uint32_t mask) {
    return (uint32_t)byte_reversed[mask & 0xFF] << 16 | (uint32_t)byte_reversed[mask >> 8 & 0xFF] << 8 |
           byte_reversed[mask >> 16 & 0xFF];
}

/* Point masks of the board's columns 1..24 (bit p - 1 for point p): counts > 0, >= 2, == 1, < 0, <= -2,
 * == -1. With SSE2 (every x86-64) 16 columns a comparison; the two loads, columns 1..16 and 12..27,
 * stay inside the 28-byte row. */
static void point_masks(const int8_t *board, uint32_t masks[6]) {
#ifdef __SSE2__
    __m128i low = _mm_loadu_si128((const __m128i *)(board + 1)), high = _mm_loadu_si128((const __m128i *)(board + 12));
    __m128i zero = _mm_setzero_si128(), one = _mm_set1_epi8(1), minus_one = _mm_set1_epi8(-1);
#define POINT_MASK(compare, value)                                                                            \
    ((uint32_t)_mm_movemask_epi8(compare(low, value)) |                                                         \
     ((uint32_t)_mm_movemask_epi8(compare(high, value)) & 0x1FFF) << 11)
    masks[0] = POINT_MASK(_mm_cmpgt_epi8, zero);
    masks[1] = POINT_MASK(_mm_cmpgt_epi8, one);
    masks[2] = POINT_MASK(_mm_cmpeq_epi8, one);
    masks[3] = POINT_MASK(_mm_cmplt_epi8, zero);
    masks[4] = POINT_MASK(_mm_cmplt_epi8, minus_one);
    masks[5] = POINT_MASK(_mm_cmpeq_epi8, minus_one);
#undef POINT_MASK
#else
    for (int k = 0; k < 6; k++) masks[k] = 0;
    for (int i = 0; i < 24; i++) {
        int count = board[i + 1];
        masks[0] |= (uint32_t)(count > 0) << i;
        masks[1] |= (uint32_t)(count > 1) << i;
        masks[2] |= (uint32_t)(count == 1) << i;
        masks[3] |= (uint32_t)(count < 0) << i;
        masks[4] |= (uint32_t)(count < -1) << i;
        masks[5] |= (uint32_t)(count == -1) << i;
    }
#endif
}

/* gnubg_inputs.contact_features: 50 units. */
static void contact(const int8_t *board, int checkers_per_side, int skip, float *out) {
    Side mover, opponent;
    for (int i = 0; i < 24; i++) {
        /* Our index i is board column i + 1; the opponent's index i is column 24 - i. */
        mover.count[i] = positive(board[i + 1]);
        opponent.count[i] = positive(-board[24 - i]);
    }
    mover.count[24] = board[MOVER_BAR] + board[MOVER_IN_HAND];
    opponent.count[24] = -(board[OPPONENT_BAR] + board[OPPONENT_IN_HAND]);
    uint32_t masks[6];
    point_masks(board, masks);
    mover.occupied = masks[0] | (uint32_t)(mover.count[24] > 0) << 24;
    mover.made = masks[1];
    mover.made_seen = reverse24(masks[1]);
    mover.blot_seen = reverse24(masks[2]);
    opponent.occupied = reverse24(masks[3]) | (uint32_t)(opponent.count[24] > 0) << 24;
    opponent.made = reverse24(masks[4]);
    opponent.made_seen = masks[4];
    opponent.blot_seen = masks[5];
    half_features(&mover, &opponent, checkers_per_side, skip, out);
    half_features(&opponent, &mover, checkers_per_side, skip, out + HALF);
}

static void encode_row(int kind, const int8_t *board, int checkers_per_side, int skip, float *out) {
    switch (kind) {
    case KIND_CONTACT:
        tesauro(board, checkers_per_side, out);
        contact(board, checkers_per_side, skip, out + TESAURO);
        break;
    case KIND_CONTACT_EXTRA:
        contact(board, checkers_per_side, skip, out);
        break;
    case KIND_PLUS:
        tesauro(board, checkers_per_side, out);
        pips(board, out + TESAURO);
        tesauro_plus_extra(board, out + TESAURO + 2);
        break;
    case KIND_PLUS_EXTRA:
        tesauro_plus_extra(board, out);
        break;
    case KIND_RACE:
        tesauro(board, checkers_per_side, out);
        pips(board, out + TESAURO);
        crossings(board, out + TESAURO + 2);
        race_extra(board, checkers_per_side, out + TESAURO + 4);
        break;
    case KIND_RACE_EXTRA:
        race_extra(board, checkers_per_side, out);
        break;
    case KIND_TESAURO:
        tesauro(board, checkers_per_side, out);
        break;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* Rows split over threads. */

typedef struct {
    int kind, checkers_per_side, skip;
    const int8_t *board;
    float *out;
    Py_ssize_t first, last;
} Work;

static void *encode_rows(void *argument) {
    const Work *work = argument;
    int width = KIND_WIDTH[work->kind];
    for (Py_ssize_t row = work->first; row < work->last; row++)
        encode_row(work->kind, work->board + row * WIDTH, work->checkers_per_side, work->skip,
                   work->out + row * width);
    return NULL;
}

/* Starting a thread costs tens of microseconds, about what 50 rows take: split only long batches. */
enum { MAX_THREADS = 64, ROWS_PER_THREAD = 1024 };

static PyObject *encode(PyObject *self, PyObject *args) {
    (void)self;
    int kind, checkers_per_side, threads, skip = 0;
    Py_ssize_t rows;
    Py_buffer board, out;
    if (!PyArg_ParseTuple(args, "iy*niw*i|i", &kind, &board, &rows, &checkers_per_side, &out, &threads, &skip))
        return NULL;
    PyObject *result = NULL;
    if (kind < 0 || kind >= KIND_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown encoder kind %d", kind);
    } else if (rows < 0 || board.len != rows * WIDTH || out.len != rows * KIND_WIDTH[kind] * (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "board must be int8[rows, 28] and out float32[rows, width], contiguous");
    } else {
        Work work[MAX_THREADS];
        pthread_t handles[MAX_THREADS];
        int started[MAX_THREADS] = {0};
        Py_ssize_t parts = rows / ROWS_PER_THREAD;
        if (parts > threads) parts = threads;
        if (parts > MAX_THREADS) parts = MAX_THREADS;
        if (parts < 1) parts = 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t part = 0; part < parts; part++) {
            work[part] = (Work){kind, checkers_per_side, skip, board.buf, out.buf, rows * part / parts, rows * (part + 1) / parts};
            /* Part 0 runs on this thread; a part whose thread fails to start runs here too. */
            if (part > 0) started[part] = pthread_create(&handles[part], NULL, encode_rows, &work[part]) == 0;
        }
        encode_rows(&work[0]);
        for (Py_ssize_t part = 1; part < parts; part++) {
            if (started[part])
                pthread_join(handles[part], NULL);
            else
                encode_rows(&work[part]);
        }
        Py_END_ALLOW_THREADS
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyBuffer_Release(&board);
    PyBuffer_Release(&out);
    return result;
}

/* ------------------------------------------------------------------------------------------------ */
/* The phase of each position (engine.position_kinds.position_phases, the phase model's routing). */

enum { PHASE_RACE = 2, PHASE_CRASHED = 3, PHASE_CONTACT = 4 }; /* engine.position_kinds.PositionKind */

/* GNU Backgammon's crashed rule for one side (engine.position_kinds.crashed). */
static int crashed_side(int total, int ace, int deuce) {
    int stacked = ace > 1 && (total <= 6 + ace || (deuce > 1 && 1 + total - (ace + deuce) <= 6));
    int unstacked = ace <= 1 && total <= 6 + (deuce - 1);
    return total <= 6 || stacked || unstacked;
}

static int64_t phase_row(const int8_t *board) {
    int mover_back = 0, opponent_front = 25, mover_total = 0, opponent_total = 0;
    for (int point = 1; point <= 24; point++) {
        int count = board[point];
        if (count > 0) {
            mover_back = point;
            mover_total += count;
        } else if (count < 0) {
            if (opponent_front == 25) opponent_front = point;
            opponent_total -= count;
        }
    }
    mover_total += positive(board[MOVER_BAR]);  /* checkers in hand are not in play */
    opponent_total += positive(-board[OPPONENT_BAR]);
    if (mover_total == 0 || opponent_total == 0) return PHASE_CONTACT;  /* a finished game */
    int waiting = board[MOVER_BAR] > 0 || board[MOVER_IN_HAND] > 0 || board[OPPONENT_BAR] < 0 ||
                  board[OPPONENT_IN_HAND] < 0;
    if (!waiting && mover_back < opponent_front) return PHASE_RACE;
    if (crashed_side(mover_total, positive(board[1]), positive(board[2])) ||
        crashed_side(opponent_total, positive(-board[24]), positive(-board[23])))
        return PHASE_CRASHED;
    return PHASE_CONTACT;
}

static PyObject *phases(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t rows;
    Py_buffer board, out;
    if (!PyArg_ParseTuple(args, "y*nw*", &board, &rows, &out)) return NULL;
    PyObject *result = NULL;
    if (rows < 0 || board.len != rows * WIDTH || out.len != rows * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "board must be int8[rows, 28] and out int64[rows], contiguous");
    } else {
        const int8_t *rows_in = board.buf;
        int64_t *phase = out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < rows; row++) phase[row] = phase_row(rows_in + row * WIDTH);
        Py_END_ALLOW_THREADS
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyBuffer_Release(&board);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"phases", phases, METH_VARARGS,
     "phases(board, rows, out): fill out (int64[rows]) with each position's phase (a PositionKind code: contact, "
     "crashed or race) from board (int8[rows, 28])."},
    {"encode", encode, METH_VARARGS,
     "encode(kind, board, rows, checkers_per_side, out, threads, skip=0): fill out (float32[rows, width]) from "
     "board (int8[rows, 28]); skip: feature groups to leave out (SKIP_*), for benchmarks only."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast_encoders",
                                    "The encoders' CPU fast path (bgtrain.model.fast_encoders).", -1, methods};

PyMODINIT_FUNC PyInit__fast_encoders(void) {
    build_tables();
    PyObject *created = PyModule_Create(&module);
    if (created == NULL) return NULL;
    static const char *names[KIND_COUNT] = {"CONTACT", "CONTACT_EXTRA", "PLUS", "PLUS_EXTRA",
                                            "RACE", "RACE_EXTRA", "TESAURO"};
    for (int kind = 0; kind < KIND_COUNT; kind++) {
        char width_name[64];
        PyModule_AddIntConstant(created, names[kind], kind);
        snprintf(width_name, sizeof width_name, "%s_WIDTH", names[kind]);
        PyModule_AddIntConstant(created, width_name, KIND_WIDTH[kind]);
    }
    PyModule_AddIntConstant(created, "SKIP_SHOTS", SKIP_SHOTS);
    PyModule_AddIntConstant(created, "SKIP_ESCAPES", SKIP_ESCAPES);
    PyModule_AddIntConstant(created, "SKIP_TIMING", SKIP_TIMING);
    PyModule_AddIntConstant(created, "SKIP_ENTERING_BACKBONE", SKIP_ENTERING_BACKBONE);
    return created;
}
