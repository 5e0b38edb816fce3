"""Reading a package's licence from registry metadata and deciding whether it is permissive.

Registries give licences as SPDX expressions (``MIT OR Apache-2.0``), free text (``BSD License``, or a
whole licence pasted in) or trove classifiers. ``spdx_license`` turns one such value into an SPDX
identifier or expression; ``permissive`` says whether fastapply may redistribute excerpts of the code
under it. This module does not fetch anything.

>>> spdx_license("Apache Software License")
'Apache-2.0'
>>> permissive("MIT OR Apache-2.0"), permissive("GPL-3.0-only")
(True, False)
"""

from __future__ import annotations

import re

PERMISSIVE = frozenset({
    "MIT", "MIT-0", "0BSD", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "ISC", "PSF-2.0", "Python-2.0",
    "Unlicense", "Zlib", "CC0-1.0", "BlueOak-1.0.0", "BSL-1.0", "X11",
})

# Trove classifiers that name one licence; any other "License ::" classifier is not accepted.
CLASSIFIERS = {
    "License :: OSI Approved :: MIT License": "MIT",
    "License :: OSI Approved :: MIT No Attribution License (MIT-0)": "MIT-0",
    "License :: OSI Approved :: BSD License": "BSD-3-Clause",
    "License :: OSI Approved :: Apache Software License": "Apache-2.0",
    "License :: OSI Approved :: ISC License (ISCL)": "ISC",
    "License :: OSI Approved :: Python Software Foundation License": "PSF-2.0",
    "License :: OSI Approved :: The Unlicense (Unlicense)": "Unlicense",
    "License :: OSI Approved :: zlib/libpng License": "Zlib",
    "License :: OSI Approved :: Boost Software License 1.0 (BSL-1.0)": "BSL-1.0",
    "License :: CC0 1.0 Universal (CC0 1.0) Public Domain Dedication": "CC0-1.0",
}

# Free-text spellings seen in metadata (lower case, punctuation squeezed) -> SPDX identifier.
ALIASES = {
    "mit": "MIT", "mit license": "MIT", "the mit license": "MIT", "expat": "MIT", "mit-0": "MIT-0",
    "bsd": "BSD-3-Clause", "bsd license": "BSD-3-Clause", "new bsd": "BSD-3-Clause",
    "new bsd license": "BSD-3-Clause", "modified bsd": "BSD-3-Clause", "bsd-3": "BSD-3-Clause",
    "3-clause bsd": "BSD-3-Clause", "bsd 3-clause": "BSD-3-Clause", "bsd-3-clause": "BSD-3-Clause",
    "bsd 3-clause license": "BSD-3-Clause", "simplified bsd": "BSD-2-Clause", "bsd-2-clause": "BSD-2-Clause",
    "bsd 2-clause": "BSD-2-Clause", "0bsd": "0BSD",
    "apache": "Apache-2.0", "apache 2": "Apache-2.0", "apache 2.0": "Apache-2.0", "apache-2": "Apache-2.0",
    "apache-2.0": "Apache-2.0", "apache license 2.0": "Apache-2.0", "apache license, version 2.0": "Apache-2.0",
    "apache license version 2.0": "Apache-2.0", "apache software license": "Apache-2.0",
    "apache software license 2.0": "Apache-2.0", "apache 2.0 license": "Apache-2.0", "apache2": "Apache-2.0",
    "asl 2.0": "Apache-2.0",
    "isc": "ISC", "isc license": "ISC", "psf": "PSF-2.0", "psfl": "PSF-2.0", "psf license": "PSF-2.0",
    "psf-2.0": "PSF-2.0", "python software foundation license": "PSF-2.0", "unlicense": "Unlicense",
    "the unlicense": "Unlicense", "zlib": "Zlib", "cc0": "CC0-1.0", "cc0-1.0": "CC0-1.0",
    "blueoak-1.0.0": "BlueOak-1.0.0", "bsl-1.0": "BSL-1.0",
}

_SPDX_IDS = {name.lower(): name for name in PERMISSIVE}
_TOKEN = re.compile(r"\(|\)|\bOR\b|\bAND\b|\bWITH\b|[^\s()]+")
_SPDX_ID = re.compile(r"(LicenseRef-)?[A-Za-z][A-Za-z0-9.+-]*")


def _one_license(text: str) -> str | None:
    key = " ".join(text.strip().strip(".").lower().split())
    return _SPDX_IDS.get(key) or ALIASES.get(key)


def _from_full_text(text: str) -> str | None:
    """A licence pasted in whole: recognised by its characteristic sentences."""
    lowered = " ".join(text.lower().split())
    if "general public license" in lowered or "mozilla public license" in lowered:
        return None
    first_line = _one_license(text.strip().splitlines()[0])  # "MIT License", "BSD 3-Clause License" as a title
    if first_line:
        return first_line
    if "permission is hereby granted, free of charge" in lowered:
        return "MIT"
    if "apache license" in lowered and "version 2.0" in lowered:
        return "Apache-2.0"
    if "redistribution and use in source and binary forms" in lowered:
        return "BSD-3-Clause" if "neither the name" in lowered or "endorse or promote" in lowered else "BSD-2-Clause"
    if "permission to use, copy, modify, and/or distribute this software" in lowered:
        return "ISC"
    return None


def _expression(tokens: list[str]) -> str | None:
    """Tokens of an SPDX expression with known ids in their SPDX spelling, or None when they are not one.

    An id fastapply does not list as permissive (``GPL-3.0-only``) is kept as written, so that
    ``permissive`` can judge the whole expression; words that are not an id make it None.
    """
    parts = []
    expect_id = True
    for token in tokens:
        if token in ("(", ")"):
            parts.append(token)
        elif expect_id:
            name = _one_license(token) or (token if _SPDX_ID.fullmatch(token) else None)
            if name is None:
                return None
            parts.append(name)
            expect_id = False
        elif token in ("OR", "AND", "WITH"):
            parts.append(token)
            expect_id = True
        else:
            return None
    if expect_id:
        return None
    return " ".join(parts).replace("( ", "(").replace(" )", ")")


def spdx_license(value: str | None) -> str | None:
    """One licence value from metadata as an SPDX identifier or expression, or None when not recognised.

    >>> spdx_license("MIT OR LGPL-3.0-or-later")
    'MIT OR LGPL-3.0-or-later'
    """
    if not value or not value.strip():
        return None
    value = value.strip()
    single = _one_license(value)
    if single:
        return single
    if value in CLASSIFIERS:
        return CLASSIFIERS[value]
    if len(value) > 200 or "\n" in value:  # a licence pasted in (its "EXPRESS OR IMPLIED" is no operator)
        return _from_full_text(value)
    tokens = _TOKEN.findall(value)
    if any(token in ("OR", "AND", "WITH") for token in tokens):
        return _expression(tokens)
    return None


def permissive(expression: str | None) -> bool:
    """Whether an SPDX expression lets fastapply redistribute the code: every AND term permissive, and
    in an OR at least one alternative. ``X WITH exception`` is judged by ``X`` (an exception only adds
    permissions). Parentheses are not read: the terms are taken as ANDs of ORs, which refuses an unusual
    expression such as ``(GPL-3.0-only AND LGPL-3.0-only) OR MIT`` and never accepts a wrong one."""
    if not expression:
        return False
    for conjunct in re.split(r"\bAND\b", expression.replace("(", " ").replace(")", " ")):
        if not any(re.split(r"\bWITH\b", term)[0].strip() in PERMISSIVE for term in re.split(r"\bOR\b", conjunct)):
            return False
    return True


def pypi_license(info: dict) -> str | None:
    """The permissive licence of a PyPI project from its ``info`` metadata, or None.

    ``license_expression`` (PEP 639) wins, then the ``license`` field, then classifiers. A project
    with any non-permissive licence classifier is refused, whatever else it says.
    """
    classifiers = [c for c in info.get("classifiers") or [] if c.startswith("License ::")]
    if any(c not in CLASSIFIERS and c != "License :: OSI Approved" for c in classifiers):
        return None
    for candidate in (info.get("license_expression"), info.get("license")):
        expression = spdx_license(candidate)
        if expression:
            return expression if permissive(expression) else None
    named = sorted({CLASSIFIERS[c] for c in classifiers})
    if named:
        expression = " OR ".join(named)
        return expression if permissive(expression) else None
    return None


def npm_license(manifest: dict) -> str | None:
    """The permissive licence of one npm version manifest (``license`` string or object, or the old
    ``licenses`` list), or None."""
    value = manifest.get("license")
    if isinstance(value, dict):
        value = value.get("type")
    if value is None and isinstance(manifest.get("licenses"), list):
        names = [item.get("type") if isinstance(item, dict) else item for item in manifest["licenses"]]
        value = " OR ".join(str(name) for name in names if name)
    expression = spdx_license(value) if isinstance(value, str) else None
    return expression if permissive(expression) else None
