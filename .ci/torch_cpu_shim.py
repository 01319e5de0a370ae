"""Make a PyPI (CUDA) Linux torch wheel importable on a CPU-only machine without its ~2 GB of
NVIDIA libraries, so the floor check can run the real floor torch here.

Why: PyPI's Linux x86_64 torch wheels are CUDA builds whose NVIDIA libraries (cuBLAS, cuDNN,
NCCL, ...) come as separate `nvidia-*` packages of ~2 GB; the CPU builds live only on
download.pytorch.org, which this project's machines cannot reach. torch's CPU code paths never
call those libraries, but the dynamic loader needs them to exist to load libtorch_cuda.so.

How: torch is installed with --no-deps; this script installs torch's ordinary requirements
(sympy, networkx, ...) and the three small NVIDIA runtime packages that torch calls while
answering `torch.cuda.is_available()` (cudart, nvtx, cupti: ~16 MB, so that call fails cleanly
with "no driver" instead of reaching a stub), skips triton (a GPU compiler), then builds a tiny
stub shared library for every other library that `ldd` reports missing. Each stub has the right
SONAME and symbol version and defines every symbol torch imports from it as a function that
returns 1 (an error code in every one of these C APIs). The stubs go into torch/lib, which is on
the RPATH of torch's own libraries. The skipped requirements are dropped from torch's installed
METADATA (or the next pip install of anything requiring torch would fetch them after all). At
the end torch is imported and a CPU matmul is checked.

Exit status: 0 ready; 3 cannot be done on this machine (no gcc/nm/ldd, not Linux x86_64, pip
failed): the caller skips the floor check with the printed reason; anything else is a bug here.

Usage: python torch_cpu_shim.py VENV_PYTHON
"""
from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SMALL_NVIDIA = ("nvidia-cuda-runtime-cu", "nvidia-nvtx-cu", "nvidia-cuda-cupti-cu")
SKIPPED = re.compile(r"^Requires-Dist: *(triton|nvidia-(?!cuda-runtime-cu|nvtx-cu|cuda-cupti-cu))", re.I | re.M)
NEVER_STUB = ("libcuda.so",)  # the driver: only the lazily loaded NVRTC helper needs it


def cannot(reason: str) -> None:
    print(f"torch_cpu_shim: cannot prepare torch here: {reason}")
    sys.exit(3)


def run(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def torch_info(python: str) -> dict:
    code = ("import importlib.metadata as m, json, pathlib;"
            "d = m.distribution('torch');"
            "print(json.dumps({'version': d.version, 'requires': d.requires or [],"
            " 'lib': str(pathlib.Path(d.locate_file('torch')) / 'lib'),"
            " 'metadata': str(pathlib.Path(d._path) / 'METADATA')}))")
    return json.loads(run([python, "-c", code]))


def install_requirements(python: str, requires: list[str]) -> None:
    wanted = []
    for req in requires:
        name = re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0].lower()
        if name == "triton" or (name.startswith("nvidia-") and not name.startswith(SMALL_NVIDIA)):
            continue
        wanted.append(req)  # markers stay: pip evaluates them
    if wanted:
        proc = subprocess.run([python, "-m", "pip", "install", "--quiet", *wanted], capture_output=True, text=True)
        if proc.returncode:
            cannot(f"pip could not install torch's requirements {wanted}: {proc.stderr.strip()[-800:]}")


def forget_skipped_requirements(metadata: Path) -> None:
    """Drop triton and the big nvidia-* packages from torch's installed METADATA, or the next
    `pip install` of anything that requires torch would fetch them after all."""
    text = metadata.read_text(encoding="utf-8")
    metadata.write_text("".join(line for line in text.splitlines(keepends=True) if not SKIPPED.match(line)),
                        encoding="utf-8")


def missing_libraries(lib: Path) -> list[str]:
    missing: set[str] = set()
    roots = [*lib.parent.glob("_C*.so"), *lib.glob("libtorch_global_deps.so")]
    for so in roots:
        for line in run(["ldd", str(so)]).splitlines():
            m = re.match(r"\s*(\S+) => not found", line)
            if m and not m.group(1).startswith(NEVER_STUB):
                missing.add(m.group(1))
    return sorted(missing)


def dynamic_symbols(path: Path, undefined: bool) -> list[str]:
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run(["nm", "-D", flag, str(path)], capture_output=True, text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.split()]


def build_stub(lib: Path, soname: str, imported: list[str], defined: set[str], workdir: Path) -> None:
    prefix = re.sub(r"^lib|\.so.*$", "", soname)  # libcublasLt.so.12 -> cublasLt
    names: set[str] = set()
    for sym in imported:
        name, _, version = sym.partition("@")
        version = version.lstrip("@")
        if (version == soname or (not version and name.startswith(prefix))) and name not in defined:
            names.add(name)
    c_file = workdir / f"{soname}.c"
    c_file.write_text("".join(f"int {n}(void) {{ return 1; }}\n" for n in sorted(names)) or "int _stub_empty;\n")
    script = workdir / f"{soname}.map"
    body = "".join(f"    {n};\n" for n in sorted(names))
    script.write_text(f"{soname} {{\n  global:\n{body}  local: *;\n}};\n" if names else f"{soname} {{ local: *; }};\n")
    run(["gcc", "-shared", "-fPIC", "-O0", "-w", f"-Wl,-soname,{soname}", f"-Wl,--version-script,{script}",
         "-o", str(lib / soname), str(c_file)])
    print(f"torch_cpu_shim: stub {soname} ({len(names)} symbols)")


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    python = sys.argv[1]
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        cannot(f"this shim is for Linux x86_64, not {platform.system()} {platform.machine()}")
    for tool in ("gcc", "nm", "ldd"):
        if shutil.which(tool) is None:
            cannot(f"`{tool}` is not installed (apt-get install gcc binutils)")
    info = torch_info(python)
    lib = Path(info["lib"])
    install_requirements(python, info["requires"])
    forget_skipped_requirements(Path(info["metadata"]))
    missing = missing_libraries(lib)
    if missing:
        imported = [s for so in lib.glob("*.so*") for s in dynamic_symbols(so, undefined=True)]
        imported += [s for so in lib.parent.glob("_C*.so") for s in dynamic_symbols(so, undefined=True)]
        defined = {s.partition("@")[0] for so in lib.glob("*.so*") for s in dynamic_symbols(so, undefined=False)}
        with tempfile.TemporaryDirectory() as tmp:
            for soname in missing:
                build_stub(lib, soname, imported, defined, Path(tmp))
        still = missing_libraries(lib)
        if still:
            sys.exit(f"torch_cpu_shim: still missing after stubbing: {still}")
    check = ("import torch; assert not torch.cuda.is_available();"
             "x = torch.arange(6.0).reshape(2, 3); assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]];"
             "print('torch_cpu_shim: torch', torch.__version__, 'imports and runs on the CPU')")
    proc = subprocess.run([python, "-c", check], capture_output=True, text=True)
    print(proc.stdout.strip())
    if proc.returncode:
        sys.exit(f"torch_cpu_shim: torch {info['version']} still does not import: {proc.stderr.strip()[-2000:]}")


if __name__ == "__main__":
    main()
