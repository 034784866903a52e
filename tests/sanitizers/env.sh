# Sanitizer runtime options for the test suite; sourced by .ci/run before the sanitizer builds
# (and usable by hand: `. tests/sanitizers/env.sh && ctest --preset asan`).
#
# halt_on_error: the first report fails the test (the build also uses
#   -fno-sanitize-recover=all, so UBSan cannot just warn and go on).
# detect_leaks=1: LeakSanitizer runs at exit of every test binary; a leak is a failure.
# allocator_may_return_null stays 0: an allocation of a hostile size that got past a check
#   aborts with a report (in production it would be a bad_alloc the loader turns into
#   resource_exhausted), so CI sees it.
# print_stacktrace=1: UBSan reports with the call stack.
_neuronc_san_dir=${NEURONC_SANITIZERS_DIR:-$PWD/tests/sanitizers}  # sourced from the repository root
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$_neuronc_san_dir/lsan.supp"
# ThreadSanitizer: oneTBB's prebuilt (uninstrumented) libtbb synchronises through its own
# atomics and futexes, which TSan cannot see; tsan.supp silences reports whose frames are
# inside libtbb only — never ours.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$_neuronc_san_dir/tsan.supp"
unset _neuronc_san_dir
