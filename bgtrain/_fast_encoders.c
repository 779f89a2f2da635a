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
 * Python entry point: encode(kind, board, rows, checkers_per_side, out, threads), with ``board`` and
 * ``out`` objects exposing a C-contiguous buffer (numpy views of the tensors): int8[rows, 28] in,
 * float32[rows, width(kind)] out. The GIL is released while it runs; ``threads`` > 1 splits the rows.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

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

/* The shot counting's ways to hit (gnubg_inputs._Ways): every distinct (distance, dice used,
 * intermediate landing points, whether every one is needed) of the 21 rolls, and each roll's ways in
 * slot order. */
enum { MAX_WAYS = 48, ROLL_COUNT = 21, NO_WAY = -1 };
static int way_count;
static int way_distance[MAX_WAYS], way_faces[MAX_WAYS], way_all_needed[MAX_WAYS];
static int way_intermediate[MAX_WAYS][3]; /* pips from the hitter, 0 = none */
static int roll_way[ROLL_COUNT][4];       /* NO_WAY for an empty slot */
static int roll_double[ROLL_COUNT], roll_weight[ROLL_COUNT];
static int roll_other_die[ROLL_COUNT][4]; /* the die that enters from the bar when this slot hits */

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
    for (int n = 0; n < 16; n++) {
        float count = (float)n;
        point_units[n][0] = count >= 1.0f;
        point_units[n][1] = count >= 2.0f;
        point_units[n][2] = count >= 3.0f;
        point_units[n][3] = (count > 3.0f ? count - 3.0f : 0.0f) * 0.5f;
    }
    /* The rolls in gnubg_inputs.ROLLS order: high 1..6, low 1..high. */
    way_count = 0;
    int roll = 0;
    for (int high = 1; high <= 6; high++) {
        for (int low = 1; low <= high; low++, roll++) {
            int options[4][6]; /* distance, faces, intermediates x3, all needed */
            int option_count;
            if (high == low) {
                option_count = 4;
                for (int steps = 1; steps <= 4; steps++) {
                    int *option = options[steps - 1];
                    option[0] = high * steps;
                    option[1] = steps;
                    for (int k = 0; k < 3; k++) option[2 + k] = k + 1 < steps ? high * (k + 1) : 0;
                    option[5] = 1;
                }
            } else {
                option_count = 3;
                int single[2] = {high, low};
                for (int s = 0; s < 2; s++) {
                    int *option = options[s];
                    option[0] = single[s], option[1] = 1, option[2] = option[3] = option[4] = 0, option[5] = 1;
                }
                int *option = options[2];
                option[0] = high + low, option[1] = 2, option[2] = high, option[3] = low, option[4] = 0;
                option[5] = 0;
            }
            for (int slot = 0; slot < 4; slot++) roll_way[roll][slot] = NO_WAY;
            for (int slot = 0; slot < option_count; slot++) {
                int *option = options[slot];
                int found = NO_WAY;
                for (int w = 0; w < way_count && found == NO_WAY; w++) {
                    if (way_distance[w] == option[0] && way_faces[w] == option[1] &&
                        way_intermediate[w][0] == option[2] && way_intermediate[w][1] == option[3] &&
                        way_intermediate[w][2] == option[4] && way_all_needed[w] == option[5])
                        found = w;
                }
                if (found == NO_WAY) {
                    found = way_count++;
                    way_distance[found] = option[0];
                    way_faces[found] = option[1];
                    for (int k = 0; k < 3; k++) way_intermediate[found][k] = option[2 + k];
                    way_all_needed[found] = option[5];
                }
                roll_way[roll][slot] = found;
            }
            roll_double[roll] = high == low;
            roll_weight[roll] = high == low ? 1 : 2;
            for (int slot = 0; slot < 4; slot++) roll_other_die[roll][slot] = 0;
            if (high == low) {
                roll_other_die[roll][0] = high;
            } else {
                roll_other_die[roll][0] = low;
                roll_other_die[roll][1] = high;
            }
        }
    }
}

static inline int highest_bit(uint32_t mask) { return mask ? 31 - __builtin_clz(mask) : -1; }
static inline int max_int(int a, int b) { return a > b ? a : b; }
static inline int min_int(int a, int b) { return a < b ? a : b; }

/* ------------------------------------------------------------------------------------------------ */
/* gnubg_inputs.half_features: the 25 features of the side ``ours`` against ``theirs``. Both in GNU's
 * half-board view (side_counts): index i is the side's own point i + 1, index 24 its bar. */

/* _shots: (pip loss, rolls with a hit, rolls with two hits), each summed over the 36 rolls. */
static void shots(const int *ours, uint32_t blocked, uint32_t blot, int *pip_loss, int *one, int *two) {
    int home_points = 0;
    for (int i = 0; i < 6; i++) home_points += ours[i] > 0;
    uint32_t hitter = 0;
    for (int i = 0; i < 25; i++)
        if (ours[i] > 0 && !(i < 6 && ours[i] == 2)) hitter |= 1u << i;
    /* Blots on our 1- and 2-points are no targets with fewer than three home points. */
    uint32_t targets = home_points > 2 ? blot : blot & ~3u;
    *pip_loss = *one = *two = 0;
    if (!targets || !hitter) return; /* no way hits: every roll counts 0 */

    /* Per way: the hitters (bit s: a checker on index s hits a target s - distance pips ahead). */
    int rearmost[MAX_WAYS], rearmost_point[MAX_WAYS], several[MAX_WAYS], from_bar[MAX_WAYS];
    for (int w = 0; w < way_count; w++) {
        uint32_t stops[3];
        for (int k = 0; k < 3; k++) {
            int pips = way_intermediate[w][k];
            stops[k] = pips ? blocked << pips : 0;
        }
        /* A double needs every intermediate point open; two dice need one of their two. */
        uint32_t stopped = way_all_needed[w] ? stops[0] | stops[1] | stops[2] : stops[0] & stops[1];
        uint32_t hits = hitter & (targets << way_distance[w]) & ~stopped & MASK25;
        rearmost[w] = highest_bit(hits);
        rearmost_point[w] = highest_bit(hits & POINTS_MASK);
        several[w] = (hits & (hits - 1)) != 0;
        from_bar[w] = hits >> 24 & 1;
    }

    int on_bar = ours[24];
    for (int roll = 0; roll < ROLL_COUNT; roll++) {
        int hits = 0, pips = 0;
        if (on_bar == 0) {
            int previous = -1;
            for (int slot = 0; slot < 4; slot++) {
                int w = roll_way[roll][slot];
                if (w == NO_WAY) continue;
                int source = rearmost[w];
                if (source < 0) continue;
                if (way_faces[w] == 1) {
                    hits += (previous != source || ours[source] > 1) + (roll_double[roll] && several[w]);
                    previous = source;
                } else {
                    int on_path = 0;
                    for (int k = 0; k < 3; k++) {
                        int step = way_intermediate[w][k];
                        if (step > 0) on_path |= blot >> (source - step) & 1;
                    }
                    hits = (hits == 0 ? 1 : hits) + on_path;
                }
                pips = max_int(pips, source - way_distance[w] + 1);
            }
        } else if (on_bar == 1) {
            int entered = 0;
            for (int slot = 0; slot < 4; slot++) {
                int w = roll_way[roll][slot];
                if (w == NO_WAY) continue;
                int bar = from_bar[w];
                int other = roll_other_die[roll][slot];
                int enters = other > 0 && !(blocked >> (24 - other) & 1);
                int point = rearmost_point[w];
                int direct = way_faces[w] == 1;
                int extra = point >= 0 && !entered && enters && direct;
                if (direct) {
                    hits += bar + extra;
                } else if (bar) {
                    int on_path = 0;
                    for (int k = 0; k < 3; k++) {
                        int step = way_intermediate[w][k];
                        if (step > 0) on_path |= blot >> (24 - step) & 1;
                    }
                    hits = (hits == 0 ? 1 : hits) + on_path;
                }
                entered |= extra;
                if (bar) pips = max_int(pips, 25 - way_distance[w]);
                if (extra) pips = max_int(pips, point - way_distance[w] + 1);
            }
        } else {
            for (int slot = 0; slot < 2; slot++) {
                int w = roll_way[roll][slot];
                if (way_faces[w] == 1 && from_bar[w]) {
                    hits += 1;
                    pips = max_int(pips, 25 - way_distance[w]);
                }
            }
        }
        int weight = roll_weight[roll];
        *pip_loss += pips * weight;
        *one += (hits > 0) * weight;
        *two += (hits > 1) * weight;
    }
}

/* GNU's I_TIMING recipe (gnubg_inputs._timing), before the / 100. */
static int timing_pips(const int *ours, int their_back_ours) {
    int limit = max_int(their_back_ours, 11);
    int pips = 0, free_checkers = 0;
    for (int i = 6; i < 24; i++) {
        int here = ours[i];
        int counted = i > limit ? (here > 2 ? here - 2 : here == 1) : here;
        pips += counted * i;
        free_checkers += counted;
    }
    pips += ours[24] * 24;
    free_checkers += ours[24];
    for (int point = 5; point >= 0; point--) {
        int here = ours[point];
        int spare = max_int(here - 2, 0), lack = max_int(2 - here, 0);
        int fills = lack > 0 && free_checkers >= lack;
        pips += point * spare - (fills ? point * lack : 0);
        free_checkers += spare - (fills ? lack : 0);
    }
    return max_int(pips, 0);
}

static void half_features(const int *ours, const int *theirs, int checkers_per_side, float *out) {
    /* Masks in our indices: our made points; the opponent's made points and blots (its index j is our
     * 23 - j). */
    uint32_t made = 0, blocked = 0, blot = 0;
    int count = 0, index_sum = 0, their_back = -1, back = -1;
    for (int i = 0; i < 24; i++) {
        made |= (uint32_t)(ours[i] >= 2) << i;
        blocked |= (uint32_t)(theirs[23 - i] >= 2) << i;
        blot |= (uint32_t)(theirs[23 - i] == 1) << i;
    }
    for (int i = 0; i < 25; i++) {
        count += ours[i];
        index_sum += ours[i] * i;
        if (theirs[i] > 0) their_back = i;
        if (ours[i] > 0) back = i;
    }
    int their_back_ours = 23 - their_back; /* 24 when they have none left, -1 with one on their bar */

    int off = max_int(checkers_per_side - count, 0);
    int break_contact = 0, free_pip = 0;
    for (int i = 0; i < 25; i++) {
        if (i > their_back_ours) break_contact += ours[i] * (i + 1 - their_back_ours);
        if (i < their_back_ours) free_pip += ours[i] * (i + 1);
    }

    int anchor_limit = min_int(back, 23);
    int back_anchor = -1;
    for (int i = 0; i <= anchor_limit; i++)
        if (made >> i & 1) back_anchor = i;
    int home_anchor = 99;
    for (int i = back_anchor; i >= 18; i--)
        if (made >> i & 1) home_anchor = i;
    int outer_anchor = -1;
    for (int i = 12; i <= 17; i++)
        if (made >> i & 1) outer_anchor = i;
    int forward = home_anchor < 99 ? 24 - home_anchor : outer_anchor >= 0 ? 24 - outer_anchor : 0;

    int pip_loss, one, two;
    shots(ours, blocked, blot, &pip_loss, &one, &two);

    /* The opponent's escapes through our made points, by its index n (bit k: its index n - 1 - k,
     * our index 24 - n + k). */
    int back_escapes = 36, back_rescapes = 0;
    if (their_back >= 0) {
        int pattern = (made >> (24 - their_back)) & 0xFFF;
        back_escapes = escapes[pattern];
        back_rescapes = escapes_past_first[pattern];
    }
    int fewest_all = 36, fewest_behind = 36;
    for (int n = 15; n <= 23; n++) {
        int escaping = escapes[(made >> (24 - n)) & 0xFFF];
        fewest_all = min_int(fewest_all, escaping);
        if (n <= their_back) fewest_behind = min_int(fewest_behind, escaping);
    }

    /* Our checkers' escapes through the opponent's points: bit 11 - k of the window is our index
     * i - 1 - k. */
    int mobility = 0;
    uint64_t shifted = (uint64_t)blocked << 12;
    for (int i = 6; i < 25; i++)
        if (ours[i]) mobility += ours[i] * (i - 5) * escapes_reversed[(shifted >> i) & 0xFFF];

    float mean = ceilf((float)index_sum / (float)max_int(count, 1));
    int ahead_count = 0, spread = 0;
    for (int i = 0; i < 25; i++) {
        if ((float)i > mean) {
            int distance = i - (int)mean;
            ahead_count += ours[i];
            spread += ours[i] * distance * distance;
        }
    }
    float moment2 = ceilf((float)spread / (float)max_int(ahead_count, 1)) / 400.0f;

    /* Entering: their home points, where we enter with die d + 1. */
    int closed[6], closed_count = 0;
    for (int d = 0; d < 6; d++) closed[d] = theirs[d] >= 2, closed_count += closed[d];
    int enter_loss = 0;
    if (ours[24] > 0) {
        int doubles = 0, both = 0, single = 0;
        for (int i = 0; i < 6; i++) {
            doubles += closed[i] * 4 * (i + 1);
            for (int j = i + 1; j < 6; j++) {
                both += closed[i] * closed[j] * (i + j + 2);
                single += closed[i] * !closed[j] * (i + 1) + !closed[i] * closed[j] * (j + 1);
            }
        }
        enter_loss = doubles + 2 * both + (ours[24] > 1 ? 2 * single : 0);
    }

    /* Backbone: made points on indices 1..22 behind the rearmost made point of 1..23. */
    uint32_t candidates = made & 0xFFFFFE; /* indices 1..23 */
    int top = highest_bit(candidates);
    int pairs = 0, closeness = 0;
    for (int i = 1; i < top; i++) {
        if (candidates >> i & 1) {
            int gap = top - i;
            pairs += 1;
            closeness += gap <= 6 ? 11 : gap <= 11 ? 13 - gap : 0;
        }
    }
    float backbone = pairs > 0 ? 1.0f - (float)closeness / ((float)pairs * 11.0f) : 0.0f;

    int anchors = __builtin_popcount(made & 0xFC0000); /* indices 18..23 */
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
    out[19] = (float)timing_pips(ours, their_back_ours) / 100.0f;
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

/* gnubg_inputs.contact_features: 50 units. */
static void contact(const int8_t *board, int checkers_per_side, float *out) {
    int ours[25], theirs[25];
    for (int i = 0; i < 24; i++) {
        ours[i] = positive(board[i + 1]);
        theirs[i] = positive(-board[24 - i]);
    }
    ours[24] = board[MOVER_BAR] + board[MOVER_IN_HAND];
    theirs[24] = -(board[OPPONENT_BAR] + board[OPPONENT_IN_HAND]);
    half_features(ours, theirs, checkers_per_side, out);
    half_features(theirs, ours, checkers_per_side, out + HALF);
}

static void encode_row(int kind, const int8_t *board, int checkers_per_side, float *out) {
    switch (kind) {
    case KIND_CONTACT:
        tesauro(board, checkers_per_side, out);
        contact(board, checkers_per_side, out + TESAURO);
        break;
    case KIND_CONTACT_EXTRA:
        contact(board, checkers_per_side, out);
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
    int kind, checkers_per_side;
    const int8_t *board;
    float *out;
    Py_ssize_t first, last;
} Work;

static void *encode_rows(void *argument) {
    const Work *work = argument;
    int width = KIND_WIDTH[work->kind];
    for (Py_ssize_t row = work->first; row < work->last; row++)
        encode_row(work->kind, work->board + row * WIDTH, work->checkers_per_side, work->out + row * width);
    return NULL;
}

/* Starting a thread costs tens of microseconds, about what 50 rows take: split only long batches. */
enum { MAX_THREADS = 64, ROWS_PER_THREAD = 1024 };

static PyObject *encode(PyObject *self, PyObject *args) {
    (void)self;
    int kind, checkers_per_side, threads;
    Py_ssize_t rows;
    Py_buffer board, out;
    if (!PyArg_ParseTuple(args, "iy*niw*i", &kind, &board, &rows, &checkers_per_side, &out, &threads))
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
            work[part] = (Work){kind, checkers_per_side, board.buf, out.buf, rows * part / parts, rows * (part + 1) / parts};
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

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(kind, board, rows, checkers_per_side, out, threads): fill out (float32[rows, width]) from board "
     "(int8[rows, 28])."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast_encoders",
                                    "The encoders' CPU fast path (bgtrain.fast_encoders).", -1, methods};

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
    return created;
}
