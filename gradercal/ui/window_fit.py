"""Where a top-level window opens: sized to the screen it opens on, remembered per screen.

A first window (nothing remembered for this screen) takes :data:`DEFAULT_SIZE`, shrunk to the
screen's available area less room for the window manager's frame, and is centred in it: on a
1280×720 laptop Next, Submit and the verdict buttons are on screen from the first second, as
window managers that never shrink an oversized window leave them. A remembered geometry is
kept per screen (its name and available size), so the size chosen on a laptop does not
become the size on the office monitor, nor the other way round; one remembered for a larger
screen is shrunk and moved into the available area.

Pure arithmetic on ``(x, y, width, height)`` tuples; ``qt_main_window`` applies it.
"""

from __future__ import annotations

#: The size of a first window on a screen with room for it (client area, pixels).
DEFAULT_SIZE = (1500, 950)
#: Room left for the window manager's frame: both side borders, title bar and bottom border.
FRAME = (16, 40)

Rect = tuple[int, int, int, int]


def first_geometry(available: Rect, default: tuple[int, int] = DEFAULT_SIZE) -> Rect:
    """The client geometry of a first window on a screen whose available area is ``available``."""
    ax, ay, aw, ah = available
    w = max(1, min(default[0], aw - FRAME[0]))
    h = max(1, min(default[1], ah - FRAME[1]))
    return (ax + (aw - w) // 2, ay + (ah - h) // 2, w, h)


def fitted_geometry(geometry: Rect, available: Rect) -> Rect:
    """``geometry`` (client area) shrunk to fit ``available`` with its frame, and moved into it."""
    x, y, w, h = geometry
    ax, ay, aw, ah = available
    w = max(1, min(w, aw - FRAME[0]))
    h = max(1, min(h, ah - FRAME[1]))
    x = min(max(x, ax + FRAME[0] // 2), ax + aw - w - FRAME[0] // 2)
    y = min(max(y, ay + FRAME[1] - FRAME[0] // 2), ay + ah - h - FRAME[0] // 2)
    return (x, y, w, h)


def screen_key(name: str, available: Rect) -> str:
    """The settings key of the geometry remembered for a screen."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "screen"
    return f"window/geometry/{safe}@{available[2]}x{available[3]}"
