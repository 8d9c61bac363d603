#!/usr/bin/env python3
"""pandas as the oracle of ltfit's CSV reader (src/data/csv_table.cpp; Python, tests only).

  csv_oracle.py write DIR   # writes the tricky CSV files into DIR
  csv_oracle.py check DIR   # compares each DIR/NAME.csv as pandas reads it with DIR/NAME.ltfit.json

The files: a BOM, CRLF, a lone CR (old Mac), line breaks and doubled quotes inside quoted fields,
commas inside quotes, empty fields, unicode, blank and whitespace-only lines, no final line
break, spaces and a bare quote kept in unquoted fields, and two random tables written by Python's
csv module (QUOTE_MINIMAL with CRLF, QUOTE_ALL with LF). Each must read as pandas.read_csv(path,
dtype=str, keep_default_na=False, skip_blank_lines=True) reads it: the same column names and the
same strings, row by row. Files named refused_*.csv are malformed: pandas and ltfit must both
refuse them. The JSON is what the hidden "[csv_oracle]" test of tests/data/csv_table_test.cpp
writes. Exits 0 when every file matches, 1 when one does not, 77 without pandas.
"""
import csv
import json
import os
import random
import sys

try:
    import pandas as pd
except ImportError:
    print("SKIPPED: Python pandas is not installed")
    sys.exit(77)

BOM = "\ufeff"

FILES = {
    "bom": BOM + "path,label\nimages/a.jpg,cat\nimages/b.jpg,dog\n",
    "crlf": 'path,label\r\n"x\r\ny.jpg",cat\r\nz.jpg,"dog\r\n"\r\n',
    "lone_cr": "path,label\ra.jpg,1\rb.jpg,2\r",
    "quoted_newlines": 'id,text\n1,"line one\nline two"\n2,"say ""hi"""\n3,"""quoted"""\n4,"\n"\n',
    "embedded_commas": '"last, first",city\n"Doe, Jane","Paris, France"\n"a,b,c",","\n',
    "empty_fields": 'a,b,c\n,,\n"",x,\n1,,""\n,"",3\n',
    "unicode": "名前,ラベル\n"
    "猫.jpg,chat é\n"
    '"Ωmega, ☃",😀 emoji\n'
    "עברית,e\u0301 (combining)\n"
    "\u00a0nbsp\u00a0,\u200bzero-width\n",
    "blank_lines": "\n \n\npath,label\n\na.jpg,1\n  \n\t\r\nb.jpg,2\n\n \n",
    "no_trailing_newline": 'path,label\na.jpg,1\nb.jpg,"two\nlines"',
    "whitespace": 'a,b,c\n  x , y\t,z  \n5" disk,ab"c, "q"\n',
    "refused_unterminated": 'a,b\n1,"open\n2,3\n',
}


def random_field(rng, alphabet):
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 9)))


def write_random(path, seed, newline, quoting):
    rng = random.Random(seed)
    alphabet = ["a", "b", "Z", "1", ".", " ", "\t", ",", '"', "\n", "\r", "é", "日", "😀", "'"]
    columns = 4
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator=newline, quoting=quoting)
        writer.writerow([f"{random_field(rng, alphabet)}c{i}" for i in range(columns)])
        for _ in range(400):
            writer.writerow([random_field(rng, alphabet) for _ in range(columns)])


def write(directory):
    os.makedirs(directory, exist_ok=True)
    for name, text in FILES.items():
        with open(os.path.join(directory, name + ".csv"), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    write_random(os.path.join(directory, "random_minimal_crlf.csv"), 1, "\r\n", csv.QUOTE_MINIMAL)
    write_random(os.path.join(directory, "random_all_lf.csv"), 2, "\n", csv.QUOTE_ALL)
    print(f"wrote {len(FILES) + 2} CSV files into {directory}")


def pandas_table(path):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=True)
    return [str(c) for c in frame.columns], [[str(v) for v in row] for row in frame.values.tolist()]


def first_difference(header, rows, got):
    if got["header"] != header:
        return f"header: pandas {header!r}, ltfit {got['header']!r}"
    if len(got["rows"]) != len(rows):
        return f"{len(rows)} rows in pandas, {len(got['rows'])} in ltfit"
    for i, (want, have) in enumerate(zip(rows, got["rows"])):
        if want != have:
            return f"row {i} (line {got['lines'][i]}): pandas {want!r}, ltfit {have!r}"
    lines = got["lines"]
    if len(lines) != len(rows) or any(b <= a for a, b in zip(lines, lines[1:])):
        return f"row lines not increasing: {lines[:20]}"
    return None


def check_one(path, got):
    """None when ltfit agrees with pandas on `path`, else what differs."""
    refused = os.path.basename(path).startswith("refused_")
    try:
        header, rows = pandas_table(path)
    except Exception as e:  # noqa: BLE001 - any pandas refusal counts
        if refused and "error" in got:
            return None
        return f"pandas refused it ({e}); ltfit: {got.get('error', 'accepted')}"
    if refused:
        return "pandas accepted a file meant to be malformed"
    if "error" in got:
        return f"ltfit refused it: {got['error']}"
    return first_difference(header, rows, got)


def check(directory):
    names = sorted(n for n in os.listdir(directory) if n.endswith(".csv"))
    failures = 0
    for name in names:
        path = os.path.join(directory, name)
        json_path = path[: -len(".csv")] + ".ltfit.json"
        if not os.path.exists(json_path):
            print(f"FAIL {name}: ltfit wrote no {os.path.basename(json_path)}")
            failures += 1
            continue
        with open(json_path, encoding="utf-8") as f:
            got = json.load(f)
        problem = check_one(path, got)
        if problem:
            print(f"FAIL {name}: {problem}")
            failures += 1
        elif "error" in got:
            print(f"ok   {name}: refused by both")
        else:
            print(f"ok   {name}: {len(got['rows'])} rows x {len(got['header'])} columns")
    print(f"{len(names) - failures} of {len(names)} files read as pandas reads them")
    return 1 if failures or not names else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "write":
        write(sys.argv[2])
        sys.exit(0)
    sys.exit(check(sys.argv[2]))
