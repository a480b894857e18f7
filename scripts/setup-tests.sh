#!/usr/bin/env bash
# Everything the test suite needs on a fresh machine, installed only where missing:
# Debian packages (PHP's stomp extension, a Java runtime for PySpark, Chromium and its
# driver for browser tests, node/npm for stomp.js, ActiveMQ for its example activemq.xml
# files and the side-by-side tests, with XStream and Jettison), the Python virtualenv
# with the project and its test extras, and the npm packages of the JavaScript tests.
# Safe to run again: each step is skipped when what it installs is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have php || need+=(php-cli)
if ! (have php && php -m 2>/dev/null | grep -qix stomp); then need+=(php-stomp); fi
have java || need+=(default-jre-headless)
have chromium || need+=(chromium)
have chromedriver || need+=(chromium-driver)
have node || need+=(nodejs)
have npm || need+=(npm)
# ActiveMQ's own configuration files, which the config loader must read (tests/config).
[ -d /usr/share/doc/activemq/examples/conf ] && [ -f /etc/activemq/instances-available/main/activemq.xml ] \
    || need+=(activemq)
# XStream and Jettison, which upstream ActiveMQ ships and Debian's package leaves out: the
# peer ActiveMQ in the side-by-side tests sends STOMP clients no advisory, statistics
# reply or jms-map-* body without them (tests/activemq_peer.py puts them on its classpath).
[ -f /usr/share/java/xstream.jar ] || need+=(libxstream-java)
[ -f /usr/share/java/jettison.jar ] || need+=(libjettison-java)

if ((${#need[@]})); then
    if [ "$(id -u)" != 0 ] || ! have apt-get; then
        echo "setup-tests: missing ${need[*]}; install them with apt-get (needs root)" >&2
        exit 1
    fi
    echo "setup-tests: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
    }
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# The project and its test extras (STOMPD_PURE: setup.py compiles nothing here), then the
# hot path compiled in place with the venv's mypyc where a C compiler is there, and only
# when a source changed since the last build (scripts/compiled.py; the suite then runs
# on that build, as CI's does).
STOMPD_PURE=1 .venv/bin/pip install -q -e '.[test]'
.venv/bin/python scripts/compiled.py build

# promtool (tests/docker check the Prometheus config and the Grafana dashboard's queries):
# that one binary out of Debian's prometheus package, so no Prometheus server is installed.
if [ ! -x .venv/bin/promtool ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && { apt-get download prometheus >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get download prometheus >/dev/null; }; })
    dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
    install -m 0755 "$tmp/usr/bin/promtool" .venv/bin/promtool
    rm -rf "$tmp"
fi

for dir in tests/js; do
    if [ -f "$dir/package.json" ]; then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
done
