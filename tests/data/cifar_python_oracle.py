"""The oracle half of tests/data/cifar_python_oracle.sh.

  check DIR HUNDRED   torchvision's CIFAR10/CIFAR100 read DIR's Python version (ltfit synth's
                      cifar-10-batches-py / cifar-100-python) and find the images and labels of
                      its binary version (cifar-10-batches-bin / cifar-100-binary), record for
                      record.
  resave SRC DST HOW  re-pickles every file of the Python version in SRC into DST the way a
                      user's Python would: HOW is p2-bytes (loaded with encoding='bytes', saved
                      with protocol 2: bytes become _codecs.encode), p4-latin1 (str keys,
                      protocol 4, STACK_GLOBAL, MEMOIZE, FRAME), or p5-fortran (protocol 5's
                      in-band buffers, 'data' in Fortran order, labels as an int64 array).
  evil DST            a batch whose dict holds an object that would run `touch pwned` if unpickled.
"""
import os
import pickle
import sys

import numpy as np
import torchvision


# torchvision checks the published archive's MD5s; the synthetic files have others.
torchvision.datasets.cifar.check_integrity = lambda *args, **kwargs: True


class Cifar10(torchvision.datasets.CIFAR10):
    def _check_integrity(self):
        return True


class Cifar100(torchvision.datasets.CIFAR100):
    def _check_integrity(self):
        return True


def binary_records(folder, files, label_bytes, label_at):
    images, labels = [], []
    for name in files:
        raw = np.fromfile(os.path.join(folder, name), dtype=np.uint8)
        rec = raw.reshape(-1, label_bytes + 3072)
        labels += rec[:, label_at].tolist()
        images.append(rec[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.concatenate(images), labels


def check(root, hundred):
    hundred = hundred == "1"
    for train in (True, False):
        if hundred:
            ds = Cifar100(root, train=train, download=False)
            files = ["train.bin" if train else "test.bin"]
            images, labels = binary_records(os.path.join(root, "cifar-100-binary"), files, 2, 1)
        else:
            ds = Cifar10(root, train=train, download=False)
            folder = os.path.join(root, "cifar-10-batches-bin")
            files = sorted(f for f in os.listdir(folder) if f.startswith("data_batch_")) \
                if train else ["test_batch.bin"]
            images, labels = binary_records(folder, files, 1, 0)
        if not np.array_equal(ds.data, images) or list(ds.targets) != labels:
            print(f"torchvision's {'train' if train else 'test'} split differs from the binary one")
            return 1
        print(f"{type(ds).__name__} {'train' if train else 'test'}: {len(ds)} records equal "
              f"to the binary version's; classes {ds.classes}")
    return 0


def resave(src, dst, how):
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        with open(os.path.join(src, name), "rb") as f:
            entry = pickle.load(f, encoding="bytes" if how == "p2-bytes" else "latin1")
        if how == "p5-fortran" and "data" in entry:
            entry["data"] = np.asfortranarray(entry["data"])
            for key in ("labels", "fine_labels", "coarse_labels"):
                if key in entry:
                    entry[key] = np.array(entry[key], dtype=np.int64)
        protocol = {"p2-bytes": 2, "p4-latin1": 4, "p5-fortran": 5}[how]
        with open(os.path.join(dst, name), "wb") as f:
            pickle.dump(entry, f, protocol=protocol)
    return 0


class Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def evil(dst):
    with open(dst, "wb") as f:
        pickle.dump({"data": Evil(), "labels": [0]}, f, protocol=2)
    return 0


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    sys.exit({"check": check, "resave": resave, "evil": evil}[command](*args))
