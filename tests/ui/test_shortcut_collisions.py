"""No key of a coordinator view is also a key of the coordinator window's menus.

Qt calls a key bound both by a window-wide action and by a view's own shortcut ambiguous and
runs neither: Ctrl+Shift+C (close a task's round / calibrate the judge) and Ctrl+Shift+R
(tick re-check / write the report) did nothing in the window for a while. The one key
shared on purpose is Ctrl+E, which revises a criterion either way (the window sends it to
the view that is showing).
"""

from __future__ import annotations

from gradercal.ui.shortcuts import window_shortcuts

SHARED_ON_PURPOSE = {"Ctrl+E", "Esc"}


def test_no_view_key_is_also_a_window_key() -> None:
    shortcuts = window_shortcuts(coordinator=True)
    window_keys: dict[str, str] = {}
    for s in shortcuts:
        if not s.local:
            for key in s.keys:
                window_keys.setdefault(key, s.id)
    clashes = [
        (s.id, key, window_keys[key])
        for s in shortcuts
        if s.local
        for key in s.keys
        if key in window_keys and key not in SHARED_ON_PURPOSE and window_keys[key] != s.id
    ]
    assert not clashes, clashes


def test_no_two_window_actions_share_a_key() -> None:
    seen: dict[str, str] = {}
    clashes = []
    for s in window_shortcuts(coordinator=True):
        if s.local:
            continue
        for key in s.keys:
            if key in seen:
                clashes.append((key, seen[key], s.id))
            seen[key] = s.id
    assert not clashes, clashes
