#!/bin/sh
# make fuzz (Fuzz/README.md): builds every fuzz target with libFuzzer and AddressSanitizer in
# its own scratch path, runs each for SECONDS (FUZZ_SECONDS) on a copy of its committed seed
# corpus, prints one line per target and fails if any target found something. FUZZ_TARGETS
# limits the run to some targets (names as in Package.swift).
set -eu
seconds=${1:-180}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
targets=${FUZZ_TARGETS:-"FuzzSTUN FuzzStreamFraming FuzzHTTPRequest FuzzJSON FuzzControlBodies FuzzOptions FuzzConfigFile FuzzUsersFile FuzzTurnRequests"}
scratch=.build/fuzz
swift=${SWIFT:-swift}

# The executable's sources as a library (Package.swift, MediarelayInternals): links, made
# afresh so that a file added to Sources/mediarelay is in it too.
rm -rf Fuzz/MediarelayInternals
mkdir -p Fuzz/MediarelayInternals
for file in Sources/mediarelay/*.swift; do
    [ "${file##*/}" = main.swift ] || ln -s "../../$file" "Fuzz/MediarelayInternals/${file##*/}"
done

# Every module instrumented with AddressSanitizer and the coverage libFuzzer steers by (what
# -sanitize=fuzzer would add, which SwiftPM would also apply to the build plugin's tool, taking
# its main); libFuzzer itself linked without its main (FuzzSupport's runLibFuzzer).
toolchain=$(dirname "$(readlink -f "$(command -v "$swift")")")/..
libfuzzer=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1)
[ -n "$libfuzzer" ] || { echo "fuzz: no libclang_rt.fuzzer_no_main in the toolchain at $toolchain" >&2; exit 1; }
# One product at a time: only the modules the targets need are built, not the whole package.
build_log="$scratch-build.log"
mkdir -p .build
: >"$build_log"
for target in $targets; do
    # The build plugin's tool (BPFEmbed) runs instrumented too; what it leaks at exit is no finding.
    if ! ASAN_OPTIONS=detect_leaks=0 MEDIARELAY_FUZZ="$libfuzzer" $swift build --scratch-path "$scratch" --product "$target" --sanitize=address \
            -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table >>"$build_log" 2>&1; then
        grep -v -e "Cannot export local symbol" "$build_log" | tail -40 >&2
        echo "fuzz: $target did not build (whole log: $build_log)" >&2
        exit 1
    fi
done

failed=""
for target in $targets; do
    work="$scratch/corpus/$target"
    findings="$scratch/findings/$target"
    log="$scratch/logs/$target.log"
    # Findings of an earlier run are reproduced by their regression tests, not counted again.
    rm -rf "$findings"
    mkdir -p "$work" "$findings" "$scratch/logs"
    dictionary=""
    [ -f "Fuzz/Dictionaries/$target.dict" ] && dictionary="-dict=Fuzz/Dictionaries/$target.dict"
    # New inputs go to the work corpus (first directory); the committed seeds are only read.
    status=0
    # Swift's own crash backtracer, running under AddressSanitizer, reports itself: off, as
    # libFuzzer prints the stack of a finding anyway.
    SWIFT_BACKTRACE=enable=no "$scratch/debug/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$findings/" $dictionary "$work" "Fuzz/Corpus/$target" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(ls "$work" | wc -l)
    found=$(ls "$findings" | wc -l)
    echo "fuzz: $target: ${seconds} s, ${execs:-0} execs, cov ${coverage:-0}, ft ${features:-0}, corpus $corpus, findings $found (exit $status, log $log)"
    if [ "$found" -gt 0 ] || [ "$status" -ne 0 ]; then
        failed="$failed $target"
        ls "$findings" | sed "s|^|fuzz:   $findings/|"
    fi
done
if [ -n "$failed" ]; then
    echo "fuzz: FINDINGS in$failed: reproduce with .build/fuzz/debug/TARGET FILE, then write the regression test" >&2
    exit 1
fi
