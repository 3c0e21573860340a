"""Which members Zod 4 (4.6.7) gives each schema class beyond those every schema has.

Read from real Zod (the generator tests/schema/oracle/zod_api.mjs prints them). A member Zod
gives some class but not this one reads as ``undefined`` in Zod (``.shape`` of an object wrapped
in ``.prefault()``, so ``{...X.shape}`` adds nothing); a member Zod gives this class but we do
not implement is ``MVU_UNSUPPORTED`` (see types.Schema.get).
"""

from __future__ import annotations

_STRING_CHECKS = ("endsWith format includes length lowercase max maxLength min minLength nonempty normalize regex "
                  "slugify startsWith toLowerCase toUpperCase trim uppercase")
_NUMBER_CHECKS = ("finite format gt gte int isFinite isInt lt lte max maxValue min minValue multipleOf negative "
                  "nonnegative nonpositive positive safe step")

BY_KIND: dict[str, frozenset[str]] = {kind: frozenset(names.split()) for kind, names in {
    "string": _STRING_CHECKS + " base64 base64url cidrv4 cidrv6 cuid cuid2 date datetime duration e164 email emoji "
              "guid ipv4 ipv6 jwt ksuid nanoid time ulid url uuid uuidv4 uuidv6 uuidv7 xid",
    "number": _NUMBER_CHECKS,
    "object": "catchall exactPartial extend keyof loose merge omit partial passthrough pick required safeExtend shape "
              "strict strip",
    "array": "element length max min nonempty unwrap",
    "tuple": "partial rest",
    "record": "keyType valueType",
    "union": "options",
    "xor": "options",
    "discriminatedUnion": "options",
    "literal": "value values",
    "enum": "enum exclude extract options",
    "optional": "unwrap",
    "nullable": "unwrap",
    "nonoptional": "unwrap",
    "readonly": "unwrap",
    "lazy": "unwrap",
    "default": "removeDefault unwrap",
    "prefault": "unwrap",
    "catch": "removeCatch unwrap",
    "pipe": "in out",
    "stringbool": "in out",
}.items()}

ANY_KIND = frozenset(name for names in BY_KIND.values() for name in names)
"""Every class-specific member: reading one a class lacks gives ``undefined``, as in Zod."""
