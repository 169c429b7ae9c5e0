"""The build backend (_backend/stdlib_backend.py) that lets pip install the
client without a package index: the wheel and sdist it builds, and its
reading of pyproject.toml where Python has no tomllib."""

import base64
import csv
import hashlib
import importlib.util
import io
import sys
import tarfile
import tempfile
import unittest
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("stdlib_backend", ROOT / "_backend" / "stdlib_backend.py")
backend = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(backend)


class TheWheelIsComplete(unittest.TestCase):
    def test_it_holds_the_package_py_typed_and_a_record_of_every_file(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_wheel(d)
            self.assertEqual(name, "countersvc-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(Path(d) / name) as zf:
                files = {n: zf.read(n) for n in zf.namelist()}
        sources = sorted(p.name for p in (ROOT / "src" / "countersvc").iterdir() if p.is_file())
        self.assertEqual(sorted(n.split("/", 1)[1] for n in files if n.startswith("countersvc/")), sources)
        self.assertIn("countersvc/py.typed", files)

        info = "countersvc-0.1.0.dist-info"
        record = list(csv.reader(io.StringIO(files[f"{info}/RECORD"].decode())))
        self.assertEqual(sorted(r[0] for r in record), sorted(files))
        for path, digest, size in record:
            if path == f"{info}/RECORD":
                self.assertEqual((digest, size), ("", ""))
                continue
            want = base64.urlsafe_b64encode(hashlib.sha256(files[path]).digest()).rstrip(b"=").decode()
            self.assertEqual((digest, size), (f"sha256={want}", str(len(files[path]))), path)

        wheel = Parser().parsestr(files[f"{info}/WHEEL"].decode())
        self.assertEqual((wheel["Wheel-Version"], wheel["Root-Is-Purelib"], wheel["Tag"]), ("1.0", "true", "py3-none-any"))
        meta = Parser().parsestr(files[f"{info}/METADATA"].decode())
        self.assertEqual((meta["Name"], meta["Version"], meta["Requires-Python"]), ("countersvc", "0.1.0", ">=3.9"))
        self.assertIn("Typing :: Typed", meta.get_all("Classifier"))
        self.assertIsNone(meta["Requires-Dist"])  # standard library only
        self.assertEqual(meta.get_payload(), (ROOT / "README.md").read_text(encoding="utf-8"))

    def test_the_same_source_builds_the_same_bytes(self) -> None:
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            first, second = backend.build_wheel(a), backend.build_wheel(b)
            self.assertEqual((Path(a) / first).read_bytes(), (Path(b) / second).read_bytes())

    def test_the_editable_wheel_points_at_src(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            with zipfile.ZipFile(Path(d) / backend.build_editable(d)) as zf:
                self.assertEqual(zf.read("__editable__.countersvc.pth").decode().strip(), str(ROOT / "src"))
                self.assertNotIn("countersvc/__init__.py", zf.namelist())


class TheSdistIsComplete(unittest.TestCase):
    def test_it_holds_the_sources_tests_backend_and_pkg_info(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_sdist(d)
            self.assertEqual(name, "countersvc-0.1.0.tar.gz")
            with tarfile.open(Path(d) / name) as tar:
                names = tar.getnames()
                pkg_info = tar.extractfile("countersvc-0.1.0/PKG-INFO").read().decode()
        for want in ("pyproject.toml", "README.md", "_backend/stdlib_backend.py", "src/countersvc/py.typed",
                     "src/countersvc/__init__.py", "tests/test_backend.py"):
            self.assertIn(f"countersvc-0.1.0/{want}", names)
        self.assertFalse([n for n in names if "__pycache__" in n])
        self.assertEqual(pkg_info, backend.core_metadata(backend.load_project()))


class PyprojectIsReadWithoutTomllib(unittest.TestCase):
    def test_the_fallback_reads_the_project_table_as_tomllib_does(self) -> None:
        text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        got = backend._parse_project(text)
        self.assertEqual(got["name"], "countersvc")
        self.assertIn("Typing :: Typed", got["classifiers"])
        if sys.version_info >= (3, 11):
            import tomllib
            self.assertEqual(got, tomllib.loads(text)["project"])

    def test_what_it_cannot_read_is_refused_not_misread(self) -> None:
        cases = {
            "an inline table": '[project]\nname = "x"\nurls = {Home = "https://example.com"}\n',
            "a number": "[project]\nversion = 1\n",
            "an array that never ends": '[project]\nclassifiers = [\n  "a",\n',
            "a dotted key": '[project]\nname.first = "x"\n',
        }
        for what, text in cases.items():
            with self.subTest(what), self.assertRaises(ValueError):
                backend._parse_project(text)

    def test_strings_arrays_and_comments(self) -> None:
        text = ('[build-system]\nrequires = []\n[project]\nname = "a-b"  # a comment\n'
                "description = 'say \"hi\" \\n'\n"
                'classifiers = [\n  "x",  # one\n  "y \\"z\\"",\n]\n[tool.other]\nname = "ignored"\n')
        self.assertEqual(backend._parse_project(text),
                         {"name": "a-b", "description": 'say "hi" \\n', "classifiers": ["x", 'y "z"']})

    def test_a_project_key_the_backend_does_not_know_stops_the_build(self) -> None:
        with self.assertRaisesRegex(RuntimeError, "license"):
            backend.check_known({"name": "countersvc", "version": "0.1.0", "license": "MIT"})


if __name__ == "__main__":
    unittest.main()
