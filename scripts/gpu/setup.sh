# Source on a CUDA machine without network access: install harness from this checkout into
# /tmp/site with the machine's own torch / transformers / sentence-transformers, plus the wheels
# carried in .whl/ (faiss-cpu, msgspec, orjson: the dependencies such an image lacks).
# Usage: . scripts/gpu/setup.sh
set -e
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade --target /tmp/site .
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
export HF_HUB_OFFLINE=1 HARNESS_OFFLINE=1 PYTHONUNBUFFERED=1
set +e
