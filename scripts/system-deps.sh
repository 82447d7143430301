#!/usr/bin/env bash
# System packages the tests use, installed with apt when run as root (make test calls this):
# bubblewrap (the code sandbox's isolation) and Debian's chromium + chromium-driver (the trace
# viewer's browser test). Without root it says what to install and changes nothing.
set -uo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "tests need: sudo apt-get install ${missing[*]} (the viewer test fails without chromium;" \
    "the sandbox tests run in fallback mode without bubblewrap)" >&2
  exit 0
fi
echo "installing ${missing[*]} with apt-get (once)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
  || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
  || echo "apt-get could not install ${missing[*]}" >&2
exit 0
