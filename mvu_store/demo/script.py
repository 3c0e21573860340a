"""The scripted chat of ``mvu demo``: five turns against the bundled card, and one manual edit.

The card (``sample_card.json``, an original chara_card_v3 written for this demo) declares its
variables with Zod: numbers are coerced, ``hero.hp`` is clamped to ``0..hero.max_hp``,
``hero.gold`` may not go below 0 and empty pack slots are dropped. Each reply below exercises
one part of the pipeline; ``shows`` says which, and the demo's tests check the outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

SESSION_ID = "ashgrove-demo"
SESSION_CREATED_AT = 1_767_225_600_000  # a fixed creation time: the instance id is the same every run
CHARACTER_ID = "ashgrove-road"
CARD_FILE = "sample_card.json"


def sample_card_bytes() -> bytes:
    """The bundled card's bytes, read from the installed package (a wheel or a checkout)."""
    return resources.files(__package__).joinpath(CARD_FILE).read_bytes()


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    reply: str
    shows: str


@dataclass(frozen=True, slots=True)
class Edit:
    """A manual edit prepared while the state was at ``stale_after_turn``'s revision."""

    description: str
    path: tuple[str, ...]
    value: int
    stale_after_turn: int
    operation_id: str


TURNS: tuple[Turn, ...] = (
    Turn(
        user="I walk into the fog with my lantern up.",
        reply=(
            "Three goblins drop from the branches. You drive them off, bruised, and one of them leaves "
            "its purse behind.\n"
            "_.set(hero.hp, 24);//goblin ambush\n"
            "_.add(hero.gold, 15);//a goblin's purse\n"
        ),
        shows="_.set and _.add",
    ),
    Turn(
        user="I cross the rope bridge.",
        reply=(
            "The bridge sways, a torch slips into the gorge, the fog thins behind you. On the far side "
            "Tamsin nods: you fought like a courier twice your age.\n"
            "<JSONPatch>\n"
            '[{"op": "replace", "path": "/quest/stage", "value": "bridge"},\n'
            ' {"op": "replace", "path": "/pack/torch", "value": "1"},\n'
            ' {"op": "replace", "path": "/weather", "value": "clear"}]\n'
            "</JSONPatch>\n"
            "_.set(hero.level, '2');//first real fight\n"
        ),
        shows="a <JSONPatch> block; the strings '1' and '2' coerced to numbers by z.coerce.number()",
    ),
    Turn(
        user="I read the rune carved into the bridge post.",
        reply=(
            "The rune flares, and something old tries to reach past the hero into the world itself.\n"
            "_.add(hero.gold, 1);//a coin in the moss\n"
            "_.set(hero.__proto__.blessed, true);//the rune's blessing\n"
        ),
        shows="a fatal update (a prototype path): nothing applied, a failed receipt",
    ),
    Turn(
        user="I drink from the spring, then haggle with the troll at the tower door.",
        reply=(
            "The spring is cold and bright and every bruise closes. The troll wants a hundred coins; "
            "you have twenty, so you talk instead.\n"
            "_.add(hero.hp, 50);//the healing spring\n"
            "_.add(hero.gold, -100);//the troll's toll\n"
            "_.set(quest.stage, 'tower');\n"
        ),
        shows="hp clamped to max_hp by the schema; a command the schema refuses (gold < 0) as a diagnostic",
    ),
    Turn(
        user="I climb the tower, share my bread with Tamsin and read the letter aloud.",
        reply=(
            "Your voice echoes up the stairwell. For the first time in nine years the bell rings, once, "
            "and the storm answers.\n"
            "_.add(pack.bread, -1);//shared with Tamsin\n"
            "_.set(quest.omen, 'the bell rang once');\n"
            "_.set(quest.stage, 'bell');\n"
            "_.set(weather, 'storm');\n"
        ),
        shows="an empty pack slot dropped by the schema's transform",
    ),
)

EDIT = Edit(
    description="Tamsin corrects her ledger: the troll took ten coins after all",
    path=("hero", "gold"),
    value=10,
    stale_after_turn=2,
    operation_id="ledger-correction-1",
)
