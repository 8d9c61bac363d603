#!/usr/bin/env bash
# Fetches the real cats-vs-dogs images for ltfit (the 2019 study's data: fastai's dogscats, or Kaggle's dogs-vs-cats).
#
# Usage: scripts/fetch_data.sh [--source dogscats|kaggle] [--out DIR] [--url URL]
#          [--archive FILE] [--checksum SIZE:MD5|none] [--expect-train N] [--expect-valid N]
#          [--keep-archive] [--force]
#
#   dogscats (default): fastai's archive https://files.fast.ai/data/examples/dogscats.tgz
#     (--url or $LTFIT_DATA_URL for a mirror, --archive for a file already on disk), checked like
#     fastai's untar_data does (size + MD5 of the first MiB; --checksum none to skip), unpacked to
#     DIR/dogscats: train/{cats,dogs} 23,000 = 11,500 + 11,500, valid/{cats,dogs} 2,000 =
#     1,000 + 1,000 (the archive's sample/, test1/ and models/ come along; ltfit ignores them).
#     Use it with data.root: DIR/dogscats (layout folders; the class names are cats and dogs).
#   kaggle: the Kaggle CLI (`kaggle competitions download -c dogs-vs-cats`, your API token in
#     ~/.kaggle/kaggle.json), train.zip unpacked to DIR/dogs-vs-cats/train/: 25,000 flat files
#     cat.0.jpg ... dog.12499.jpg (12,500 each). Use it with data.root: DIR/dogs-vs-cats
#     (layout kaggle or auto; data.valid_count: 2000 draws the validation split).
#   DIR defaults to data/ in the repository. --expect-train / --expect-valid override the counts
#   (per split in all; for kaggle --expect-train is the whole folder), split evenly per class.
#   A dataset with its .complete marker is not fetched again (--force: fetch anyway). The
#   download goes to DIR/.<name>.part first and is resumed on the next run when interrupted.
#
# Exit codes:
#   0  the dataset is complete (fetched now or already there)
#   2  usage error (unknown option, bad value)
#   3  download failed: no network, DNS, refused connection, HTTP error, timeout
#   4  checksum mismatch: the archive is not the expected one (deleted; fetch again or --url)
#   5  unexpected image counts after unpacking (not marked complete)
#   6  disk full or not writable (space needed: ~2 GB for dogscats, ~1.7 GB for kaggle)
#   7  Kaggle CLI missing, no API token, or competition rules not accepted
#   8  the archive is corrupt or could not be unpacked
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOGSCATS_URL="https://files.fast.ai/data/examples/dogscats.tgz"
# fastai v1's datasets._checks for URLs.DOGS: (file size, MD5 of the first 2**20 bytes).
DOGSCATS_CHECKSUM="839285364:3e483c8d6ef2175e9d395a6027eb92b7"

source_name=dogscats
out="$ROOT/data"
url="${LTFIT_DATA_URL:-}"
archive=""
checksum=""
expect_train=""
expect_valid=""
keep_archive=0
force=0

E_USAGE=2 E_NETWORK=3 E_CHECKSUM=4 E_COUNTS=5 E_DISK=6 E_KAGGLE=7 E_ARCHIVE=8

usage() { sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
log() { printf '[fetch_data] %s\n' "$*" >&2; }
# fail CODE MESSAGE [WHAT TO DO...]: the message, then each hint on its own line, then exit.
fail() {
  local code="$1"
  shift
  printf '[fetch_data] error: %s\n' "$1" >&2
  shift
  local hint
  for hint in "$@"; do printf '[fetch_data]   -> %s\n' "$hint" >&2; done
  exit "$code"
}
need_value() { [[ $# -ge 2 ]] || fail "$E_USAGE" "$1 needs a value" "see --help"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --source) need_value "$@"; source_name="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --url) need_value "$@"; url="$2"; shift 2 ;;
    --archive) need_value "$@"; archive="$2"; shift 2 ;;
    --checksum) need_value "$@"; checksum="$2"; shift 2 ;;
    --expect-train) need_value "$@"; expect_train="$2"; shift 2 ;;
    --expect-valid) need_value "$@"; expect_valid="$2"; shift 2 ;;
    --keep-archive) keep_archive=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' \
                 "${BASH_SOURCE[0]}"; exit 0 ;;
    *) usage >&2; fail "$E_USAGE" "unknown argument '$1'" ;;
  esac
done

case "$source_name" in
  dogscats) name=dogscats; default_train=23000; default_valid=2000 ;;
  kaggle) name="dogs-vs-cats"; default_train=25000; default_valid=0 ;;
  *) fail "$E_USAGE" "--source: expected dogscats or kaggle, got '$source_name'" ;;
esac
expect_train="${expect_train:-$default_train}"
expect_valid="${expect_valid:-$default_valid}"
for pair in "expect-train:$expect_train" "expect-valid:$expect_valid"; do
  [[ "${pair#*:}" =~ ^[0-9]+$ && $((${pair#*:} % 2)) -eq 0 ]] ||
    fail "$E_USAGE" "--${pair%%:*}: expected an even number of images (two classes), got '${pair#*:}'"
done
if [[ -n "$checksum" && "$checksum" != none && ! "$checksum" =~ ^[0-9]+:[0-9a-f]{32}$ ]]; then
  fail "$E_USAGE" "--checksum: expected SIZE:MD5 (MD5 of the first MiB, as fastai) or none"
fi
if [[ "$source_name" == kaggle && ( -n "$url" || -n "$checksum" ) ]]; then
  fail "$E_USAGE" "--url and --checksum apply to --source dogscats only" \
       "for Kaggle's files from elsewhere: --source kaggle --archive train.zip"
fi
if [[ -n "$archive" && ! -f "$archive" ]]; then
  fail "$E_USAGE" "--archive: no file '$archive'"
fi
# The official archive is checked against fastai's checksum; a mirror or a local archive is
# assumed to be the same file unless --checksum says otherwise.
[[ -z "$checksum" ]] && checksum="$DOGSCATS_CHECKSUM"
url="${url:-$DOGSCATS_URL}"

dest="$out/$name"
marker="$dest/.complete"
if [[ -f "$marker" && "$force" == 0 ]]; then
  log "already complete: $dest ($(tr '\n' ' ' < "$marker")); nothing to do (--force to fetch again)"
  exit 0
fi
mkdir -p "$out" 2>/dev/null || fail "$E_DISK" "cannot create '$out'" "choose a writable --out DIR"
[[ -w "$out" ]] || fail "$E_DISK" "'$out' is not writable" "choose a writable --out DIR"
out="$(cd "$out" && pwd)"
dest="$out/$name"
marker="$dest/.complete"

staging=""
cleanup() { if [[ -n "$staging" ]]; then rm -rf "$staging"; fi; }
trap cleanup EXIT

free_bytes() { df -Pk "$out" | awk 'NR == 2 { print $4 * 1024 }'; }
disk_full_hints=("free space on the disk holding '$out' (df -h '$out'), or choose another --out DIR")
# After a failed write: was it the disk? Then exit 6, else return.
check_disk() {
  if (($(free_bytes) < 16 * 1024 * 1024)); then
    fail "$E_DISK" "the disk holding '$out' is full" "${disk_full_hints[@]}"
  fi
}
need_space() {
  local bytes="$1" what="$2" free
  free="$(free_bytes)"
  if ((free < bytes)); then
    fail "$E_DISK" "not enough space in '$out' for $what: $((bytes / 1000000)) MB needed, $((free / 1000000)) MB free" \
         "${disk_full_hints[@]}"
  fi
}

# Counts image files directly inside a folder.
count_images() {
  [[ -d "$1" ]] || { echo 0; return; }
  find "$1" -maxdepth 1 -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) | wc -l
}

# download FILE ERRFILE [CURL OPTIONS...]: $url to FILE with a progress bar on a terminal; curl's
# messages also go to ERRFILE. Returns curl's exit status.
download() {
  local file="$1" err="$2"
  shift 2
  local progress=(-sS)
  [[ -t 2 ]] && progress=(--progress-bar)
  local rc=0
  curl -fL --connect-timeout 20 --retry 3 "${progress[@]}" "$@" -o "$file" "$url" 2>&1 |
    tee "$err" >&2 || rc=${PIPESTATUS[0]}
  return "$rc"
}

# ---------------------------------------------------------------------------------------------
fetch_dogscats() {
  local part="$out/.$name.tgz.part" tgz
  if [[ -n "$archive" ]]; then
    tgz="$archive"
    log "using the local archive $tgz"
  else
    local size="${checksum%%:*}"
    # The archive, then its unpacked copy (about the same size) side by side.
    if [[ "$checksum" != none ]]; then
      local have=0
      [[ -f "$part" ]] && have="$(stat -c %s "$part")"
      need_space $((2 * size - have + 64 * 1024 * 1024)) "the archive and its unpacked copy"
    fi
    log "downloading $url -> $part"
    local resume=()
    [[ -s "$part" ]] && { log "resuming the partial download ($(stat -c %s "$part") bytes)"; resume=(-C -); }
    local rc=0 err
    err="$(mktemp "${TMPDIR:-/tmp}/fetch_data.curl.XXXXXX")"  # not in $out: it may be full
    download "$part" "$err" "${resume[@]}" || rc=$?
    if [[ $rc -eq 33 || $rc -eq 36 ]]; then  # the server cannot resume: start again
      log "the server does not support resuming; downloading from the start"
      rm -f "$part"
      rc=0
      download "$part" "$err" || rc=$?
    fi
    local why
    why="$(tr '\r' '\n' < "$err" 2>/dev/null | grep '^curl:' | tail -n 1 | sed 's/^curl: ([0-9]*) //' || true)"
    rm -f "$err"
    if [[ $rc -ne 0 ]]; then
      [[ $rc -eq 23 ]] && check_disk
      [[ $rc -eq 23 ]] && fail "$E_DISK" "could not write '$part' (curl exit 23)" "${disk_full_hints[@]}"
      [[ $rc -eq 22 ]] && rm -f "$part"  # an HTTP error page is not a partial archive
      fail "$E_NETWORK" "download of $url failed (curl exit $rc${why:+: $why})" \
           "check the network connection and any proxy (https_proxy); rerun to resume" \
           "use a mirror: --url URL or LTFIT_DATA_URL=URL" \
           "or download dogscats.tgz on another machine and pass --archive FILE"
    fi
    tgz="$part"
  fi

  if [[ "$checksum" != none ]]; then
    local want_size="${checksum%%:*}" want_md5="${checksum#*:}" got_size got_md5
    got_size="$(stat -c %s "$tgz")"
    got_md5="$(head -c 1048576 "$tgz" | md5sum | cut -d' ' -f1)"
    if [[ "$got_size" != "$want_size" || "$got_md5" != "$want_md5" ]]; then
      [[ "$tgz" == "$part" ]] && rm -f "$part"
      fail "$E_CHECKSUM" "checksum mismatch for $tgz: size $got_size, MD5 of the first MiB $got_md5; expected $want_size:$want_md5" \
           "the download was corrupted or the mirror serves another file: run the command again" \
           "a different but trusted archive: --checksum $got_size:$got_md5 (or none) with the --expect-* counts it has"
    fi
    log "checksum ok ($want_size bytes, first-MiB MD5 $want_md5)"
  fi

  need_space "$(stat -c %s "$tgz")" "unpacking"
  staging="$(mktemp -d "$out/.$name.unpack.XXXXXX")"
  log "unpacking into $dest ..."
  local tar_err="$staging/.tar.err"
  if ! tar -xzf "$tgz" -C "$staging" 2> "$tar_err"; then
    if grep -qi 'no space left' "$tar_err"; then
      fail "$E_DISK" "disk full while unpacking $tgz" "${disk_full_hints[@]}"
    fi
    check_disk
    [[ "$tgz" == "$part" ]] && rm -f "$part"
    fail "$E_ARCHIVE" "cannot unpack $tgz: $(tail -n 2 "$tar_err" | tr '\n' ' ')" \
         "the archive is damaged: run the command again to download it afresh"
  fi
  rm -f "$tar_err"
  # fastai's archive holds dogscats/{train,valid,sample,test1,models}; accept it without the
  # top folder too.
  local top="$staging/dogscats"
  [[ -d "$top/train" ]] || top="$staging"
  [[ -d "$top/train" && -d "$top/valid" ]] ||
    fail "$E_ARCHIVE" "$tgz holds no dogscats/train and dogscats/valid folders" \
         "is it fastai's dogscats.tgz? Check --url / --archive"

  local split cls n bad=() half_train=$((expect_train / 2)) half_valid=$((expect_valid / 2))
  for split in train valid; do
    for cls in cats dogs; do
      n="$(count_images "$top/$split/$cls")"
      local want=$half_train
      [[ "$split" == valid ]] && want=$half_valid
      log "$split/$cls: $n images (expected $want)"
      [[ "$n" -eq "$want" ]] || bad+=("$split/$cls: $n, expected $want")
    done
  done
  rm -rf "$dest"
  mv "$top" "$dest"
  if ((${#bad[@]})); then
    fail "$E_COUNTS" "unexpected image counts in $dest (${bad[*]}); not marked complete" \
         "an interrupted or different archive: rerun with --force to fetch it again" \
         "a deliberately different set: pass --expect-train N --expect-valid N"
  fi
  if [[ "$tgz" == "$part" && "$keep_archive" == 0 ]]; then
    rm -f "$part"
  elif [[ "$tgz" == "$part" ]]; then
    mv "$part" "$out/$name.tgz"
  fi
  printf 'source=dogscats url=%s train=%s valid=%s fetched=%s\n' \
    "${archive:-$url}" "$expect_train" "$expect_valid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$marker"
  log "done: $dest (train $expect_train, valid $expect_valid). Use: --set data.root=$dest"
}

# ---------------------------------------------------------------------------------------------
kaggle_token_hints=(
  "sign in at https://www.kaggle.com, Settings -> API -> 'Create New Token'; it downloads kaggle.json"
  "mkdir -p ~/.kaggle && mv ~/Downloads/kaggle.json ~/.kaggle/ && chmod 600 ~/.kaggle/kaggle.json"
  "(or export KAGGLE_USERNAME and KAGGLE_KEY)"
  "accept the competition rules once: https://www.kaggle.com/c/dogs-vs-cats/rules"
  "no Kaggle account? use the default --source dogscats (no token needed)")

unzip_to() {  # unzip_to ZIP DIR [MEMBER]: Python's zipfile, no unzip binary needed.
  python3 - "$@" <<'PY'
import sys, zipfile
path, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(path) as z:
    if len(sys.argv) > 3:
        z.extract(sys.argv[3], dest)
    else:
        z.extractall(dest)
PY
}

fetch_kaggle() {
  staging="$(mktemp -d "$out/.$name.unpack.XXXXXX")"
  local train_zip
  if [[ -n "$archive" ]]; then
    train_zip="$archive"
    log "using the local archive $train_zip"
  else
    command -v kaggle >/dev/null 2>&1 ||
      fail "$E_KAGGLE" "the Kaggle CLI is not installed" "python3 -m pip install kaggle" \
           "${kaggle_token_hints[@]}"
    local kaggle_dir="${KAGGLE_CONFIG_DIR:-$HOME/.kaggle}"
    if [[ ! -f "$kaggle_dir/kaggle.json" && ! -f "$kaggle_dir/access_token" &&
          ( -z "${KAGGLE_USERNAME:-}" || -z "${KAGGLE_KEY:-}" ) && -z "${KAGGLE_API_TOKEN:-}" ]]; then
      fail "$E_KAGGLE" "no Kaggle API token ($kaggle_dir/kaggle.json is missing)" \
           "${kaggle_token_hints[@]}"
    fi
    need_space $((1700 * 1000 * 1000)) "Kaggle's archive and its unpacked train folder"
    log "kaggle competitions download -c dogs-vs-cats -p $staging"
    local rc=0 err="$staging/.kaggle.err"
    kaggle competitions download -c dogs-vs-cats -p "$staging" 2>&1 | tee "$err" >&2 ||
      rc=${PIPESTATUS[0]}
    if [[ $rc -ne 0 ]]; then
      check_disk
      if grep -qiE '401|403|unauthori[sz]ed|forbidden|rules' "$err"; then
        fail "$E_KAGGLE" "Kaggle refused the download: $(tail -n 1 "$err")" "${kaggle_token_hints[@]}"
      fi
      fail "$E_NETWORK" "kaggle competitions download failed (exit $rc): $(tail -n 1 "$err")" \
           "check the network connection and any proxy, then run the command again" \
           "or download train.zip on another machine and pass --source kaggle --archive train.zip"
    fi
    train_zip="$staging/train.zip"
    if [[ ! -f "$train_zip" ]]; then
      local outer
      outer="$(find "$staging" -maxdepth 1 -name '*.zip' | head -n 1)"
      [[ -n "$outer" ]] || fail "$E_ARCHIVE" "the Kaggle download holds no .zip file" \
                                "run the command again"
      unzip_to "$outer" "$staging" train.zip 2>/dev/null ||
        fail "$E_ARCHIVE" "$outer holds no train.zip or is damaged" "run the command again"
      rm -f "$outer"
    fi
  fi
  log "unpacking $train_zip ..."
  local unzip_err="$staging/.unzip.err"
  if ! unzip_to "$train_zip" "$staging/tree" 2> "$unzip_err"; then
    grep -qiE 'no space left|errno 28' "$unzip_err" &&
      fail "$E_DISK" "disk full while unpacking $train_zip" "${disk_full_hints[@]}"
    check_disk
    fail "$E_ARCHIVE" "cannot unpack $train_zip: $(tail -n 1 "$unzip_err")" \
         "the archive is damaged: run the command again"
  fi
  # train.zip holds train/cat.0.jpg ...; ltfit's kaggle layout reads <root>/train/ (or <root>/).
  local files="$staging/tree/train"
  [[ -d "$files" ]] || files="$staging/tree"
  local cats dogs total half=$((expect_train / 2))
  cats="$(find "$files" -maxdepth 1 -type f -name 'cat.*.jpg' | wc -l)"
  dogs="$(find "$files" -maxdepth 1 -type f -name 'dog.*.jpg' | wc -l)"
  total="$(count_images "$files")"
  log "cat.N.jpg: $cats, dog.N.jpg: $dogs, all images: $total (expected $half + $half)"
  rm -rf "$dest"
  mkdir -p "$dest"
  mv "$files" "$dest/train"
  if [[ "$cats" -ne "$half" || "$dogs" -ne "$half" || "$total" -ne "$expect_train" ]]; then
    fail "$E_COUNTS" "unexpected image counts in $dest/train; not marked complete" \
         "rerun with --force to fetch again, or pass --expect-train N for a different set"
  fi
  printf 'source=kaggle competition=dogs-vs-cats images=%s fetched=%s\n' \
    "$expect_train" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$marker"
  log "done: $dest/train ($expect_train images). Use: --set data.root=$dest --set data.layout=kaggle"
}

if [[ "$source_name" == dogscats ]]; then
  fetch_dogscats
else
  fetch_kaggle
fi
