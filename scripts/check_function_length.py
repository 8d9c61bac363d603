#!/usr/bin/env python3
"""Fails (exit 1) when a function body in the given folders runs past a line limit.

The composition root (src/jobs/) wires features together; a long function there is where the
next feature would be wired in by hand (docs/architecture.md). Every function defined in those
files, at namespace scope or inside a class, must span at most --max lines, from its signature's
first line to its closing brace.

The tree is formatted with .clang-format (scripts/check_format.sh), so a definition is found by
its shape: a line at some indentation that opens a brace after a parameter list, and the first
later line holding only the closing brace at that same indentation. Lambdas and class bodies do
not count as functions of their own (a lambda counts towards its enclosing function).

  scripts/check_function_length.py [--max N] [DIR...]   # default: --max 60 src/jobs
"""
import argparse
import pathlib
import re
import sys

# A definition's first line: an identifier at this indentation, not a control statement, class,
# namespace, or a statement inside a body.
CONTROL = re.compile(r"^(if|for|while|switch|do|else|try|catch|return|namespace|class|struct|"
                     r"enum|union|template|using|typedef|case|default)\b")


def definitions(lines):
    """Yields (name, first_line, last_line) for each function defined in `lines` (0-based)."""
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if (indent > 2 or not stripped or stripped.startswith(("//", "#", "}", ":", ")"))
                or CONTROL.match(stripped) or "(" not in stripped or stripped.endswith(";")):
            i += 1
            continue
        # The signature may continue over several lines up to the line that opens the body.
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith("{"):
            if lines[j].rstrip().endswith((";", "}")) or (j > i and lines[j].strip() == ""):
                break
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{"):
            i += 1
            continue
        closing = " " * indent + "}"
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != closing:
            k += 1
        if k >= len(lines):
            i += 1
            continue
        name = re.split(r"\(", stripped, maxsplit=1)[0].split()[-1] if stripped.split() else "?"
        yield name, i, k
        i = k + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=60)
    parser.add_argument("dirs", nargs="*", default=["src/jobs"])
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    long_ones, count = [], 0
    for folder in args.dirs:
        base = pathlib.Path(folder)
        if not base.is_absolute():
            base = root / base
        for path in sorted(base.rglob("*.cpp")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for name, first, last in definitions(lines):
                count += 1
                span = last - first + 1
                if span > args.max:
                    long_ones.append(f"{path.relative_to(root)}:{first + 1}: {name} is {span} "
                                     f"lines (at most {args.max})")
    if count == 0:
        print("check_function_length: found no function definitions; the pattern is broken",
              file=sys.stderr)
        return 1
    for line in long_ones:
        print(line, file=sys.stderr)
    if long_ones:
        print(f"check_function_length: {len(long_ones)} of {count} functions too long; split them "
              "(a helper per step, or a class holding the run's parts)", file=sys.stderr)
        return 1
    print(f"check_function_length: {count} functions in {', '.join(args.dirs)}, each at most "
          f"{args.max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
