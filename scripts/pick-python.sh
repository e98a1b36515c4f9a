#!/usr/bin/env bash
# Prints the interpreter `make` builds `.venv` from: Debian's CPython 3.11
# when it is there and can make a virtualenv, else the first `python3`.
#
# Why not simply the first `python3` on PATH: a pyenv build made with
# pyenv's defaults (a shared libpython, no profile-guided optimisation)
# runs the scheduler's per-request Python at about 1.3x the CPU of Debian's
# /usr/bin/python3.11, which Debian builds with PGO and links statically
# (docs/performance.md, issue 17 session 20, the same code alternating on
# one machine). Operators run the distributions' or the official images'
# optimised builds; the demo, the tests and the benchmarks should too.
#
# `make PYTHON=/path/to/python3.11 ...` still picks an interpreter by hand.
set -euo pipefail

debian=/usr/bin/python3.11
if [ -x "$debian" ] && "$debian" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "$debian"
else
  echo python3
fi
