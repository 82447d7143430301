#!/usr/bin/env bash
# System packages the tests use, installed with apt when run as root (make test calls this):
# bubblewrap (the code sandbox's isolation), Debian's chromium + chromium-driver (the trace
# viewer's browser test) and postgresql (the server programs the PostgreSQL trace-store tests
# start in a temporary folder; no cluster of the package's own is created or started).
# Without root it says what to install and changes nothing.
set -uo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if ! command -v pg_ctl >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  missing+=(postgresql)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "tests need: sudo apt-get install ${missing[*]} (the viewer test fails without chromium;" \
    "the sandbox tests run in fallback mode without bubblewrap; the PostgreSQL tests are" \
    "skipped without postgresql)" >&2
  exit 0
fi
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
  # the tests start their own servers: the package's default cluster is neither created nor run
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/consortium-tests.conf
fi
echo "installing ${missing[*]} with apt-get (once)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
  || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
  || echo "apt-get could not install ${missing[*]}" >&2
exit 0
