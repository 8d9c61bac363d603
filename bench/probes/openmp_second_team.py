"""libgomp's throttled spin, shown with PyTorch alone (bench/results/serve-2026-12-07e.md).

A forward on a thread of its own, as `ltfit serve`'s batcher runs it: ResNet-50 (BatchNorm
folded, channels-last, batch 1, 2 threads), timed (best of 20) in a fresh process each time,
  a. after the main thread ran parallel work with 2 threads (its OpenMP team stays alive), and
  b. with the main thread kept to 1 thread (no team of its own).
libgomp spins GOMP_SPINCOUNT rounds between parallel regions only while it manages no more
threads than there are cores; a second team pushes it past that on two cores, and each of the
forward's parallel regions then pays a futex wake-up.
    python3 bench/probes/openmp_second_team.py      # about half a minute on two cores
"""
import os
import subprocess
import sys

CHILD = r"""
import sys, threading, time, torch, torchvision
sys.path.insert(0, {probes!r})
from cpu_peak_conv import folded, seconds
torch.set_num_threads({main_threads})
model = folded(torchvision.models.resnet50().eval()).to(memory_format=torch.channels_last)
x = torch.randn(1, 3, 224, 224).contiguous(memory_format=torch.channels_last)
torch.randn(1 << 22).sum()  # the main thread's own parallel work (none with 1 thread)
def run():
    torch.set_num_threads(2)
    print(f"{{1e3 * seconds(lambda: model(x), 20):.1f}}")
t = threading.Thread(target=run); t.start(); t.join()
"""


def forward_ms(main_threads):
    probes = os.path.dirname(os.path.abspath(__file__))
    code = CHILD.format(probes=probes, main_threads=main_threads)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main():
    a = forward_ms(2)
    b = forward_ms(1)
    print(f"ResNet-50 batch 1 on a second thread, main thread with a team of 2: {a:.1f} ms")
    print(f"ResNet-50 batch 1 on a second thread, main thread kept to 1 thread:  {b:.1f} ms")
    print(f"the second team costs {100 * (a / b - 1):.0f} %")


if __name__ == "__main__":
    main()
