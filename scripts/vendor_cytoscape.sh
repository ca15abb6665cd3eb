#!/bin/sh
# Vendor cytoscape.js into the web's static files (docs/decisions/0043-graph-view.md).
#
# The graph page draws with cytoscape, served from Relata's own origin under its strict CSP
# (script-src 'self'; no CDN). This fetches the pinned release from the npm registry with
# `npm pack`, checks the tarball against the registry's pinned integrity and the extracted
# build against its pinned sha256 (this script is the lock; tests/unit/test_vendored_js.py
# checks the committed file against MIN_SHA256), and copies the minified build and its
# licence next to the other static files. To upgrade: change VERSION, INTEGRITY and
# MIN_SHA256 together, run `make vendor-js`, commit. Nothing is downloaded at build or run time.
set -eu

VERSION="3.34.4"
INTEGRITY="sha512-msY99tMY8iWTg+sIPGfSqDcPNOt4xcj+v/K/7qUFaCUxxlqnMkUYLBjRUzn9W5CU/R2hrmtJa5+UtovrEM2ctg=="
MIN_SHA256="081591ab735b2b6a3b31a3c60f8f3a3e2fee8c92939e0c7820ad1208571b6cd8"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/src/relata/web/static"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
timeout 300 npm pack --silent "cytoscape@$VERSION" >/dev/null
TARBALL="cytoscape-$VERSION.tgz"
GOT="sha512-$(openssl dgst -sha512 -binary "$TARBALL" | base64 | tr -d '\n')"
if [ "$GOT" != "$INTEGRITY" ]; then
  echo "vendor_cytoscape: $TARBALL has integrity $GOT, expected $INTEGRITY" >&2
  exit 1
fi
tar xzf "$TARBALL" package/dist/cytoscape.min.js package/LICENSE
GOT="$(sha256sum package/dist/cytoscape.min.js | cut -d' ' -f1)"
if [ "$GOT" != "$MIN_SHA256" ]; then
  echo "vendor_cytoscape: cytoscape.min.js has sha256 $GOT, expected $MIN_SHA256" >&2
  exit 1
fi
cp package/dist/cytoscape.min.js "$DEST/cytoscape.min.js"
cp package/LICENSE "$DEST/cytoscape.LICENSE"
echo "vendored cytoscape $VERSION into src/relata/web/static/cytoscape.min.js"
