#!/bin/bash
# Says, after `make python-env`, when other users cannot run .venv/bin/harness: a venv's
# python is a link to the interpreter it was made with, and one under a private folder
# (root's pyenv in /root) cannot be started by anyone else ("bad interpreter").
set -eu
venv=${1:-.venv}
python=$(readlink -f "$venv/bin/python")
dir=$(dirname "$python")
while [ "$dir" != / ]; do
	if [ "$(( 0$(stat -c %a "$dir") & 1 ))" -eq 0 ]; then
		echo "note: $venv/bin/harness runs for $(id -un) only: its Python $python is under" \
			"$dir, which other users cannot enter; for a checkout others use too, make the" \
			"venv with a system Python: rm -rf $venv && make python-env PYTHON=/usr/bin/python3" >&2
		exit 0
	fi
	dir=$(dirname "$dir")
done
