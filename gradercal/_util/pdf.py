"""PyMuPDF without the optional add-ons it imports by itself.

PyMuPDF 2 tries ``import pymupdf.layout`` and ``import pymupdf4llm`` when it is imported.
Both pull in ONNX Runtime, which loads a model (seconds of start-up) and, on its first
import, writes a device id and a small database under the user's cache
(``~/.cache/Microsoft/DeveloperTools/.onnxruntime``). gradercal renders pages, searches
and extracts text: none of that needs either add-on, so :func:`import_pymupdf` hides
them while PyMuPDF is imported. It is the one way gradercal imports PyMuPDF (the PDF
viewer, the judge's text and page extraction, the PDF report). An explicit
``import pymupdf4llm`` or ``import pymupdf.layout`` afterwards still works.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any

__all__ = ["OPTIONAL_ADDONS", "import_pymupdf"]

#: What PyMuPDF imports on its own and gradercal never uses.
OPTIONAL_ADDONS = ("pymupdf.layout", "pymupdf4llm")

_LOCK = threading.Lock()


def import_pymupdf() -> Any:
    """``pymupdf``, imported (once) with :data:`OPTIONAL_ADDONS` hidden.

    Safe from any thread: the PDF thread preloads it while the window starts.
    """
    module = sys.modules.get("pymupdf")
    if module is not None:
        return module
    with _LOCK:
        module = sys.modules.get("pymupdf")
        if module is not None:
            return module
        hidden = [name for name in OPTIONAL_ADDONS if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # "import name" fails
        try:
            # PyMuPDF prints a recommendation to install its layout add-on: not ours to show.
            with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
                import pymupdf
        finally:
            for name in hidden:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
        return pymupdf
