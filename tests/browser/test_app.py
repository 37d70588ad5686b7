"""The app in a real browser: every page renders, knobs move with the keyboard, the tile plays, links and
?embed=true reproduce the view."""
import re
import time
from pathlib import Path

import pytest

from browser_kit import counted, settle, visit

pytestmark = pytest.mark.browser
PAGES = {"lab": "/", "walkthrough": "/walkthrough", "compare": "/compare", "benchmarks": "/benchmarks",
         "hardware_check": "/hardware_check"}


def _text(pg, testid: str, has: str) -> str:
    return pg.locator(f'[data-testid="{testid}"]', has_text=has).first.inner_text()


def _lab_view(pg) -> str:
    """What the Lab shows: its shape and knobs caption, and the current kernel's counters."""
    return _text(pg, "stCaptionContainer", "knobs") + "\n" + _text(pg, "stMarkdownContainer", "Current kernel")


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_renders_without_an_exception(server, page, name):
    """Each page at its default view. The machine's count of the Walkthrough's step 1 at 1024^3 (one thread a
    block looping 64x64x1024 times) takes the emulator minutes: a page whose counts have not landed in 15 s must
    say that it is counting, and the page drawn meanwhile must hold no exception."""
    landed = visit(page, server + PAGES[name], counts=15.0)
    assert page.locator("h1").count() >= 1
    page.locator(".js-plotly-plot").first.wait_for()      # at least one figure drawn
    assert page.locator('[data-testid="stSidebarNav"]').is_visible()
    if not landed:
        assert page.get_by_text("Counting at full size in the background").is_visible()


def test_a_knob_moved_with_the_keyboard_changes_the_counters_and_the_link(server, page, browser):
    visit(page, server + "/?target=cuda")
    before = _lab_view(page)
    knob = page.locator('input[type=range][aria-label="patch_m"]')
    knob.focus()
    page.keyboard.press("ArrowLeft")                     # 4 -> 2
    page.wait_for_url(re.compile(r"knobs=patch_m%3D2"))
    settle(page)
    counted(page)
    after = _lab_view(page)
    assert knob.get_attribute("aria-valuetext") == "2"
    assert after != before and "patch_m=2" in after
    other = browser.new_page()                           # the link, opened elsewhere, shows the same view
    try:
        visit(other, page.url)
        # a full-size count that finished after the first page's last poll shows there at its next poll (every
        # 2 s) and in the new page at once: the two views agree once both have it
        end = time.time() + 30
        while _lab_view(other) != _lab_view(page) and time.time() < end:
            time.sleep(0.5)
        assert _lab_view(other) == _lab_view(page) and "patch_m=2" in _lab_view(other)
    finally:
        other.close()


def test_play_advances_the_animation(server, page):
    visit(page, server + "/")
    tile = page.locator(".js-plotly-plot").first
    tile.wait_for()
    state = "el => [el._fullLayout.sliders[0].active, el._fullLayout.title.text]"
    start = tile.evaluate(state)
    tile.locator("g.updatemenu-button").first.click()    # ▶ play
    deadline = time.time() + 15
    while time.time() < deadline and tile.evaluate(state)[0] == start[0]:
        time.sleep(0.2)
    now = tile.evaluate(state)
    assert now[0] > start[0] and now[1] != start[1]


def test_embed_shows_the_same_view_without_the_chrome(server, page, browser):
    query = "op=conv1d&target=cuda&preset=naive&knobs=tile%3D128"
    visit(page, f"{server}/?{query}")
    full = _lab_view(page)
    visit(page, f"{server}/?embed=true&{query}")
    assert _lab_view(page) == full and "tile=128" in full
    for chrome in ("stSidebar", "stHeader", "stToolbar"):
        assert not page.locator(f'[data-testid="{chrome}"]').is_visible(), chrome


def test_a_walkthrough_link_reproduces_the_step(server, page, browser):
    visit(page, server + "/walkthrough")
    page.get_by_role("radio", name=re.compile(r"^3 ·")).click()
    page.wait_for_url(re.compile(r"step=3"))
    settle(page)
    counted(page)
    heading = page.locator("h3", has_text="Step 3").first.inner_text()
    embed = browser.new_page()
    try:
        visit(embed, page.url + "&embed=true")
        assert embed.locator("h3", has_text="Step 3").first.inner_text() == heading
        assert embed.get_by_role("radio", name=re.compile(r"^3 ·")).get_attribute("aria-checked") == "true"
        assert not embed.locator('[data-testid="stSidebar"]').is_visible()
    finally:
        embed.close()


def test_the_fpga_target_draws_the_accelerator_levels_and_its_simulated_time(server, page):
    visit(page, server + "/?op=conv1d&target=fpga")
    assert "on-chip buffer" in _text(page, "stMarkdownContainer", "Current kernel")
    tile = page.locator(".js-plotly-plot").first
    assert tile.locator("text", has_text="GEMM-core registers").count() >= 1      # the legend, relabelled
    page.locator("h3", has_text="Simulated time").first.wait_for()
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text().endswith("ms")
    assert "target=fpga" in page.url


def test_the_readme_screenshot_is_the_lab_as_a_visitor_sees_it(server, page):
    """docs/lab.png, the README's picture, is taken here: the Lab on CUDA at its default view."""
    page.set_viewport_size({"width": 1440, "height": 1700})
    visit(page, server + "/?target=cuda")
    page.locator(".js-plotly-plot").first.wait_for()
    shot = Path(__file__).resolve().parents[2] / "docs" / "lab.png"
    shot.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 50_000


def test_compile_and_run_shows_the_kernels_own_result_first(server, page):
    """On the CPU at the GEMM speed-test shape: the kernel's verified time appears, then the comparisons arrive
    in the background. How long the first result took is written to artifacts/ (a measured figure, not a
    timed assertion)."""
    visit(page, server + "/?target=cpu")
    page.get_by_role("button", name="Compile & run").click()
    t0 = time.time()
    page.get_by_text("rel. err").first.wait_for(timeout=300_000)
    first = time.time() - t0
    out = Path(__file__).resolve().parents[2] / "artifacts"
    out.mkdir(exist_ok=True)
    (out / "compile_and_run_seconds.txt").write_text(f"{first:.1f}\n")
    print(f"Compile & run: the kernel's own result after {first:.1f} s")
    page.get_by_text("vs baseline").first.wait_for()
