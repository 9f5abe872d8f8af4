// hashring.js routes keys with the real npm package hashring, for chash's compat
// tests.
//
// usage: node hashring.js HOST:PORT:WEIGHT... <keys
//
// It builds new HashRing({'HOST:PORT': WEIGHT, ...}) with the package's defaults
// (md5, 40 vnodes, 4 replicas) and prints ring.get(key) for every key on stdin
// (UTF-8, one per line). The package is loaded from $CHASH_NPM_DIR/node_modules, where
// .ci/setup.d/compat.sh installs it.
'use strict';
const path = require('path');
const HashRing = require(path.join(process.env.CHASH_NPM_DIR, 'node_modules', 'hashring'));

const servers = {};
for (const a of process.argv.slice(2)) {
  const i = a.lastIndexOf(':');
  servers[a.slice(0, i)] = +a.slice(i + 1);
}
const ring = new HashRing(servers);
const input = require('fs').readFileSync(0, 'utf8');
const keys = input.split('\n');
if (keys[keys.length - 1] === '') keys.pop();
process.stdout.write(keys.map((k) => ring.get(k)).join('\n') + (keys.length ? '\n' : ''));
