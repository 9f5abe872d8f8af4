#!/usr/bin/env bash
# Installs the npm package hashring, pinned, for compat's interop tests and the golden
# generator (compat/testdata/gen). It goes to a cache directory outside the work tree:
# $CHASH_NPM_DIR if set, else chash/npm in the user's cache directory
# (${XDG_CACHE_HOME:-$HOME/.cache}), or chash-npm in $TMPDIR or /tmp without a home, the directory
# compat's tests look in (compat/internal/live: NPMDir).
set -euo pipefail
cache=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}
if [ -n "$cache" ]; then def=$cache/chash/npm; else def=${TMPDIR:-/tmp}/chash-npm; fi
dir=${CHASH_NPM_DIR:-$def}
want=3.2.0
have=$(node -p "require('$dir/node_modules/hashring/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "hashring@$want"
fi
node -p "'hashring ' + require('$dir/node_modules/hashring/package.json').version + ' in $dir'"
