#!/usr/bin/env bash
# Installs the missing Debian packages listed in system-packages.txt (as root), or prints the
# one apt command to run; then checks the language toolchains the workloads are built with.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

mapfile -t wanted < <(grep -v '^[[:space:]]*#' "$here/system-packages.txt" | awk NF)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "deps: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "deps: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null; then
  echo "deps: cargo not found; install Rust with rustup (https://rustup.rs) and re-run make deps" >&2
  exit 1
fi
# rustfmt and clippy are part of `make test`; rustup installs them when absent.
if command -v rustup >/dev/null; then
  for comp in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp"
  done
fi

# bpftrace needs tracefs for tracepoints; some machines boot without it mounted.
if [[ $(id -u) -eq 0 && -d /sys/kernel/tracing && ! -d /sys/kernel/tracing/events ]]; then
  mount -t tracefs nodev /sys/kernel/tracing \
    || echo "deps: could not mount tracefs at /sys/kernel/tracing: bpftrace probes will be unavailable" >&2
fi
