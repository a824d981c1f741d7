# Node.js from the npm registry's `node` package, which carries the binary and its headers:
# CI machines come with an older Node than the project's floor (package.json `engines`).
#
#   source .ci/node.sh && use_node 22
#
# Installs that major version once under NODE_CACHE (default /tmp/folder-service-node), puts
# it first on PATH for this shell, and points npm's native builds at its headers:
# better-sqlite3's prebuilt download fails here (the machine reaches only the npm registry and
# Debian's packages), so it is built from source for that Node's ABI. npm stays the machine's.
use_node() {
  local major="$1"
  local dir="${NODE_CACHE:-/tmp/folder-service-node}/${major}"
  if [ ! -x "${dir}/node_modules/node/bin/node" ]; then
    npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "node@${major}" >/dev/null
  fi
  local headers
  headers=$(find "$dir" -path '*/include/node/node_version.h' | head -n 1)
  [ -n "$headers" ] || { echo "node@${major} came without its headers" >&2; return 1; }
  export PATH="${dir}/node_modules/node/bin:${PATH}"
  export npm_config_nodedir="${headers%/include/node/node_version.h}"
  hash -r
  node --version | grep -q "^v${major}\." || { echo "expected Node ${major}, got $(node --version)" >&2; return 1; }
}
