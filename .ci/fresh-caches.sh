# Sourced by .ci/run and scripts/time_command.sh: every cache the project writes points at an empty folder under
# $1, so a run starts as on a new machine: the offline models and token files (SINKPAPER_CACHE), inductor's and
# Triton's compiled kernels, the Hugging Face hub and datasets caches. pip's cache is left alone (it only saves
# downloads; what gets installed is pinned by constraints.txt either way).
fresh_caches() {
  local root=${1:?fresh_caches DIR}
  mkdir -p "$root"
  export SINKPAPER_CACHE="$root/sinkpaper" TORCHINDUCTOR_CACHE_DIR="$root/inductor" TRITON_CACHE_DIR="$root/triton" \
         HF_HOME="$root/huggingface" MPLCONFIGDIR="$root/matplotlib"
}
