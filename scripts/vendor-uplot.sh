#!/usr/bin/env bash
# vendor-uplot.sh refreshes the console's chart library, web/vendor/uplot,
# from the npm registry: the ES module build, its stylesheet and its licence,
# pinned to one version. The console never loads anything from a CDN.
#
#   scripts/vendor-uplot.sh            # the pinned version below
#   scripts/vendor-uplot.sh 1.6.33     # another version: then pin it here
#
# Needs npm (it only downloads the package; nothing is installed or built).
set -euo pipefail

version="${1:-1.6.32}"
cd "$(dirname "$0")/.."
dest=web/vendor/uplot

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# npm pack checks the tarball against the registry's integrity hash.
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null)
tar -xzf "$tmp/uplot-$version.tgz" -C "$tmp"

rm -rf "$dest"
mkdir -p "$dest"
cp "$tmp/package/dist/uPlot.esm.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$dest/"
{
	echo "uplot $version from the npm registry (scripts/vendor-uplot.sh)"
	echo "sha256 of uplot-$version.tgz: $(sha256sum "$tmp/uplot-$version.tgz" | cut -d' ' -f1)"
} >"$dest/VERSION"
echo "vendored uplot $version into $dest"
