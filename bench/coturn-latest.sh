#!/usr/bin/env bash
# Builds a coturn checkout with cmake into .build/coturn, for bench/turn-bench.sh --coturn.
# See bench/README.md ("TURN against the newest coturn").
#
#   bench/coturn-latest.sh SRC        SRC: a coturn source tree (git clone, or an unpacked archive)
#
# Installs what the build needs when it is missing (Debian: cmake, libevent-dev,
# libmicrohttpd-dev, libssl-dev, pkg-config; coturn's Prometheus exporter is always compiled in,
# so libmicrohttpd is not optional), then prints the paths of turnserver, turnutils_uclient and
# turnutils_peer, the version and, for a git checkout, the commit. coturn's code stays in SRC and
# .build/coturn, both outside what git tracks: never commit it.
set -euo pipefail
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[ $# -eq 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; esac
src=$(cd "$1" && pwd) || { echo "coturn-latest: $1 is not a directory" >&2; exit 2; }
[ -f "$src/CMakeLists.txt" ] || { echo "coturn-latest: $src has no CMakeLists.txt; is it a coturn checkout?" >&2; exit 2; }
cd "$(dirname "$0")/.."
build=.build/coturn

missing=()
for package in cmake libevent-dev libmicrohttpd-dev libssl-dev pkg-config; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "coturn-latest: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
        exit 1
    fi
    echo "coturn-latest: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The log sits beside the build directory: on a fresh clone neither .build nor it exists yet.
mkdir -p "$(dirname "$build")"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 \
    || { echo "coturn-latest: cmake configure failed; the end of $build.configure.log:" >&2; tail -20 "$build.configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" >"$build.build.log" 2>&1 \
    || { echo "coturn-latest: build failed; the end of $build.build.log:" >&2; tail -20 "$build.build.log" >&2; exit 1; }

for tool in turnserver turnutils_uclient turnutils_peer; do
    path=$(find "$build" -type f -name "$tool" -perm -u+x | head -1)
    [ -n "$path" ] || { echo "coturn-latest: the build made no $tool" >&2; exit 1; }
    echo "$tool $(cd "$(dirname "$path")" && pwd)/$tool"
done
server=$(find "$build" -type f -name turnserver -perm -u+x | head -1)
echo "version $("$server" --version 2>/dev/null | head -1)"
echo "commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "unknown (not a git checkout)")"
