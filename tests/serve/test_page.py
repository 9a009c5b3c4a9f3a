"""The page at / in headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium from PyPI): it lists the translation
models with their devices, a sentence typed and submitted comes back with
the translation `clgraph translate` gives and a heat map whose cells carry
the endpoint's attention weights."""
import os
import shutil
import subprocess

import pytest

from conftest import CLGRAPH, SRC

webdriver = pytest.importorskip("selenium.webdriver")
if not shutil.which("chromedriver") or not (shutil.which("chromium") or shutil.which("chromium-browser")):
    pytest.skip("needs Debian's chromium and chromium-driver", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

DATES = os.path.join(SRC, "models", "dates")
MARIAN = os.path.join(SRC, "models", "marian_dates")


@pytest.fixture
def browser(tmp_path):
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    d = webdriver.Chrome(options=opts, service=service)
    yield d
    d.quit()


def test_page_translates_and_draws_attention(serve, browser):
    s = serve(f"dates={DATES}", f"marian={MARIAN}", "--access-log", "none")
    sentence = "the 22nd of November 2026"
    want = subprocess.run([CLGRAPH, "translate", MARIAN, "--beam", "2"], input=sentence + "\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    browser.get(f"http://{s.url}/")
    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#model option")) == 2)
    labels = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#model option")]
    assert labels == ["dates (cpu)", "marian (cpu)"]
    Select(browser.find_element(By.ID, "model")).select_by_value("marian")
    Select(browser.find_element(By.ID, "beam")).select_by_visible_text("2")
    browser.find_element(By.ID, "sources").send_keys(sentence)
    browser.find_element(By.ID, "go").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "done"))
    assert browser.find_element(By.CSS_SELECTOR, ".result .text").text == want
    # the heat map: one cell per (output token, source token), the endpoint's weights
    status, api = s.json("POST", "/v2/models/marian/translate", {"sources": [sentence], "beam": 2, "attention": True})
    att = api["translations"][0]["attention"]
    cells = browser.find_elements(By.CSS_SELECTOR, ".result svg.heatmap rect")
    assert len(cells) == len(att) * len(att[0]) > 0
    drawn = {(int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))): float(c.get_attribute("data-weight"))
             for c in cells}
    for r, row in enumerate(att):
        for c, w in enumerate(row):
            assert drawn[(r, c)] == pytest.approx(w, abs=1e-6)
    labels = browser.find_elements(By.CSS_SELECTOR, ".result svg.heatmap text")
    assert len(labels) == len(att) + len(att[0])
    # an error shows as one line on the page
    Select(browser.find_element(By.ID, "beam")).select_by_visible_text("8")
    browser.find_element(By.ID, "sources").clear()
    browser.find_element(By.ID, "sources").send_keys("x " * 1100)  # 1100 tokens: over the limit
    browser.find_element(By.ID, "go").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results .error"))
    assert "tokens" in browser.find_element(By.CSS_SELECTOR, "#results .error").text
    assert s.stop() == 0
