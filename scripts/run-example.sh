#!/usr/bin/env bash
# Set up .venv (CPython 3.10) if needed, then train the bundled digits template headless,
# printing progress and the final metrics. Results go to ./results/digits_cnn/<time>.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" test
exec "$root/.venv/bin/nnconsole" train "$root/project_templates/digits_cnn/project.yaml" \
    --output "$root/results/digits_cnn" "$@"
