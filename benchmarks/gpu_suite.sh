#!/usr/bin/env bash
# Every GPU check and benchmark in one run, for a machine with one CUDA device (about 5 minutes on an H200).
# Needs the Fashion-MNIST IDX files under data/FashionMNIST/raw (python -m fibook data --download, or a copy).
# Writes its tables to ${OUT:-gpu_out}/ and prints them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu_out}
mkdir -p "$out"
py=${PYTHON:-python}
export PYTHONUNBUFFERED=1
{
  echo "# GPU suite, $(date -u +%Y-%m-%dT%H:%MZ)"
  $py -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"
  echo "## CUDA tests"
  $py -m pytest -q tests/forgetting/test_batches.py tests/forgetting/test_train.py tests/forgetting/test_fused.py -k "cuda or fused" 2>&1 | tail -3
  echo "## train_throughput (batch 128)"
  $py benchmarks/train_throughput.py --device cuda --steps 20
  echo "## sweep_throughput part b (fused populations)"
  $py benchmarks/sweep_throughput.py --part b
  echo "## a fused smoke sweep on the GPU, through the results store"
  FIBOOK_RESULTS="$out/results" $py -m fibook sweep optimizers --scale smoke --device cuda --fuse --quiet
  FIBOOK_RESULTS="$out/results" $py -m fibook status optimizers --scale smoke
} 2>&1 | tee "$out/gpu_suite.txt"
