#!/usr/bin/env sh
# Build dns.wasm from app.py against Tocsin's plugin contract (wit/v0.3.0).
# Needs componentize-py: python3 -m pip install componentize-py==0.25.1
set -eu
cd "$(dirname "$0")"
WIT="${TOCSIN_WIT:-../../../wit/v0.3.0}"
componentize-py -d "$WIT" -w monitor componentize app -o dns.wasm
echo "built $(pwd)/dns.wasm"
