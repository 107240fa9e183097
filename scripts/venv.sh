#!/usr/bin/env bash
# The virtualenv, from the lock files in requirements/ (pinned, generated from
# pyproject.toml by `make lock`), installed with uv when it can be had, else pip.
#
#   scripts/venv.sh install VENV LOCK [PKG...]   # PKG: built afresh first, never from a cache
#   scripts/venv.sh lock [--upgrade]             # regenerate requirements/*.lock (kept
#                                                # versions stay, unless --upgrade)
#
# uv is used from PATH, or from the venv itself; failing both it is installed
# into the venv from PyPI (a few seconds), and where even that fails pip does the
# work alone. INSTALLER=pip forces pip, INSTALLER=uv refuses to fall back.
set -euo pipefail
cd "$(dirname "$0")/.."
INSTALLER=${INSTALLER:-auto}
# The lock files' Python: the one every machine of this kind runs.
LOCK_PYTHON=3.11

say() { echo "[venv] $*" >&2; }

# uv's path, or nothing. $1: the venv, where a bootstrapped uv lives.
find_uv() {
  [ "$INSTALLER" = pip ] && return 0
  if command -v uv >/dev/null 2>&1; then command -v uv; return 0; fi
  if [ -x "$1/bin/uv" ]; then echo "$1/bin/uv"; return 0; fi
}

# Make sure VENV exists, with pip in it (the demo's background build of the
# local model uses pip: its verbose log is where the progress is read).
make_venv() {
  local venv=$1 uv=$2
  [ -x "$venv/bin/python" ] && return 0
  local python; python=$(python3 -c 'import sys; print(sys.executable)')
  if [ -n "$uv" ]; then
    "$uv" venv -q --seed --python "$python" "$venv"
  else
    python3 -m venv "$venv"
  fi
}

bootstrap_uv() {
  local venv=$1
  [ "$INSTALLER" = pip ] && return 0
  if "$venv/bin/python" -m pip install -q --disable-pip-version-check uv >&2; then
    echo "$venv/bin/uv"
  elif [ "$INSTALLER" = uv ]; then
    say "uv could not be installed (INSTALLER=uv)"; return 1
  else
    say "uv could not be installed: installing with pip"
  fi
}

install() {
  local venv=$1 lock=$2; shift 2
  local uv; uv=$(find_uv "$venv")
  make_venv "$venv" "$uv"
  [ -n "$uv" ] || uv=$(bootstrap_uv "$venv")
  local python=$venv/bin/python fresh=()
  for pkg in "$@"; do
    # The lock's pin of PKG, built with no cache: a wheel built earlier (for
    # another CPU, or with other CMAKE_ARGS) must not be reused.
    fresh+=("$(grep -i "^${pkg}==" "$lock")")
  done
  if [ -n "$uv" ]; then
    say "installing $lock with uv"
    [ ${#fresh[@]} -eq 0 ] || "$uv" pip install -q --python "$python" --no-cache "${fresh[@]}"
    # Bytecode compiled now, on every core, as pip does: otherwise the demo's five
    # processes, started at once, each compile the same modules on first import.
    "$uv" pip install -q --python "$python" --compile-bytecode -r "$lock"
    "$uv" pip install -q --python "$python" --no-deps -e .
  else
    say "installing $lock with pip"
    [ ${#fresh[@]} -eq 0 ] || "$python" -m pip install -q --no-cache-dir "${fresh[@]}"
    "$python" -m pip install -q -r "$lock"
    "$python" -m pip install -q --no-deps -e .
  fi
}

# test.lock first (everything), then demo.lock within it, so that a package both
# lock name has one version: the demo's venv becomes the tests' by adding, never by changing.
lock() {
  local venv=${VENV:-.venv} uv
  uv=$(find_uv "$venv")
  if [ -z "$uv" ]; then
    make_venv "$venv" ""
    uv=$(INSTALLER=uv bootstrap_uv "$venv")
  fi
  mkdir -p requirements
  "$uv" pip compile -q pyproject.toml --python-version "$LOCK_PYTHON" --extra dev --extra local "$@" \
    -o requirements/test.lock
  "$uv" pip compile -q pyproject.toml --python-version "$LOCK_PYTHON" -c requirements/test.lock \
    -o requirements/demo.lock
  say "wrote requirements/test.lock and requirements/demo.lock"
}

case ${1:-} in
  install) shift; install "$@" ;;
  lock) shift; lock "$@" ;;
  *) echo "usage: $0 install VENV LOCK [PKG...] | lock" >&2; exit 2 ;;
esac
