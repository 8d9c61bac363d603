#!/usr/bin/env bash
# The user documentation stands alone: README.md and docs/ (every .md file) may link to files of
# the repository and to public web pages, and to nothing else. This script fails (exit 1),
# listing each offence with its file and line, when
#   - a relative link or image ([text](path), [label]: path) names a file or folder that does not
#     exist in the repository (or lies outside it), or
#   - any text names the development notes outside the repository: ../shared, REFERENCE.md,
#     DESIGN.md, SCALEOUT.md or CONVENTIONS.md.
# Links inside fenced code blocks are not links and are not checked. CTest runs it
# (docs_links_stay_in_the_repository).
#
#   scripts/check_docs.sh [ROOT]     # ROOT: the repository (default: this script's parent)
set -euo pipefail

ROOT="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
ROOT="$(cd "$ROOT" && pwd -P)"
cd "$ROOT"

files=(README.md)
while IFS= read -r f; do files+=("$f"); done < <(find docs -name '*.md' -type f | sort)

bad=0
links=0
# Prints "<line>\t<target>" for each link of a Markdown file outside fenced code blocks: inline
# links and images, ](target) or ](target "title"), and reference definitions, [label]: target.
links_of() {
  awk '
    /^ ? ? ?(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    {
      rest = $0
      while (match(rest, /\]\([^) \t]+/)) {
        print NR "\t" substr(rest, RSTART + 2, RLENGTH - 2)
        rest = substr(rest, RSTART + RLENGTH)
      }
      if (match($0, /^ ? ? ?\[[^]]+\]:[ \t]+[^ \t]+/)) {
        definition = substr($0, RSTART, RLENGTH)
        sub(/^[^]]*\]:[ \t]+/, "", definition)
        print NR "\t" definition
      }
    }' "$1"
}

for file in "${files[@]}"; do
  dir="$(dirname "$file")"
  while IFS=$'\t' read -r line target; do
    target="${target#<}"
    target="${target%>}"
    case "$target" in
      http://* | https://* | mailto:*) continue ;;  # a web page
      \#*) continue ;;                              # an anchor in this file
    esac
    links=$((links + 1))
    path="${target%%#*}"
    path="${path%%\?*}"
    resolved="$(realpath -m "$dir/$path")"
    if [[ "$resolved" != "$ROOT" && "$resolved" != "$ROOT"/* ]]; then
      echo "$file:$line: link '$target' leaves the repository"
      bad=1
    elif [[ ! -e "$resolved" ]]; then
      echo "$file:$line: link '$target': no such file in the repository"
      bad=1
    fi
  done < <(links_of "$file")
  # Names of the development notes, in links, code or prose alike.
  if grep -nE '\.\./shared|shared/seeds|(REFERENCE|DESIGN|SCALEOUT|CONVENTIONS)\.md' "$file" |
      sed "s|^|$file:|; s|\$|  <- names a document outside the repository|"; then
    bad=1
  fi
done

if [[ $bad -ne 0 ]]; then
  echo "check_docs.sh: README.md and docs/ must stand alone (links into the repository or to" \
       "public pages only)"
  exit 1
fi
echo "check_docs.sh: ${#files[@]} files, $links links into the repository, all present"
