#!/usr/bin/env bash
# DESIGN §2: dependencies point one way (base <- fnn <- scheduler <- apps, codelets <- apps). The
# codelets include nothing from scheduler/ (the scheduler must work for any StarPU program, so
# what it does for our codelets it does in its own hooks) nor from apps/; base/ includes
# nothing of the project's.
#   tests/layering.sh SOURCE_DIR
# Exit 0 when the rule holds; else one line naming every offending include, exit 1.
set -u
src=${1:?usage: layering.sh SOURCE_DIR}
if [[ ! -d $src/codelets ]]; then
  echo "layering: no codelets/ under '$src'"
  exit 2
fi
hits=$(cd "$src" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](scheduler|apps)/' codelets |
       sed -E 's/^([^:]*:[0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*/\1 /' | paste -sd ';' | sed 's/;/; /g')
if [[ -n $hits ]]; then
  echo "layering: codelets/ must include nothing from scheduler/ or apps/ (DESIGN §2): $hits"
  exit 1
fi
hits=$(cd "$src" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](fnn|scheduler|apps|codelets)/' base |
       sed -E 's/^([^:]*:[0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*/\1 /' | paste -sd ';' | sed 's/;/; /g')
if [[ -n $hits ]]; then
  echo "layering: base/ must include nothing from fnn/, scheduler/, apps/ or codelets/: $hits"
  exit 1
fi
echo "layering: codelets/ includes nothing from scheduler/ or apps/, base/ nothing of the project's"
