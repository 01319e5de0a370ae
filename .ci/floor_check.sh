#!/usr/bin/env bash
# Floor check: the lowest versions pyproject.toml allows must really work.
#
# In a throwaway venv (outside the checkout) on the requires-python floor's interpreter:
#   1. torch at its floor: the PyPI wheel (a CUDA build) without its ~2 GB of NVIDIA libraries,
#      made importable on this CPU-only machine by .ci/torch_cpu_shim.py (CPU builds are only on
#      download.pytorch.org, which these machines cannot reach);
#   2. every other direct dependency, and the test extra, at its declared floor: uv's
#      `--resolution lowest-direct` picks the lowest version each floor allows (transitive
#      dependencies stay at their newest compatible versions), and .ci/floor_pins.py --check
#      then fails unless every direct dependency is installed at exactly its declared floor
#      (if it is not, the floors cannot be installed together and one of them is not honest);
#   3. every playground module must import, and the fast tests that reach each floored
#      dependency must pass (torch: models/training/generation; tokenizers, captum, pandas,
#      altair, scipy, scikit-learn, pillow, safetensors, transformers, gradio: see TESTS).
# What cannot be done on this machine (no registry, no compiler, no interpreter for the Python
# floor) is skipped with a line that starts "FLOOR CHECK SKIPPED"; a floor that does not work
# fails. FLOOR_VENV moves the venv (default /tmp/playground-floor-venv, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${FLOOR_VENV:-/tmp/playground-floor-venv}
TESTS=(tests/models tests/training tests/generation tests/tokenization tests/charts
       tests/analysis/test_attributions.py tests/ui/test_tokenizer_tab.py tests/ui/test_app.py)
start=$(date +%s)
say() { echo "floor check: $*"; }
skip() { echo "FLOOR CHECK SKIPPED: $*"; exit 0; }
cleanup() { rm -rf "$VENV"; }
trap cleanup EXIT

py_floor=$(python3 .ci/floor_pins.py --python)
if command -v "python$py_floor" >/dev/null && "python$py_floor" -c '' 2>/dev/null; then
    base="python$py_floor"
else
    skip "requires-python says >=$py_floor but no python$py_floor is installed here"
fi
rm -rf "$VENV"
"$base" -m venv "$VENV" || skip "python$py_floor -m venv failed"
PY="$VENV/bin/python"
say "Python $("$PY" -c 'import platform; print(platform.python_version())') (requires-python floor $py_floor)"
"$PY" -m pip install --quiet --upgrade pip uv 2>&1 | grep -v "is ignored" || true
"$VENV/bin/uv" --version >/dev/null 2>&1 || skip "could not install uv from the package registry"

torch_pin=$(python3 .ci/floor_pins.py --only torch)
say "installing $torch_pin (PyPI wheel, without its NVIDIA libraries)"
if ! "$PY" -m pip install --quiet --no-deps --only-binary=:all: "$torch_pin" 2>&1 | grep -v "is ignored"; then
    :
fi
"$PY" -c 'import importlib.metadata as m; m.version("torch")' 2>/dev/null \
    || skip "could not download $torch_pin from the package registry"
shim_rc=0
"$PY" .ci/torch_cpu_shim.py "$PY" || shim_rc=$?
if [ "$shim_rc" -ne 0 ]; then
    skip "$torch_pin was downloaded but cannot be made to run on this CPU-only machine (torch_cpu_shim exit $shim_rc, above)"
fi

say "installing the other floors (uv --resolution lowest-direct, .[test])"
if ! "$VENV/bin/uv" pip install --quiet --python "$PY" --resolution lowest-direct -e ".[test]"; then
    echo "floor check: FAILED: the declared floors cannot be installed together (uv's message above)"
    exit 1
fi
"$PY" .ci/floor_pins.py --check
"$PY" .ci/import_all.py
say "installed in $(( $(date +%s) - start )) s; running the fast tests at the floors"
"$PY" -m pytest -q -p no:cacheprovider -m "not slow and not browser" "${TESTS[@]}"
say "passed in $(( $(date +%s) - start )) s"
