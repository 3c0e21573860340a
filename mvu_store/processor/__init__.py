"""A card's command processor: its Helper script run in a sandboxed QuickJS before every commit."""
