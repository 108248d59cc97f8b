#!/usr/bin/env bash
# The GPU check in one script, sized for about 420 s on an H100/H200 (machine start not included), each stage cut
# off at its own time limit and the whole at GPU_CHECK_SECONDS (420 by default), so an overrun loses only the
# stages after it, most needed first.  The stages that time nothing run side by side (phase 1); the timed ones run
# alone after them (phase 2), so no speed figure shares the machine:
#
#   phase 1, side by side:
#   tests_tree,      pytest -m gpu tests/gpu in two processes (its time is compiling some 60 kernels, one core
#   tests_shuffle    each): both kernels against their CPU references (each reduction at the cases' block size,
#                    64 and 256 threads; the defaults' sizes at d 100/128/300), the additivity of 32 concurrent
#                    copies of a sentence, and (tests_shuffle) the related-words tests, PAR's included
#   quality_d128     quality after 5 epochs over 3 seeds at d 128: full-w2v and par beside CPU hogbatch and CPU par,
#                    the bars judged; PyTorch SGNS's quality (1 seed) where torch imports with CUDA
#   phase 2, one at a time:
#   speed_d128       words/s at d 128, both reductions, CPU hogbatch on every core, PyTorch SGNS; the words/s floor
#   speed_d100_d300  words/s at d 100 and 300 (shuffle), CPU hogbatch
#   launch_quality   full-w2v's words per launch (the sentences in flight) against its speed and quality, 3 seeds
#                    at d 128 (CPU hogbatch's quality of the same seeds: quality_d128)
#   launch_cap       the same at 524k-2M words per launch with gpu_writers_cap 16 (output and input rows), and
#                    the cap's cost in words/s at the default launch
#   model_check      the related-words runs on the GPU and in the CPU model of its Hogwild with this GPU's resident
#                    blocks: loss per epoch and probes side by side
#   par_launches     PAR at 100k and 1M words per launch: speed and quality, 1 seed
#   blocks_noloss    the block-size sweep at d 128 without the loss (what the loss costs: against speed_d128)
#
#     benchmarks/gpu_check.sh OUT_DIR [CORPUS]     # logs and JSON under OUT_DIR
#     GPU_CHECK_SECONDS=600 benchmarks/gpu_check.sh OUT_DIR    # a larger budget: the later stages too
#     GPU_CHECK_ARCHIVE=/path/gpu.tgz benchmarks/gpu_check.sh OUT_DIR   # and OUT_DIR as one archive at the end
#
# Every stage's log is OUT_DIR/<stage>.log; the bench stages also write OUT_DIR/<stage>.json (benchmarks/harness.py's
# JSON, the machine and GPU named; rewritten after every measurement, so a stage cut off keeps what it measured).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: benchmarks/gpu_check.sh OUT_DIR [CORPUS]}
corpus=${2:-../shared/data/corpus/enwiki2015_text8style_100M.txt.xz}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
py=${PYTHON:-python3}
start=$SECONDS
budget=${GPU_CHECK_SECONDS:-420}

stage() {  # stage NAME LIMIT_S CMD...: run CMD with at most LIMIT_S seconds (less if the budget is nearly spent)
    local name=$1 limit=$2
    shift 2
    local left=$((budget - (SECONDS - start)))
    ((limit > left)) && limit=$left
    if ((limit < 20)); then
        echo "== $name: skipped (${left}s of the budget left)" | tee -a "$out/summary.log"
        return
    fi
    echo "== $name (limit ${limit}s): $*" | tee -a "$out/summary.log"
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
    echo "== $name: rc $? in $((SECONDS - t0))s" | tee -a "$out/summary.log"
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)"
    "$py" -c "import numpy, numba, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, \
'numba-cuda', numba_cuda.__version__)"
} >"$out/machine.log" 2>&1

bench=("$py" benchmarks/bench_gpu.py --no-tests --corpus "$corpus" --big-words 0)
# phase 1: nothing here is timed, so the three share the machine ("-k tree" and "-k 'not tree'" split the tests)
tests=("$py" -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rf)
stage tests_tree 240 "${tests[@]}" -k tree &
tree_pid=$!
stage tests_shuffle 240 "${tests[@]}" -k "not tree" &
shuffle_pid=$!
stage quality_d128 240 "${bench[@]}" --dims 128 --no-speed --cpu-quality hogbatch par --out "$out/quality_d128.json"
wait "$tree_pid" "$shuffle_pid"
# phase 2: the speed runs, alone on the machine, then the rest as the budget allows
stage speed_d128 60 "${bench[@]}" --dims 128 --no-quality --out "$out/speed_d128.json"
stage speed_d100_d300 45 "${bench[@]}" --dims 100 300 --reductions shuffle --no-quality --no-torch \
    --out "$out/speed_d100_d300.json"
stage launch_quality 60 "${bench[@]}" --algos full-w2v --quality-dims 128 --reductions shuffle --seeds 1 2 3 \
    --no-cpu --words-per-launch 131072 262144 524288 1048576 --out "$out/launch_quality.json"
stage launch_cap 75 "${bench[@]}" --algos full-w2v --quality-dims 128 --reductions shuffle --seeds 1 2 3 \
    --no-cpu --writers-cap 16 --words-per-launch 262144 524288 1048576 2097152 --out "$out/launch_cap.json"
stage model_check 150 "${bench[@]}" --model-check --out "$out/model_check.json"
stage par_launches 60 "${bench[@]}" --algos par --quality-dims 128 --reductions shuffle --seeds 1 --no-cpu \
    --words-per-launch 100000 1048576 --out "$out/par_launches.json"
stage blocks_noloss 50 "${bench[@]}" --dims 128 --no-quality --no-torch --no-cpu --no-loss --reductions shuffle \
    --threads-per-block 32 64 128 256 --out "$out/blocks_noloss.json"
echo "total $((SECONDS - start))s" | tee -a "$out/summary.log"
# One file to copy off the machine (a rented GPU, a job's output folder): GPU_CHECK_ARCHIVE=PATH.tgz
if [[ -n ${GPU_CHECK_ARCHIVE:-} ]]; then
    tar czf "$GPU_CHECK_ARCHIVE" -C "$(dirname "$out")" "$(basename "$out")"
fi
