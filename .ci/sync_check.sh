#!/usr/bin/env bash
# In a copy of the course, nbdev_export and nbdev_clean must change nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$tmp/" 2>/dev/null || true)
(cd "$tmp" && nbdev_export && nbdev_clean) >/dev/null
status=0
if ! diff -r -q -x __pycache__ "$root/minitorch" "$tmp/minitorch"; then
  echo "FAIL: minitorch/ is not what the notebooks export. Run 'make export' and commit."
  status=1
fi
if ! diff -r -q -x .ipynb_checkpoints "$root/nbs" "$tmp/nbs"; then
  echo "FAIL: notebooks are not clean (outputs, execution counts or metadata). Run 'make export' and commit."
  status=1
fi
[ $status -eq 0 ] && echo "sync: package and notebooks are in sync and clean"
exit $status
