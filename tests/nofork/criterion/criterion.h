/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for the part of Criterion's API the suites use, running every test in the
 * test program's own process, one after another (Criterion forks a child per test, which
 * ThreadSanitizer cannot follow: Criterion issue #274). Used by the ThreadSanitizer build
 * (tests/meson.build puts this folder first on the include path); runner.c is its main().
 * A failed assertion reports and ends its test; the program exits 1 when any test failed.
 */
#ifndef EMB_NOFORK_CRITERION_H
#define EMB_NOFORK_CRITERION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct NoforkTest {
    const char *suite, *name;
    void (*fn)(void);
    void (*init)(void);
    void (*fini)(void);
    double timeout;
    bool disabled;
    const char *description;
} NoforkTest;

void nofork_register(NoforkTest *t);
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void nofork_fail(const char *file, int line, const char *expr, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void nofork_skip(const char *fmt, ...);

#define Test(suite, name, ...)                                                             \
    static void suite##_##name##_impl(void);                                               \
    __attribute__((constructor)) static void suite##_##name##_reg(void)                    \
    {                                                                                      \
        static NoforkTest t = {#suite, #name, suite##_##name##_impl, __VA_ARGS__};         \
        nofork_register(&t);                                                               \
    }                                                                                      \
    static void suite##_##name##_impl(void)

#define NOFORK_CHECK(cond, expr, ...)                                                      \
    do {                                                                                   \
        if (!(cond))                                                                       \
            nofork_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__);                         \
    } while (0)

#define cr_assert(c, ...) NOFORK_CHECK((c), #c, __VA_ARGS__)
#define cr_expect(c, ...) NOFORK_CHECK((c), #c, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) NOFORK_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_not(c, ...) NOFORK_CHECK(!(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_neq(a, b, ...) NOFORK_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) NOFORK_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) NOFORK_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) NOFORK_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) NOFORK_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) NOFORK_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) NOFORK_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) NOFORK_CHECK(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...)                                                 \
    NOFORK_CHECK(fabs((double)(a) - (double)(b)) <= (double)(eps), #a " ~ " #b, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, size, ...)                                                   \
    NOFORK_CHECK(memcmp((a), (b), (size)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), (void)fputc('\n', stderr))
#define cr_assert_fail(...) nofork_fail(__FILE__, __LINE__, "cr_assert_fail", "" __VA_ARGS__)
#define cr_skip_test(...) nofork_skip("" __VA_ARGS__)

#endif
