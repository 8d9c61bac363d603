"""Loads one file of the installed timm by itself, for the oracles beside this file.

timm's package __init__ imports torchvision, huggingface_hub and the like; mixup.py and
model_ema.py need only numpy and torch. A missing timm (or torch) exits 77, which CTest reports
as skipped.
"""
import importlib
import importlib.util
import os
import sys
import types


def timm_dir():
    """The installed timm's folder; exits 77 when timm or torch is not installed."""
    try:
        import torch  # noqa: F401 - every timm file needs it
        spec = importlib.util.find_spec("timm")
    except ImportError as e:  # pragma: no cover - depends on the machine
        print(f"SKIPPED: {e}")
        sys.exit(77)
    if spec is None or not spec.submodule_search_locations:
        print("SKIPPED: timm is not installed (scripts/bench_deps.sh installs it)")
        sys.exit(77)
    return list(spec.submodule_search_locations)[0]


def load_timm_package_module(package, module):
    """timm/<package>/<module>.py with its relative imports (`from .scheduler import ...`), the
    package's __init__ left out (it imports the whole subpackage and more)."""
    name = f"timm_{package}"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__path__ = [os.path.join(timm_dir(), package)]
        sys.modules[name] = stub
    return importlib.import_module(f"{name}.{module}")


def load_timm_file(relative_path, name):
    """timm/<relative_path> as module `name`; exits 77 when timm or torch is not installed."""
    path = os.path.join(timm_dir(), relative_path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except ImportError as e:  # numpy, for mixup.py
        print(f"SKIPPED: {e}")
        sys.exit(77)
    return module
