"""The PEP 517 build backend of the countersvc client, in Python's
standard library alone.

Why it exists: `pip install ./clients/python` builds the package with the
backend pyproject.toml names, in an isolated environment into which pip
first installs the backend's requirements from a package index. Machines
without one (CI, a laptop offline, every machine this project is tested
on) could not install the client with setuptools as its backend. This
backend requires nothing (`requires = []`) and lives in the source tree
(`backend-path`), so the plain command works offline with any pip and any
Python 3.9 or later.

What it builds, from the [project] table of pyproject.toml and nothing
else: a pure-Python wheel of src/countersvc (py.typed included), an
editable wheel that points at src/, and an sdist. It knows only the
[project] keys the client uses and refuses any other, so that a key added
to pyproject.toml is never left out of the metadata in silence.
"""

import base64
import csv
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path

try:
    import tomllib  # Python 3.11+
except ImportError:  # 3.9 and 3.10: _parse_project below
    tomllib = None

ROOT = Path(__file__).resolve().parent.parent  # the project: pyproject.toml, src/, tests/
PACKAGE = "countersvc"  # src/countersvc is the one package the wheel holds
SDIST_FILES = ["pyproject.toml", "README.md", "_backend", "src", "tests"]

# Every file of a wheel and an sdist gets this time, so that the same
# source builds the same bytes (SOURCE_DATE_EPOCH overrides it; zip's
# times start in 1980).
EPOCH = max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)

# The [project] keys core_metadata writes, and nothing else.
KNOWN_KEYS = {"name", "version", "description", "readme", "requires-python", "dependencies", "classifiers"}


# --- The PEP 517 and PEP 660 hooks pip calls -------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    pkg = ROOT / "src" / PACKAGE
    for path in _files(pkg):
        files[path.relative_to(ROOT / "src").as_posix()] = path.read_bytes()
    if f"{PACKAGE}/py.typed" not in files:
        raise RuntimeError(f"src/{PACKAGE}/py.typed is missing: type checkers would ignore the package's types")
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts src/ on sys.path: edits to the checkout take
    # effect without installing again.
    pth = f"{ROOT / 'src'}\n".encode()
    return _write_wheel(wheel_directory, {f"__editable__.{PACKAGE}.pth": pth})


def build_sdist(sdist_directory, config_settings=None):
    project = load_project()
    base = f"{_normal(project['name'])}-{project['version']}"
    members = [(f"{base}/PKG-INFO", core_metadata(project).encode())]
    for top in SDIST_FILES:
        for path in _files(ROOT / top):
            members.append((f"{base}/{path.relative_to(ROOT).as_posix()}", path.read_bytes()))
    name = f"{base}.tar.gz"
    with open(os.path.join(sdist_directory, name), "wb") as f, \
            gzip.GzipFile(fileobj=f, mode="wb", mtime=EPOCH) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, data in members:
            info = tarfile.TarInfo(arcname)
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            tar.addfile(info, io.BytesIO(data))
    return name


# --- Metadata --------------------------------------------------------------

def load_project():
    """The [project] table of pyproject.toml, checked for keys this
    backend does not know."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"] if tomllib else _parse_project(text)
    check_known(project)
    return project


def check_known(project):
    unknown = sorted(set(project) - KNOWN_KEYS)
    if unknown:
        raise RuntimeError(f"pyproject.toml: [project] {', '.join(unknown)} unknown to _backend/stdlib_backend.py, "
                           "which would leave them out of the package's metadata: teach core_metadata them")


def core_metadata(project):
    """METADATA (and an sdist's PKG-INFO), Core Metadata 2.1."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    body = ""
    if "readme" in project:
        readme = project["readme"]
        kind = {".md": "text/markdown", ".rst": "text/x-rst"}.get(Path(readme).suffix, "text/plain")
        lines.append(f"Description-Content-Type: {kind}; charset=UTF-8")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


# --- Wheels ----------------------------------------------------------------

def _write_wheel(wheel_directory, files):
    """Writes files (archive name: bytes) and the .dist-info that goes with
    them into a wheel in wheel_directory, and returns its name."""
    project = load_project()
    name, version = _normal(project["name"]), project["version"]
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = core_metadata(project).encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        "Generator: countersvc _backend/stdlib_backend.py\n"
        "Root-Is-Purelib: true\n"
        "Tag: py3-none-any\n"
    ).encode()
    # RECORD: every file with its sha256 (urlsafe base64, unpadded) and
    # size, RECORD itself without either.
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for arcname, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([arcname, f"sha256={digest}", len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    files[f"{dist_info}/RECORD"] = record.getvalue().encode()

    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():  # the .dist-info last, RECORD at the very end
            info = zipfile.ZipInfo(arcname, time.gmtime(EPOCH)[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return wheel


def _files(top):
    """The files under top (or top itself) in a stable order, without
    what Python and editors leave behind."""
    if top.is_file():
        return [top]
    if not top.is_dir():
        raise RuntimeError(f"{top} is missing")
    return sorted(p for p in top.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
                  and not p.name.endswith("~"))


def _normal(name):
    """A project name as wheel and sdist file names spell it (PEP 427, 625)."""
    return re.sub(r"[-_.]+", "_", name).lower()


# --- TOML, where Python has no tomllib (3.9, 3.10) ------------------------

_TOKEN = re.compile(r"""\s+|\#[^\n]*|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[\[\],]|true|false""")


class _Incomplete(Exception):
    """A value that goes on over the next line (a multi-line array)."""


def _parse_project(text):
    """The [project] table of a pyproject.toml in the TOML it uses: bare
    keys whose values are strings, booleans or arrays of them. Anything
    else raises, rather than be read wrong."""
    project, table, pending = {}, None, None
    for number, line in enumerate(text.splitlines(), 1):
        if pending is not None:
            key, value_text = pending
            value_text += "\n" + line
        else:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            header = re.fullmatch(r"\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?", stripped)
            if header:
                table = header.group(1)
                continue
            if table != "project":
                continue
            m = re.fullmatch(r"([A-Za-z0-9_-]+)\s*=(.*)", stripped)
            if not m:
                raise ValueError(f"pyproject.toml:{number}: not understood without tomllib (Python 3.11+): {line}")
            key, value_text = m.group(1), m.group(2)
        try:
            project[key] = _parse_value(value_text)
            pending = None
        except _Incomplete:
            pending = (key, value_text)
        except ValueError as e:
            raise ValueError(f"pyproject.toml:{number}: {e}, not understood without tomllib (Python 3.11+)") from None
    if pending is not None:
        raise ValueError(f"pyproject.toml: [project] {pending[0]} never ends")
    return project


def _parse_value(text):
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"unexpected {text[pos:pos + 20]!r}")
        pos = m.end()
        tok = m.group()
        if not tok.isspace() and not tok.startswith("#"):
            tokens.append(tok)
    value, rest = _value(tokens)
    if rest:
        raise ValueError(f"unexpected {rest[0]!r}")
    return value


def _value(tokens):
    """One value from the front of tokens, and the tokens after it."""
    if not tokens:
        raise _Incomplete
    tok, rest = tokens[0], tokens[1:]
    if tok == "[":
        items = []
        while True:
            if not rest:
                raise _Incomplete
            if rest[0] == "]":
                return items, rest[1:]
            item, rest = _value(rest)
            items.append(item)
            if rest and rest[0] == ",":
                rest = rest[1:]
            elif rest and rest[0] != "]":
                raise ValueError(f"unexpected {rest[0]!r} in an array")
    if tok.startswith('"'):
        return json.loads(tok), rest  # TOML's basic-string escapes are JSON's
    if tok.startswith("'"):
        return tok[1:-1], rest  # a literal string has no escapes
    if tok in ("true", "false"):
        return tok == "true", rest
    raise ValueError(f"unexpected {tok!r}")
