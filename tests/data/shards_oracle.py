"""The oracle half of tests/data/shards_oracle.sh, with WebDataset as the reference.

  read SHARDS... CLASSES   WebDataset reads ltfit synth's shards: prints "key cls" per sample and
                           checks every JPEG decodes and every label names a class.
  write FOLDER OUT         WebDataset's ShardWriter writes the class folders FOLDER/train and
                           FOLDER/valid into OUT/wds-train-%06d.tar and OUT/wds-valid-%06d.tar
                           (16 samples a shard; keys longer than ustar's 100 bytes, so the
                           writer's pax headers carry them; every third label as JSON, the rest as
                           .cls numbers named by OUT/classes.txt), and OUT/expected.csv: the
                           name and class ltfit must give each sample.
  compare SPLIT EXPECTED   split.csv of ltfit's run equals expected.csv (names, splits, classes).
"""
import csv
import io
import json
import os
import sys

import webdataset as wds
from PIL import Image


def read(*args):
    *shards, classes_file = args
    classes = open(classes_file).read().split()
    count = 0
    for sample in wds.WebDataset(list(shards), shardshuffle=False):
        Image.open(io.BytesIO(sample["jpg"])).load()
        label = int(sample["cls"])
        assert 0 <= label < len(classes), sample["__key__"]
        print(sample["__key__"], classes[label])
        count += 1
    print(f"webdataset read {count} samples", file=sys.stderr)
    return 0


def write(folder, out):
    os.makedirs(out, exist_ok=True)
    classes = sorted(os.listdir(os.path.join(folder, "train")))
    with open(os.path.join(out, "classes.txt"), "w") as f:
        f.write("\n".join(classes) + "\n")
    rows = []
    for split in ("train", "valid"):
        pattern = os.path.join(out, f"wds-{split}-%06d.tar")
        with wds.ShardWriter(pattern, maxcount=16, verbose=0) as sink:
            n = 0
            for c, name in enumerate(classes):
                for file in sorted(os.listdir(os.path.join(folder, split, name))):
                    key = f"{split}/{name}/" + "long_key_" * 12 + os.path.splitext(file)[0]
                    sample = {"__key__": key, "jpg": open(os.path.join(folder, split, name, file), "rb").read()}
                    if n % 3 == 2:
                        sample["json"] = json.dumps({"label": name}).encode()
                    else:
                        sample["cls"] = str(c).encode()
                    sink.write(sample)
                    rows.append((f"wds-{split}-{n // 16:06d}.tar#{key}.jpg", split, name))
                    n += 1
    with open(os.path.join(out, "expected.csv"), "w", newline="") as f:
        csv.writer(f).writerows(sorted(rows))
    return 0


def compare(split_csv, expected_csv):
    got = []
    with open(split_csv) as f:
        reader = csv.DictReader(f)
        for row in reader:
            got.append((row["path"], row["split"], row["labels"]))
    expected = [tuple(r) for r in csv.reader(open(expected_csv))]
    if sorted(got) != expected:
        missing = set(expected) - set(got)
        extra = set(got) - set(expected)
        print(f"split.csv differs: {len(missing)} expected rows missing (e.g. {sorted(missing)[:2]}), "
              f"{len(extra)} unexpected (e.g. {sorted(extra)[:2]})")
        return 1
    print(f"split.csv: all {len(got)} samples named and labelled as WebDataset wrote them")
    return 0


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    sys.exit({"read": read, "write": write, "compare": compare}[command](*args))
