#!/usr/bin/env sh
# Build chat.wasm from plugin.js against Tocsin's plugin contract (wit/v0.3.0).
# Needs node and npm; installs componentize-js (and jco) locally on first use.
set -eu
cd "$(dirname "$0")"
[ -x node_modules/.bin/componentize-js ] || npm install --no-audit --no-fund --no-package-lock --loglevel=error
# The WIT is read from inside this folder.
mkdir -p wit
cp "${TOCSIN_WIT:-../../../wit/v0.3.0}/plugin.wit" wit/plugin.wit
# componentize-js directly: `jco componentize` 1.35 cannot read WIT files (its WASI shim
# opens no directories).
node_modules/.bin/componentize-js plugin.js --wit wit --world-name channel \
  --disable stdio random clocks http fetch-event --out chat.wasm
echo "built $(pwd)/chat.wasm"
