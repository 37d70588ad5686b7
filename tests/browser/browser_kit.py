"""Helpers the browser tests share: wait for a Streamlit run to finish, open a page and check it."""
from __future__ import annotations

import time


def settle(pg, quiet: float = 1.0, timeout: float = 90.0) -> None:
    """Wait until the script has finished (Streamlit's run state 'notRunning') and stayed so for `quiet` s."""
    end, since = time.time() + timeout, None
    while time.time() < end:
        state = pg.get_attribute('[data-testid="stApp"]', "data-test-script-state", timeout=timeout * 1000)
        if state == "notRunning":
            since = since or time.time()
            if time.time() - since >= quiet:
                return
        else:
            since = None
        time.sleep(0.1)
    raise AssertionError(f"the script was still running after {timeout:.0f} s")


def counted(pg, timeout: float = 90.0) -> bool:
    """Wait until no full-size count is still running in the background (the pages poll for it every 2 s,
    which a quiet second between two polls would not see), then for the redraw to finish; whether they landed."""
    pending = pg.get_by_text("Counting at full size in the background")
    end = time.time() + timeout
    while pending.count() and time.time() < end:
        time.sleep(0.3)
    settle(pg)
    return pending.count() == 0


def visit(pg, url: str, counts: float = 90.0) -> bool:
    """Open a page, wait for its script (and up to `counts` s for its background counts) to finish; no exception
    box is shown. Whether the counts landed."""
    pg.goto(url)
    settle(pg)
    landed = counted(pg, counts)
    boxes = pg.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()
    return landed
