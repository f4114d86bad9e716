#!/usr/bin/env bash
# Build tcp.wasm (a WebAssembly component) from this crate.
set -euo pipefail
cd "$(dirname "$0")"
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --release --target wasm32-wasip2
cp "$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/wasm32-wasip2/release/tocsin_example_tcp.wasm" tcp.wasm
echo "wrote $(pwd)/tcp.wasm"
