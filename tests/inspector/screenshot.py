"""Makes docs/inspector.png: a chat played into a fresh ``mvu serve``, its latest turn open.

    .venv/bin/python -m tests.inspector.screenshot docs/inspector.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.http.support import Server
from tests.inspector.chat import Chat, card, register
from tests.inspector.support import CHROMIUM, signed_in

INITVAR = """艾莉:
  好感度: 35
  心情: 平静
hero:
  hp: 30
  gold: 5
  pack:
    rope: 1
    bread: 2
"""
SCHEMA = """
export const Schema = z.object({
  艾莉: z.object({ 好感度: z.coerce.number().transform(v => _.clamp(v, 0, 100)), 心情: z.string() }),
  hero: z.object({ hp: z.coerce.number(), gold: z.number().min(0),
                   pack: z.record(z.string(), z.number()).prefault({}) }),
});
$(() => { registerMvuSchema(Schema); });
"""
TURNS = [
    "艾莉笑了。_.add('艾莉.好感度', 10);//送花\n_.set('艾莉.心情', '开心');//",
    "The troll swings. _.set('hero.hp', 22);//a club\n_.add('hero.gold', -100);//the toll",
    "You eat by the fire. _.add('hero.pack.bread', -1);//dinner\n_.add('hero.gold', 15);//a coin purse",
]


def main(target: Path) -> None:
    with tempfile.TemporaryDirectory() as directory:
        server = Server.start(f"sqlite:///{Path(directory) / 'mvu.sqlite3'}")
        try:
            with server.client() as client:
                register(client, "ally", card("Ally", INITVAR, SCHEMA))
                chat = Chat.open(client, "campfire", "ally")
                for turn, reply in enumerate(TURNS, start=1):
                    chat.play(turn, reply)
                Chat.open(client, "harbour", "ally").play(1, "_.set('hero.hp', 29);//")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                context = signed_in(browser, server)
                page = context.new_page()
                page.goto("/inspector/")
                page.click("nav button[data-session='campfire']")
                page.click("article.turn[data-turn='3'] summary")
                page.locator("article.turn[data-turn='3'] tr[data-path]").first.wait_for()
                page.locator("tr[data-path='/stat_data/hero/gold'] button.edit").click()
                page.locator("tr[data-path='/stat_data/hero/gold'] textarea").fill("120")
                page.screenshot(path=str(target), full_page=True)
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
