#!/bin/sh
# Makes .gpu/, what tools/gpu-check.sh needs on a lent GPU machine that has
# no Debian packages and reaches no registry (the device tool's: an x86-64
# image with Python, CUDA and the NVIDIA driver): a build made here
# (build-gpu, release flags, without its objects), the shared libraries it
# and wrk use from this machine (gpu-check.sh puts on the library path only
# those the machine lacks), wrk itself, and the build's test list for
# tools/py/gpu_tests.py. .git/info/exclude keeps .gpu/ out of git; the
# device call carries it:
#   tools/gpu-bundle.sh
#   run(command="sh tools/gpu-check.sh", carry=[".gpu"], timeout_s=...)
set -eu
cd "$(dirname "$0")/.."
b=build-gpu
# gpu-check.sh makes the build's absolute paths (/work/main/...) lead to
# its copy of the tree: build where they mean this checkout
[ "$(pwd -P)" = /work/main ] || echo "gpu-bundle: warning: the build's paths say $(pwd -P), not /work/main" >&2
[ -d $b ] || meson setup $b -Ddebug=false -Doptimization=2 -Dpython=disabled
ninja -C $b
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/bin"
# objects, static libraries, meson's state and kernel caches stay here
rsync -a --exclude '*.p/' --exclude '*.a' --exclude 'meson-*' --exclude 'clcache/' --exclude '*.ninja' \
    --exclude 'compile_commands.json' $b/ "$stage/build-gpu/"
strip --strip-unneeded "$stage"/build-gpu/tests/test_*
meson introspect $b --tests > "$stage/tests.json"
cp "$(command -v wrk)" "$(command -v clinfo)" "$stage/bin/"
# every shared library the build's programs and wrk load from outside the
# build, but the C and C++ runtimes (a newer system's serve them, and an
# older libstdc++ on the path would break the machine's Python)
find "$stage/build-gpu" "$stage/bin" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
    xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -v "/$b/" | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
rm -rf .gpu
mkdir .gpu
tar -C "$stage" -cf - . | xz -T2 -6 > .gpu/bundle.tar.xz
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
ls -l .gpu/bundle.tar.xz
