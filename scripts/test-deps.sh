#!/usr/bin/env bash
# Installs what toolgate's tests need on a fresh Debian machine. Idempotent:
# it installs only what is missing.
set -euo pipefail

need_apt=()
command -v git >/dev/null || need_apt+=(git)
command -v bwrap >/dev/null || need_apt+=(bubblewrap) # the sandbox tests run bubblewrap
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip) # and pip inside it
command -v redis-server >/dev/null || need_apt+=(redis-server) # the shared-state tests start their own
command -v curl >/dev/null || need_apt+=(curl) # the egress tests run curl and wget inside the sandbox
command -v wget >/dev/null || need_apt+=(wget)
command -v prometheus >/dev/null || need_apt+=(prometheus) # the telemetry test scrapes toolgate with a real one
command -v chromium >/dev/null || need_apt+=(chromium) # the console's browser tests drive it headless
command -v rpm >/dev/null || need_apt+=(rpm) # the packaging tests read the .rpm (dpkg-deb reads the .deb)
command -v skopeo >/dev/null || need_apt+=(skopeo) # and the image layouts, as podman would
command -v pipx >/dev/null || need_apt+=(pipx) # the gateway runs a local Python server through pipx run in its box
[ -x /usr/sbin/apparmor_parser ] || need_apt+=(apparmor) # the chart's AppArmor profile is compiled (not loaded)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
go mod download
# The upstream modules go.mod replaces by the patched copies in third_party:
# internal/librarytest builds a module that requires toolgate against them.
go mod download $(go list -m -f '{{.Path}}@{{.Version}}' github.com/modelcontextprotocol/go-sdk github.com/santhosh-tekuri/jsonschema/v6)

# Node.js >= 22 and the MCP tools the tests run against toolgate's MCP server
# (the official conformance suite, the MCP Inspector CLI and TypeScript SDK)
# and the reference servers the gateway tests and bench/mcp use as upstreams,
# all from npm, pinned, cached under .cache/ (git-ignored).
cd "$(dirname "$0")/.."
NODE_VERSION=22.23.3
MCP_PACKAGES=(
  @modelcontextprotocol/conformance@0.1.16
  @modelcontextprotocol/inspector@2.12.0
  @modelcontextprotocol/sdk@1.32.2
  @modelcontextprotocol/server-everything@2026.8.31
  @modelcontextprotocol/server-filesystem@2026.8.31
)
node_bin=.cache/node22/node_modules/node/bin/node
if ! command -v npm >/dev/null; then
  echo "installing Debian package: npm"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm
fi
if [ "$("$node_bin" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  echo "installing node@$NODE_VERSION from npm into .cache/node22"
  npm install --prefix .cache/node22 --no-audit --no-fund --save-exact "node@$NODE_VERSION" >/dev/null
  "$node_bin" --version >/dev/null || { echo "node@$NODE_VERSION did not install a working .cache/node22/node_modules/node/bin/node" >&2; exit 1; }
fi
mcp_ok=1
for p in "${MCP_PACKAGES[@]}"; do
  name=${p%@*}; want=${p##*@}
  have=$("$node_bin" -p "require('./.cache/mcp/node_modules/$name/package.json').version" 2>/dev/null || true)
  [ "$have" = "$want" ] || mcp_ok=0
done
if [ $mcp_ok -eq 0 ]; then
  echo "installing ${MCP_PACKAGES[*]} from npm into .cache/mcp"
  PATH="$PWD/.cache/node22/node_modules/node/bin:$PATH" \
    npm install --prefix .cache/mcp --no-audit --no-fund --save-exact "${MCP_PACKAGES[@]}" >/dev/null
fi
