#!/usr/bin/env bash
# Regenerate the neuronc model-zoo fixtures with real PyTorch inside Debian chroots.
#
#   sudo models/export_all.sh                 # every committed fixture: torch 2.14 (sid) + torch 2.6 (trixie)
#   sudo models/export_all.sh --full          # the full-size zoo into models/full/ (not committed)
#   sudo models/export_all.sh --only mlp,cnn  # a subset
#
# Options:
#   --sid-dir DIR      Debian unstable chroot (default $NEURONC_SID_CHROOT or /var/tmp/neuronc-sid)
#   --trixie-dir DIR   Debian 13 chroot       (default $NEURONC_TRIXIE_CHROOT or /var/tmp/neuronc-trixie)
#   --mirror URL       Debian mirror          (default $NEURONC_DEBIAN_MIRROR or http://deb.debian.org/debian)
#   --only a,b         only these fixtures
#   --no-trixie        skip the torch 2.6 exports
#   --no-sid           skip the torch 2.14 exports
#   --full             export the full-size zoo (torch 2.14 only) into models/full/<name>/
#   --no-intermediates (with --full) skip intermediates.npz
#
# A chroot directory that is missing or empty is created with debootstrap (about two minutes
# each); an existing one is reused, and missing Python packages are installed into it with apt.
# /proc is mounted inside while exporting and unmounted again if this script mounted it.
# Needs root (debootstrap, chroot, mount).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SID_DIR="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
TRIXIE_DIR="${NEURONC_TRIXIE_CHROOT:-/var/tmp/neuronc-trixie}"
MIRROR="${NEURONC_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ONLY=""
DO_SID=1
DO_TRIXIE=1
FULL=0
EXTRA_ARGS=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --sid-dir) SID_DIR="$2"; shift 2 ;;
    --trixie-dir) TRIXIE_DIR="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --no-trixie) DO_TRIXIE=0; shift ;;
    --no-sid) DO_SID=0; shift ;;
    --full) FULL=1; DO_TRIXIE=0; shift ;;
    --no-intermediates) EXTRA_ARGS+=(--no-intermediates); shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "export_all.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ $EUID -ne 0 ]]; then
  echo "export_all.sh: needs root (debootstrap, chroot, mount /proc)" >&2
  exit 1
fi

MOUNTED=()
cleanup() {
  for m in "${MOUNTED[@]:-}"; do
    [[ -n "$m" ]] && umount "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT

log() { echo "[export_all] $*" >&2; }

# ensure_chroot DIR SUITE PKG...: create or reuse a chroot that has the packages installed.
ensure_chroot() {
  local dir="$1" suite="$2"; shift 2
  local pkgs=("$@")
  if [[ ! -x "$dir/usr/bin/python3" ]]; then
    if [[ -d "$dir" && -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
      echo "export_all.sh: $dir exists but is not a usable chroot (no /usr/bin/python3);" \
           "remove it or pass another directory" >&2
      exit 1
    fi
    command -v debootstrap >/dev/null || { log "installing debootstrap"; apt-get install -y debootstrap >&2; }
    log "debootstrap $suite into $dir (log: $dir.debootstrap.log)"
    mkdir -p "$dir"
    local inc; inc="$(IFS=,; echo "${pkgs[*]}")"
    if ! debootstrap --variant=minbase --include="$inc" "$suite" "$dir" "$MIRROR" \
        >"$dir.debootstrap.log" 2>&1; then
      tail -20 "$dir.debootstrap.log" >&2
      echo "export_all.sh: debootstrap $suite failed (log: $dir.debootstrap.log)" >&2
      exit 1
    fi
  fi
  mount_proc "$dir"
  local missing=()
  for p in "${pkgs[@]}"; do
    chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${missing[*]} into $dir"
    chroot "$dir" apt-get -o Acquire::Check-Valid-Until=false update -qq >&2
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false \
      install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

mount_proc() {
  local dir="$1"
  if ! mountpoint -q "$dir/proc"; then
    mount -t proc proc "$dir/proc"
    MOUNTED+=("$dir/proc")
  fi
}

# same_content OLD NEW: true when NEW differs from OLD only in bytes PyTorch does not reproduce.
same_content() {
  if command -v python3 >/dev/null; then
    python3 "$HERE/scripts/same_content.py" "$1" "$2"
  else
    cmp -s "$1" "$2"
  fi
}

# run_export DIR SET DEST_SUBDIR: copy scripts in, export, copy results to models/<name>/DEST_SUBDIR.
run_export() {
  local dir="$1" set="$2" dest_sub="$3" dest_root="$4"
  local work=/opt/neuronc-export
  rm -rf "$dir$work"
  mkdir -p "$dir$work/out"
  cp "$HERE"/scripts/*.py "$dir$work/"
  local args=(--out "$work/out" --set "$set")
  [[ -n "$ONLY" ]] && args+=(--only "$ONLY")
  args+=("${EXTRA_ARGS[@]}")
  log "exporting set '$set' in $dir: $(chroot "$dir" python3 -c 'import torch; print("torch", torch.__version__)')"
  local rc=0
  chroot "$dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0 TOKENIZERS_PARALLELISM=false \
      HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error \
      python3 "$work/export.py" "${args[@]}" || rc=$?
  local n
  for src in "$dir$work/out"/*/; do
    [[ -f "$src/meta.json" ]] || continue
    n="$(basename "$src")"
    local dest="$dest_root/$n${dest_sub:+/$dest_sub}"
    mkdir -p "$dest"
    # Replace the folder's files (not its subfolders such as torch2.6/), but keep a committed file
    # whose content is unchanged apart from bytes PyTorch does not reproduce (see README).
    local f d keep=0 wrote=0
    for f in "$dest"/*; do
      [[ -f "$f" && ! -e "$src/$(basename "$f")" ]] && rm -f "$f"
    done
    for f in "$src"/*; do
      d="$dest/$(basename "$f")"
      if [[ -d "$f" ]]; then  # more references at other shapes (shape_<k>/)
        rm -rf "$d"; cp -r "$f" "$d"; wrote=$((wrote + 1))
      elif [[ -f "$d" ]] && same_content "$d" "$f"; then
        keep=$((keep + 1))
      else
        cp "$f" "$d"; wrote=$((wrote + 1))
      fi
    done
    log "  -> ${dest#"$HERE"/}: $wrote written, $keep unchanged"
  done
  rm -rf "${dir:?}$work/out"   # the full-size zoo leaves gigabytes here
  return $rc
}

status=0
if [[ $FULL -eq 1 ]]; then
  ensure_chroot "$SID_DIR" sid python3-torch python3-torchvision python3-transformers python3-numpy libopenblas0-pthread
  mkdir -p "$HERE/full"
  run_export "$SID_DIR" full "" "$HERE/full" || status=$?
else
  if [[ $DO_SID -eq 1 ]]; then
    ensure_chroot "$SID_DIR" sid python3-torch python3-torchvision python3-transformers python3-numpy libopenblas0-pthread
    run_export "$SID_DIR" small "" "$HERE" || status=$?
  fi
  if [[ $DO_TRIXIE -eq 1 ]]; then
    # Debian 13 has torch 2.6 (legacy export zip) but no transformers; the key fixtures need neither.
    ensure_chroot "$TRIXIE_DIR" trixie python3-torch python3-numpy
    run_export "$TRIXIE_DIR" key torch2.6 "$HERE" || status=$?
  fi
fi
[[ $status -eq 0 ]] && log "done" || log "some exports FAILED (exit $status)"
exit $status
