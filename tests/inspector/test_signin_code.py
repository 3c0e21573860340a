"""The one-time sign-in code: it works once, and only within its lifetime (a clock the test moves)."""

from __future__ import annotations

from mvu_api.inspector.signin import CODE_LIFETIME_S, SignIn


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_works_once_within_its_lifetime() -> None:
    clock = Clock()
    sign_in = SignIn("t" * 32, clock=clock)
    code = sign_in.new_code()
    clock.now += CODE_LIFETIME_S - 1
    assert sign_in.redeem("other") is None
    assert sign_in.redeem(code) is not None
    assert sign_in.redeem(code) is None  # spent


def test_a_code_past_its_lifetime_signs_nobody_in_and_is_spent() -> None:
    clock = Clock()
    sign_in = SignIn("t" * 32, clock=clock)
    code = sign_in.new_code()
    clock.now += CODE_LIFETIME_S
    assert sign_in.redeem(code) is None
    clock.now -= CODE_LIFETIME_S  # even a clock that went back does not revive it
    assert sign_in.redeem(code) is None
    assert sign_in.with_token("t" * 32) is not None  # the token form still signs in
    fresh = sign_in.new_code()
    assert sign_in.redeem(fresh) is not None
