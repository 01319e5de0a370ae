"""Print the lowest versions pyproject.toml allows, as pip pins, one per line.

`python floor_pins.py` prints `name==X` for every `>=X` in [project].dependencies and the
`test` extra (a requirement without a lower bound is left to pip, unpinned); with `--only NAME`
just that package's pin; with `--exclude NAME` (repeatable) everything but those;
`--python` prints the requires-python floor (`3.11`); `--check` compares the versions installed
where it runs with the floors, prints both, and exits 1 unless every floor is what is installed.
The floor check (.ci/floor_check.sh) installs the floors and runs this `--check`: if the
declared floors cannot be installed together (the resolver had to go higher), or the code does
not work with them, the floors are not honest.
"""
from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;]*?)\s*(;.*)?$")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def floors(pyproject: Path = PYPROJECT) -> dict[str, str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = [*project["dependencies"], *project.get("optional-dependencies", {}).get("test", [])]
    pins: dict[str, str] = {}
    for req in requirements:
        m = REQUIREMENT.match(req)
        if not m:
            raise SystemExit(f"floor_pins: cannot read requirement {req!r}")
        name, extras, spec, marker = m.groups()
        lows = re.findall(r">=\s*([^,\s]+)", spec)
        pins[normalize(name)] = f"{name}{extras or ''}=={lows[0]}{' ' + marker if marker else ''}" if lows else \
            f"{name}{extras or ''}{' ' + marker if marker else ''}"
    return pins


def python_floor(pyproject: Path = PYPROJECT) -> str:
    spec = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["requires-python"]
    return re.search(r">=\s*(\d+\.\d+)", spec).group(1)


def release(version: str) -> tuple[int, ...]:
    """`2.4` and `2.4.0` alike; a local or pre-release suffix is ignored (`2.4.0+cu121` is 2.4.0)."""
    parts = [int(p) for p in re.match(r"\d+(?:\.\d+)*", version).group(0).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def check() -> int:
    from importlib.metadata import PackageNotFoundError, version

    bad = 0
    for name, pin in floors().items():
        if "==" not in pin:
            continue
        floor = pin.split("==", 1)[1].split(";")[0].strip()
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = "missing"
        ok = installed != "missing" and release(installed) == release(floor)
        bad += not ok
        print(f"  {name:<16} floor {floor:<8} installed {installed:<14} {'ok' if ok else 'NOT THE FLOOR'}")
    if bad:
        print(f"floor_pins: {bad} package(s) not at their declared floor: the floors cannot be installed "
              "together, or this environment was not built with the lowest versions")
    return 1 if bad else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--python", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.python:
        print(python_floor())
        return
    if args.check:
        raise SystemExit(check())
    pins = floors()
    if args.only:
        print(pins[normalize(args.only)])
        return
    skip = {normalize(n) for n in args.exclude}
    print("\n".join(pin for name, pin in pins.items() if name not in skip))


if __name__ == "__main__":
    main()
