"""Release pairs of packages from PyPI and the npm registry, and their archives in a local cache.

The only module of ``data/`` that touches the network. ``discover_pairs`` reads a package's registry
metadata (PyPI JSON API, npm registry document), checks its licence and returns its latest pairs of
consecutive stable releases, each with the archive URL and digest (PyPI sdists, npm tarballs);
``fetch`` downloads one archive into the cache (once; the digest is checked). The builders pin the
pairs they used in a JSON file, so a rebuild downloads exactly the same bytes. Reading archives is
``archives.py``'s job; this module does not look inside them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote, urljoin

from data.licenses import npm_license, pypi_license
from fastapply.errors import FastapplyError

PYPI = "https://pypi.org/pypi/{name}/json"
NPM = "https://registry.npmjs.org/{name}"
USER_AGENT = "fastapply-data-builder (https://pypi.org/project/fastapply)"
_STABLE_PYPI = re.compile(r"^\d+(\.\d+)*$")  # final releases only: no pre, post, dev or local
_STABLE_NPM = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class Release:
    version: str
    url: str
    digest: str  # "sha256:<hex>" (PyPI) or "sha512:<base64>" / "sha1:<hex>" (npm)


@dataclass(frozen=True)
class ReleasePair:
    ecosystem: str  # "pypi" or "npm"
    package: str
    license: str  # SPDX expression, permissive
    old: Release
    new: Release

    @property
    def name(self) -> str:
        """``pypi/requests``, ``npm/@scope/pkg``: unique across registries."""
        return f"{self.ecosystem}/{self.package}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, record: dict) -> "ReleasePair":
        return cls(record["ecosystem"], record["package"], record["license"],
                   Release(**record["old"]), Release(**record["new"]))


def _get(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _pairs(releases: list[Release], count: int) -> list[tuple[Release, Release]]:
    ordered = sorted(releases, key=lambda r: _version_key(r.version))
    pairs = list(zip(ordered, ordered[1:]))
    return pairs[-count:] if count else []


def pypi_pairs(name: str, count: int) -> list[ReleasePair]:
    """The last ``count`` pairs of consecutive final releases of a PyPI project that both have an sdist."""
    url = PYPI.format(name=quote(name))
    meta = json.loads(_get(url))
    license_id = pypi_license(meta["info"])
    if license_id is None:
        return []
    releases = []
    for version, files in meta.get("releases", {}).items():
        if not _STABLE_PYPI.match(version):
            continue
        sdists = [f for f in files if f.get("packagetype") == "sdist" and not f.get("yanked")
                  and f["filename"].endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))]
        if sdists:
            sdist = sdists[0]
            releases.append(Release(version, urljoin(url, sdist["url"]), "sha256:" + sdist["digests"]["sha256"]))
    return [ReleasePair("pypi", name, license_id, old, new) for old, new in _pairs(releases, count)]


def npm_pairs(name: str, count: int) -> list[ReleasePair]:
    """The last ``count`` pairs of consecutive x.y.z releases of an npm package, both permissively
    licensed and not deprecated."""
    url = NPM.format(name=name.replace("/", "%2F"))
    meta = json.loads(_get(url))
    releases, licenses = [], {}
    for version, manifest in meta.get("versions", {}).items():
        if not _STABLE_NPM.match(version) or manifest.get("deprecated"):
            continue
        dist = manifest.get("dist", {})
        integrity = dist.get("integrity", "")
        digest = integrity.replace("sha512-", "sha512:", 1) if integrity.startswith("sha512-") else \
            "sha1:" + dist.get("shasum", "")
        licenses[version] = npm_license(manifest)
        releases.append(Release(version, urljoin(url, dist["tarball"]), digest))
    out = []
    for old, new in _pairs(releases, count):
        if licenses[old.version] and licenses[new.version]:
            out.append(ReleasePair("npm", name, licenses[new.version], old, new))
    return out


def discover_pairs(ecosystem: str, name: str, count: int) -> list[ReleasePair]:
    if ecosystem == "pypi":
        return pypi_pairs(name, count)
    if ecosystem == "npm":
        return npm_pairs(name, count)
    raise FastapplyError(f"unknown ecosystem {ecosystem!r}; use pypi or npm")


def _check_digest(data: bytes, digest: str) -> bool:
    algorithm, _, expected = digest.partition(":")
    actual = hashlib.new(algorithm, data)
    if algorithm == "sha512":
        return base64.b64encode(actual.digest()).decode() == expected
    return actual.hexdigest() == expected


def fetch(release: Release, cache: Path) -> Path:
    """The archive of ``release`` in ``cache`` (downloaded once, digest checked); its local path."""
    filename = release.url.rstrip("/").rsplit("/", 1)[-1]
    key = hashlib.sha256(release.url.encode()).hexdigest()[:16]
    path = cache / f"{key}-{filename}"
    if path.exists():
        return path
    data = _get(release.url)
    if not _check_digest(data, release.digest):
        raise FastapplyError(f"digest mismatch for {release.url}")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")  # unique per writer
    tmp.write_bytes(data)
    tmp.replace(path)
    return path
