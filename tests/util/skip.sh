#!/bin/sh
# A test this build cannot run (tests/meson.build: an optional dependency
# it lacks): says why and exits 77, which meson reports as SKIP.
echo "skipped: $*"
exit 77
