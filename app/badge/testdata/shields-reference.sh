#!/bin/sh
# Regenerates shields-widths.json: the layout of badges drawn by shields.io's
# own renderer, the npm package badge-maker, for the cases in
# shields-reference.mjs. TestRenderLaysOutAsShields holds Render to it.
# Needs node, npm and the npm registry; installs nothing outside a
# temporary directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund badge-maker@6.0.0 >/dev/null
cp "$here/shields-reference.mjs" .
node shields-reference.mjs >"$here/shields-widths.json"
