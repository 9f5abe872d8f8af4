#!/usr/bin/env bash
# Installs the npm package hashring, pinned, for compat's interop tests and the golden
# generator (compat/testdata/gen). It goes to a cache directory outside the work tree:
# $CHASH_NPM_DIR if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/chash/npm, the directory
# compat's tests look in (compat/internal/live: NPMDir).
set -euo pipefail
dir=${CHASH_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chash/npm}
want=3.2.0
have=$(node -p "require('$dir/node_modules/hashring/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "hashring@$want"
fi
node -p "'hashring ' + require('$dir/node_modules/hashring/package.json').version + ' in $dir'"
